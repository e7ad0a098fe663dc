"""``validity.json`` from the stored draw records (routes, events, slack, power, timing)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from numerics.studies.validity._localised import heldout_routes, localised_comparison
from numerics.studies.validity._localised_power import localised_variants
from numerics.studies.validity._power import VARIANTS, fixed_tail_values, variant_failures
from numerics.studies.validity._localised_power import at_function_power, at_function_variants
from numerics.studies.validity._per_draw import per_draw_records, per_draw_summary
from numerics.studies.validity._routes import (ROUTE_SPECS, UNIFORM_EVENTS, base_event, conclusion_holds,
                                              event_failures, event_testability, premise_allowances, premise_slacks,
                                              spec_values)
from numerics.studies.validity._testable import NOT_TESTABLE, testability_entry
from numerics.studies.validity._stats import (certification_entry, merge_events, rate_entry, route_entry,
                                              slack_summary)

__all__ = ["summarize"]


#: ``any_with_variants`` names the paper's routes as the bounds package does.
_PAPER_NAMES = {"population_route": "population", "direct_route": "direct"}


def _present(records, specs) -> list:
    """The specs whose route every record holds (records of an older study may lack the variants)."""
    return [s for s in specs if all(s.name in r["routes"] for r in records)]


def _union_entry(records, level, key, violated_by, names) -> dict:
    anys = [r["routes"][key] for r in records]
    viol = [any(a["routes_included"].get(n, False) and violated_by[names.get(n, n)][i]
                for n in a["routes_included"] if names.get(n, n) in violated_by) for i, a in enumerate(anys)]
    events = sorted({e for a in anys for e in a["events"]})
    return route_entry([a["certified"] for a in anys], viol, [min(1.0, a["failure_probability"]) for a in anys],
                       level, events)


def _routes(records, level, specs) -> dict:
    out, violated_by = {}, {}
    for spec in specs:
        rs = [r["routes"][spec.name] for r in records]
        violated_by[spec.name] = [not conclusion_holds(spec, spec_values(spec, r)) for r in records]
        out[spec.name] = route_entry([x["certified"] for x in rs], violated_by[spec.name],
                                     [min(1.0, x["failure_probability"]) for x in rs], level,
                                     [spec.prefix + e.name for e in spec.theorem.events])
        out[spec.name]["bounds_on"] = "L_test(f_new)" if spec.kind == "test" else "R(f_new)"
        out[spec.name]["statement"] = spec.origin
    out["any"] = _union_entry(records, level, "any", violated_by, {})
    out["any"]["bounds_on"] = "L_test(f_new) < L_test(f_old) by some route (union of their events)"
    if all("any_with_variants" in r["routes"] for r in records):
        out["any_with_variants"] = _union_entry(records, level, "any_with_variants", violated_by, _PAPER_NAMES)
        out["any_with_variants"]["bounds_on"] = (
            "L_test(f_new) < L_test(f_old) by some route or variant (levels times one factor fixed before the data, "
            "the union of the distinct events paid); a violation is counted when an included route's full-level "
            "bound is violated (its bound at the scaled levels is larger: this over-counts)")
    return out


def _checked(name: str, d: Mapping) -> str:
    base = base_event(name)
    if base not in UNIFORM_EVENTS and base != "E_MC":
        return "the event itself (a deviation of one function fixed before its sample)"
    if not all(d["exact"]):
        return "at the functions the chains use (a necessary condition only)"
    if base == "E_U":
        return "supremum over the localised ball of (D - D_S)(V) (exact: trust-region, population moments)"
    if base == "E_MC":
        return ("the sure bracket of the exact rad_S (Jensen above, a fourth-moment bound below): failed unless "
                "the estimate used is >= Jensen's bound (conservative)")
    side = ("; one-sided, sup (R - R_S)" if name.startswith("population_tight") else
            "; two-sided" if "/" in name else "")
    return f"supremum over the capped class (exact{side})"


def _events(records, level, specs) -> dict:
    merged = merge_events([event_failures(r, specs) for r in records])
    tests = [event_testability(r, specs) for r in records]
    out = {}
    for name, d in merged.items():
        e = rate_entry(d["failed"], d["stated"], level)
        e["checked"] = _checked(name, d) if d["failed"] else "never claimed: no route using it applied at any draw"
        if d["failed"] and base_event(name) in UNIFORM_EVENTS and all(d["exact"]):
            e["failures_at_functions"] = int(np.sum(d["at_functions_failed"]))
        if d["failed"]:     # the truth's tolerance beside the smallest bound term the event tests (_testable)
            e["testability"] = testability_entry([t[name] for t in tests if name in t])
        out[name] = e
    return out


def _slack(records, specs) -> tuple[dict, dict]:
    """Slack of every premise over draws, and the share of its allowance used (deviation / allowance)."""
    values: dict[str, list] = {}
    used: dict[str, list] = {}
    exact = {}      # the class-level checks, each once (the paper's E_S is shared by its two routes)
    for spec in specs:
        for event, (dev, side, threshold) in spec.exact.items():
            if side != "bracket":
                what = ("sup|R - R_n|" if side == "sup" else "sup(D - D_S) over the ball" if event == "E_U"
                        else "sup(R - R_n)")
                exact.setdefault(f"{spec.prefix}{event}: {threshold} - {what} (class)", (spec, dev, side, threshold))
    for r in records:
        for spec in specs:
            vals = spec_values(spec, r)
            allow = premise_allowances(spec, vals)
            for premise, (event, slack) in premise_slacks(spec, vals).items():
                key = f"{spec.name}.{premise} [{event}]"
                values.setdefault(key, []).append(slack)
                if allow[premise] is not None:
                    used.setdefault(key, []).append(1.0 - slack / allow[premise])
        for key, (spec, dev, side, threshold) in exact.items():
            vals = spec_values(spec, r)
            if dev in (r.get("deviations") or {}) and threshold in vals:
                values.setdefault(key, []).append(vals[threshold] - r["deviations"][dev][side])
                used.setdefault(key, []).append(r["deviations"][dev][side] / vals[threshold])
    return ({k: slack_summary(v) for k, v in values.items()},
            {k: {kk: vv for kk, vv in slack_summary(v).items() if kk != "violations"} for k, v in used.items()})


def _power(records, level, variants) -> dict:
    fails = variant_failures(records, variants)
    out = {}
    for var in (v for v in variants if v.name in fails):
        e = rate_entry(fails[var.name]["failed"], fails[var.name]["stated"], level)
        out[var.name] = {**e, "event": var.event, "weakened": var.weakened, "description": var.description,
                         "flagged": e["significant"],
                         "counted": var.counted}
        if var.testable is not None:       # no power claimed where the truth cannot see the (weakened) term
            out[var.name]["testability"] = testability_entry([var.testable(r) for r in records])
        if var.event == "H_S_new":
            out[var.name].update(_class_room(records, var.name.split(":")[0]))
    return out


def _class_room(records, variant: str) -> dict:
    """How close the whole class came to the mutant's tail: ``sup_f (R - R_S)(f) / t_S_new`` over draws.

    Below 1 at a draw, no function of the capped class -- however it was chosen with ``S`` --
    exceeds the wrong tail there, so no test on these draws can flag it: the one-function tail
    is loose by ``B`` (a sure bound far above the losses' spread), not by the selection.
    """
    ratios = [r["deviations"]["E_S"]["upper"] / fixed_tail_values(variant, r)["t_S_new"]
              for r in records if "E_S" in (r.get("deviations") or {})]
    if not ratios:
        return {}
    q = slack_summary(ratios)
    return {"class_sup_over_tail": {k: q[k] for k in ("median", "q95", "max")},
            "class_sup_over_tail_is": "sup over the capped class of R - R_S, over the mutant's tail t_S_new "
                                      "(< 1: the mutant's event cannot fail at any function of the class)"}


def _comparison(records, level, specs, config) -> dict | None:
    """The headline of issue 9: the route fixed before the data (``[variants] use``) against the
    paper's best route (the better of the two on these draws, which favours the paper), and "some
    route certifies" with the variants; rates with Clopper--Pearson intervals, and their ratio."""
    use = ((config or {}).get("variants") or {}).get("use")
    names = {s.name for s in specs}
    if use is None or not {"population", "direct"} <= names:
        return None
    use = {"population_route": "population", "direct_route": "direct"}.get(use, use)
    if use not in names:
        return None
    rate = lambda n: certification_entry([r["routes"][n]["certified"] for r in records], level)  # noqa: E731
    paper = {n: rate(n) for n in ("population", "direct")}
    best = max(paper, key=lambda n: paper[n]["certification_rate"])
    chosen = rate(use)
    out = {"use": use, "use_rate": chosen, "paper_best": best, "paper_best_rate": paper[best],
           "ratio": (chosen["certified"] / paper[best]["certified"]) if paper[best]["certified"] else None,
           "note": "use is the route fixed before the data (config [variants] use); the paper's best route is the "
                   "better of its two on these same draws (chosen after seeing them, which favours the paper)"}
    if all("any_with_variants" in r["routes"] for r in records):
        out["any_with_variants_rate"] = rate("any_with_variants")
    return out


#: Per-draw quantities whose distribution over draws the summary reports.
QUANTITIES = ("delta_R_hat", "delta_R_true", "delta_R", "delta_test_R", "delta_erm_pop", "delta_erm_S", "eps_M",
              "eps_K", "L_test_old", "L_test_new", "R_old", "R_new", "B", "eta", "truth_mc_tolerance")


def _quantities(records) -> dict:
    out = {k: slack_summary([r["values"][k] for r in records]) for k in QUANTITIES if k in records[0]["values"]}
    for v in out.values():
        v.pop("violations")
    return out


def _testability_note(records) -> dict:
    """How the truth's tolerance is formed, at which level (:mod:`numerics.studies.validity._testable`)."""
    from numerics.sampled_task import TRUTH_Z

    paired = all("truth_cov" in r["values"] for r in records)
    sampled = any("truth_mc_tolerance" in r["values"] for r in records)
    return {"z": TRUTH_Z if sampled else None, "level": 1e-3 if sampled else None, "paired": paired if sampled else None,
            "not_testable": NOT_TESTABLE,
            "rule": ("an event or power check is testable only when the truth's tolerance (z se of the truth "
                     "combination in the relation, paired on one shared truth sample; two-sided level 1e-3 per "
                     "relation) is below the smallest bound term it tests at every draw; otherwise it is reported "
                     f"'{NOT_TESTABLE}' with both numbers, and its failure count claims nothing")
            if sampled else "exact truth: every check is at the float tolerance only (testable)"}


def _timing(records) -> dict:
    secs = [r["seconds"] for r in records]
    return {"draw_seconds_total": float(np.sum(secs)), "draw_seconds_median": float(np.median(secs))}


def _certification(ok, specs, level: float, not_certified: int = 0) -> dict:
    """Certification rate of every route all records hold, with ``not_certified`` extra draws counted as failures."""
    names = [s.name for s in specs] + ["any", "any_with_variants", "heldout_paired"]
    return {name: certification_entry([r["routes"][name]["certified"] for r in ok] + [False] * not_certified, level)
            for name in names if all(name in r["routes"] for r in ok)}


def holm_family(p_values: Mapping[str, float | None], level: float) -> dict:
    """Holm's step-down test over all routes and events at family-wise level ``level``.

    The exit code keeps the per-test rule (any one significant: exit 1, which can only flag
    more); this is the family-wise reading for a user who wants one error rate for the study.
    """
    ps = sorted((p, k) for k, p in p_values.items() if p is not None)
    rejected = []
    for i, (p, k) in enumerate(ps):
        if p > level / (len(ps) - i):
            break
        rejected.append(k)
    return {"method": "Holm", "level": level, "tests": len(ps), "rejected": rejected, "significant": bool(rejected)}


def summarize(records: Sequence[Mapping], level: float, *, vary: str = "data", config: Mapping | None = None,
              specs=None, variants=None) -> dict:
    """The study's summary from its records (``None`` entries: missing draws, ignored).

    Returns:
        dict with ``draws``, ``routes``, ``events``, ``slack``, ``power``, ``significant``,
        ``certification`` (rates per route), ``truth``, ``timing``, ``config`` ...
    """
    variants = [*VARIANTS, *localised_variants(), *at_function_variants()] if variants is None else variants
    present = [r for r in records if r is not None]
    ok = [r for r in present if "values" in r]
    not_run = [r for r in present if "values" not in r]
    if not ok:
        reasons = "; ".join(sorted({r["not_run"] for r in not_run})) or "no draw stored"
        raise ArithmeticError(f"no draw could be evaluated, nothing to summarise ({reasons})")
    specs = _present(ok, ROUTE_SPECS if specs is None else specs)
    routes, events = _routes(ok, level, specs), _events(ok, level, specs)
    routes.update(heldout_routes(ok, level))     # the held-out paired baseline (THEORY §6b, Choice)
    slack, slack_used = _slack(ok, specs)
    significant = any(r["significant"] for r in routes.values()) or any(e["significant"] for e in events.values())
    holm = holm_family({**{f"route {k}": r.get("p_value") for k, r in routes.items()},
                        **{f"event {k}": e.get("p_value") for k, e in events.items()}}, level)
    truth = [r.get("truth") or {} for r in ok]
    errs = [t.get("moment_error") for t in truth if t.get("moment_error") is not None]
    rows = per_draw_records(ok)
    return {
        "draws": len(ok), "draws_requested": len(records), "draws_not_run": len(not_run),
        "not_run_reasons": sorted({r["not_run"] for r in not_run}),
        "vary": vary, "test_level": level, "significant": significant, "family_wise": holm,
        "certification": _certification(ok, specs, level),
        # --vary seed: a setup that could not run (e.g. (C1) fails) certifies nothing; counted here
        "certification_counting_not_run": _certification(ok, specs, level, len(not_run)) if not_run else None,
        "comparison": _comparison(ok, level, specs, config),
        "localised_comparison": localised_comparison(ok, level, config),
        "routes": routes, "events": events, "slack": slack, "slack_used": slack_used,
        "power": (power := _power(ok, level, variants)),
        # Holm over the whole power table: a weakened variant is flagged family-wise, a true one must not be
        "power_family_wise": (power_holm := holm_family({k: p.get("p_value") for k, p in power.items()}, level)),
        # per localised route and term: looseness against the realised deviation, the largest flagged weakening
        "power_localised": at_function_power(ok, power, power_holm, level),
        "quantities": _quantities(ok),
        "truth": {"exact_class": all(t.get("exact") for t in truth), "check_population": truth[0].get("n"),
                  "moment_error_max": max(errs) if errs else None},
        "testability": _testability_note(ok),
        "per_draw": rows, "per_draw_summary": per_draw_summary(rows),
        "timing": _timing(ok), "config": dict(config) if config is not None else None,
        "data_seeds": [r["data_seed"] for r in ok][:5] + (["..."] if len(ok) > 5 else []),
        "torch_threads": _threads(ok),
    }


#: Why the thread count is reported beside the seeds.
THREADS_NOTE = ("torch's intra-op thread count of the draws (None: not recorded, older records): float reductions are "
                "split by thread, so the same seed under another thread count trains another reference network "
                "and gives another draw; studies compare draw by draw only at the same count")


def _threads(records) -> dict:
    counts = sorted({r.get("torch_threads") for r in records}, key=lambda t: (t is None, t or 0))
    return {"counts": counts, "mixed": len(counts) > 1, "note": THREADS_NOTE}
