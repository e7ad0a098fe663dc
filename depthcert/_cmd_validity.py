"""``depthcert validity --config exp.toml --draws N --out DIR [--level 0.05] [--vary data|seed]``.

Fixes everything independent of ``S`` and ``T``, draws ``N`` independent ``(S, T)`` (with
``--vary seed`` also new setups), runs the whole pipeline on each (resumable: re-running
computes only the missing draws) and reports, per route and per event of its chain, how
often it failed against its stated probability (Clopper--Pearson intervals, one-sided exact
tests at ``--level``), how often each route certified, the slack of every premise and the
power of the test. Writes ``DIR/validity.json``, ``DIR/slack.png``, ``DIR/draws/``.

Exit 0 when no true guarantee failed significantly more often than stated, 1 otherwise
(or when the setup has no first-order signal), 2 on bad input.
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog


def add_parser(sub) -> None:
    p = sub.add_parser("validity", help="do the guarantees hold as often as they state? test them over many draws",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=True, metavar="FILE",
                   help="experiment file (TOML), as for `depthcert run`, with an optional [validity] table")
    p.add_argument("--draws", required=True, type=int, metavar="N", help="number of independent draws (>= 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder; running again with it resumes")
    p.add_argument("--level", type=float, default=0.05, help="level of the statistical tests (default 0.05)")
    p.add_argument("--vary", choices=("data", "seed"), default="data",
                   help="data: new samples (S, T) for a fixed setup (default); seed: a new setup at every draw too "
                   "(teacher, reference, block features)")
    p.add_argument("--group", type=int, default=None,
                   help="draws trained together in one batch (default: the [validity] group)")
    p.add_argument("--json", action="store_true", help="print the content of validity.json as one JSON object")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")


DESCRIPTION = """\
Is a certificate right as often as it says? One run of `depthcert run` is one draw of
the training and test samples (S, T). This repeats the whole pipeline on N independent
draws, everything independent of S and T held fixed, and reports per route and per
event of its proof chain how often it failed against the probability it states
(Clopper-Pearson intervals and one-sided exact tests at --level), how often each route
certified, the slack of every premise, and the power of the test (deliberately weakened
guarantees must be flagged). Where the truth is itself a Monte-Carlo estimate, each event
and power check shows its tolerance beside the bound term it tests, and one whose
tolerance is not below that term is reported "not testable at this truth size". Per draw,
every route's bound, margin, cap and certified improvement are stored. Running again with
the same folder computes only the missing draws."""

EPILOG = epilog(
    [("stdout", "the summary tables and the verdict (validity.json with --json)"),
     ("DIR/validity.json", "the summary: rates, intervals, tests, slack, power"),
     ("DIR/slack.png", "the slack of every premise over the draws"),
     ("DIR/draws/", "one stored record per draw (what a re-run reuses)"),
     ("DIR/manifest.json", "the study's identity (config, vary, options): a folder of another study is refused")],
    ["depthcert validity --config depthcert/configs/demo.toml --draws 200 --out runs/validity"],
    [(0, "no guarantee failed significantly more often than it states"),
     (1, "some guarantee did; or the draws stopped (no first-order signal, divergence)"), BAD_INPUT])


def format_summary(s: dict) -> str:
    """Plain-text report of a ``validity.json``."""
    pct = lambda x: f"{100 * x:.1f}%"   # noqa: E731
    iv = lambda a: f"[{pct(a[0])}, {pct(a[1])}]"   # noqa: E731
    lines = [f"{s['draws']} draws (vary = {s['vary']}), test level {s['test_level']:g}; events checked: "
             + ("exact suprema over the class" if s["truth"]["exact_class"] else "at the chains' functions"), "",
             f"{'route':<16} {'certified':>10} {'interval':>18} {'violations':>11} {'stated':>9} {'interval':>18}"]
    for name, r in s["routes"].items():
        flag = "  SIGNIFICANT" if r["significant"] else ""
        t = r.get("testability")
        if t and not t["testable"]:      # the violation count claims nothing
            lines.append(f"{name:<16} {pct(r['certification_rate']):>10} {iv(r['certification_interval']):>18} "
                         f"{'-':>11} {r['stated_failure_probability']:>9.3g} {'-':>18}  {_untestable(t)}{flag}")
            continue
        lines.append(f"{name:<16} {pct(r['certification_rate']):>10} {iv(r['certification_interval']):>18} "
                     f"{r['violations']:>11d} {r['stated_failure_probability']:>9.3g} "
                     f"{iv(r['violation_interval']):>18}{flag}{_tested(t)}")
    lines += ["", f"{'event':<8} {'failures':>8} {'rate':>8} {'interval':>18} {'stated':>9}  checked"]
    for name, e in s["events"].items():
        flag = "  SIGNIFICANT" if e["significant"] else ""
        if not e["draws"]:
            lines.append(f"{name:<8} {'-':>8} {'-':>8} {'-':>18} {'-':>9}  {e['checked']}")
            continue
        t = e.get("testability")
        if t and not t["testable"]:      # the failure count claims nothing: never "0 failures"
            lines.append(f"{name:<8} {'-':>8} {'-':>8} {'-':>18} {e['stated']:>9.3g}  {_untestable(t)}{flag}")
            continue
        lines.append(f"{name:<8} {e['failures']:>8d} {pct(e['rate']):>8} {iv(e['interval']):>18} "
                     f"{e['stated']:>9.3g}  {e['checked']} ({e['draws']} draws){_tested(t)}{flag}")
    lines += _testability_lines(s)
    lines += ["", "power (weakened guarantees must be flagged, true ones not):"]
    for name, v in s["power"].items():
        t = v.get("testability")
        if t and not t["testable"]:
            lines.append(f"  {name:<28} {v['failures']:>4d}/{v['draws']} vs stated {v['stated']:.3g}: {_untestable(t)}"
                         f"{'; FLAGGED beyond it' if v['flagged'] else ''}{' (weakened)' if v['weakened'] else ''}")
            continue
        lines.append(f"  {name:<28} {v['failures']:>4d}/{v['draws']} vs stated {v['stated']:.3g}: "
                     f"{'FLAGGED' if v['flagged'] else 'not flagged'}{' (weakened)' if v['weakened'] else ''}{_tested(t)}")
    lines += _power_localised_lines(s.get("power_localised"))
    lines += _per_draw_lines(s.get("per_draw_summary"))
    lines += ["", "slack (median [5%, 95%]) of each premise:"]
    for name, v in s["slack"].items():
        lines.append(f"  {name:<52} {v['median']:.3g} [{v['q05']:.3g}, {v['q95']:.3g}]")
    lines += _localised_lines(s.get("localised_comparison"), pct, iv)
    verdict = ("some guarantee failed significantly more often than stated" if s["significant"]
               else "no guarantee failed significantly more often than stated")
    return "\n".join(lines + ["", verdict])


def _ratio(t) -> str:
    r = t.get("tolerance_over_term_max")
    return "" if r is None else f", tolerance/term at most {r:.2g}"


def _tested(t) -> str:
    """Tolerance (largest over draws) and term (smallest over draws) of a testable check: testable means
    tolerance < term at every draw, so the two extremes (of different draws) may be in either order."""
    if not t or t.get("smallest_term") is None:
        return ""
    return f"; tolerance up to {t['tolerance_max']:.3g}, term from {t['smallest_term']:.3g}{_ratio(t)}"


def _untestable(t) -> str:
    """The line of an event or power check whose tolerance is not below the bound term it tests (issue 34)."""
    term = "none" if t.get("smallest_term") is None else f"{t['smallest_term']:.3g}"
    return (f"{t['verdict']}: tolerance up to {t['tolerance_max']:.3g}, term from {term}{_ratio(t)} "
            f"(testable at {t['testable_draws']} of {t['draws']} draws)")


def _testability_lines(s) -> list[str]:
    t = s.get("testability") or {}
    if not t.get("z"):
        return []
    return ["", f"tolerance of a check on the truth: z se, z = {t['z']:.3g} (two-sided level {t['level']:g} per relation), "
            f"{'paired differences on one shared truth sample' if t['paired'] else 'unpaired risk estimates (older records)'}"
            f"; truth size {s['truth']['check_population']}"]


def _power_localised_lines(p) -> list[str]:
    """Per localised route and term: the largest flagged weakening, the looseness against the realised deviation,
    and the truth size that would flag each weakening (``summary.power_localised``)."""
    if not p or not p.get("routes"):
        return []
    f = lambda d: "-" if d is None else f"{d['median']:.3g} [{d['q25']:.3g}, {d['q75']:.3g}] ({d['min']:.3g}, {d['max']:.3g})"  # noqa
    g = lambda x: "none" if x is None else f"{x:.2g}"  # noqa: E731
    lines = ["", "localised power (per route and term; looseness = realised deviation / term over draws, median "
             "[quartiles] (min, max); Holm over the power table):"]
    for route, terms in p["routes"].items():
        for term, e in terms.items():
            x = lambda c: "none" if c is None else f"x {c:g}"  # noqa: E731
            fails = ", ".join(f"x {c} {k}" for c, k in e["failures"].items())
            need = "-" if e["failures_needed"] is None else str(e["failures_needed"])
            sizes = ", ".join(f"x {c} {g(n)}" for c, n in e["truth_size_to_flag"].items())
            up = e["looseness_upper"]
            lines += [f"  {route} {term} ({e['event']}): largest flagged factor {x(e['largest_flagged_factor'])} (Holm), "
                      f"{x(e.get('largest_flagged_factor_per_test'))} (per test); failures of {e['draws']}: "
                      f"{fails} ({need} needed for Holm over {e['holm_tests']} tests)",
                      f"    looseness {f(e['looseness'])}; (deviation + tolerance) / term at most "
                      f"{'-' if up is None else format(up['max'], '.3g')}; |deviation| > tolerance at "
                      f"{e['resolved_draws']} of {e['draws']} draws, deviation > tolerance at "
                      f"{e['deviation_beyond_tolerance_draws']}",
                      f"    truth size to flag (now {g(e['truth_n'])}): {sizes}; {e['verdict']}"]
    return lines


def _per_draw_lines(p) -> list[str]:
    """The distribution over draws of each route's certified improvement and margin (issue 34, item 2)."""
    if not p:
        return []
    f = lambda d: "-" if d is None else f"{d['median']:.3g} [{d['q25']:.3g}, {d['q75']:.3g}] ({d['min']:.3g}, {d['max']:.3g})"  # noqa
    lines = ["", "per draw (median [quartiles] (min, max)); margin = " + p["margin_is"]]
    for name, r in p["routes"].items():
        lines.append(f"  {name}: certified {r['certified']}; improvement {f(r['improvement'])}; "
                     f"/ trained gain {f(r['improvement_over_trained_gain'])}; margin {f(r['margin'])}; cap {f(r['cap'])}")
    return lines


def _localised_lines(c, pct, iv) -> list[str]:
    """The localised route fixed before the data ([localised] use) beside the paper's and the held-out test."""
    if not c:
        return []
    rate = lambda e: f"{e['certified']} certified, {pct(e['certification_rate'])} {iv(e['certification_interval'])}"  # noqa
    return ["", f"localised route fixed before the data (THEORY §6b, Choice; use = {c['use']}): {rate(c['use_rate'])}",
            *(f"  paper's {n} route: {rate(e)}" for n, e in c["paper"].items()),
            f"  held-out paired test on T (Choice, a baseline): {rate(c['heldout_paired_rate'])}", *_gap_lines(c.get("gap"))]


def _gap_lines(g) -> list[str]:
    """Issue 29: the median M_needed of the route fixed before the data, the scan's n_needed_improvable, the ratio."""
    if not g:
        return []
    f = lambda e: "—" if e["median"] is None else f"{e['median']:.4g}"  # noqa: E731
    return [f"  gap: median M_needed {f(g['M_needed'])} ({g['M_needed']['none']} of {g['M_needed']['draws']} "
            f"draws: none up to 1e15), median n_needed_improvable {f(g['n_needed_improvable'])}, "
            f"median ratio {f(g['ratio'])}"]


def run(args: argparse.Namespace) -> int:
    import sys

    from depthcert._io import dumps
    from depthcert.config import read_toml

    config = read_toml(args.config)     # a bad file is refused before the heavy imports
    from numerics.studies.validity import run_validity
    from numerics.training import DivergenceError

    try:
        s = run_validity(config, args.draws, args.out, level=args.level, vary=args.vary, group=args.group,
                         progress=not args.no_progress)
    except (ArithmeticError, DivergenceError) as exc:
        print(f"depthcert validity: stopped: {exc}", file=sys.stderr)
        return 1
    print(dumps(s) if args.json else format_summary(s))
    if not args.json:
        print(f"wrote {args.out}/validity.json, {args.out}/slack.png")
    return 1 if s["significant"] else 0
