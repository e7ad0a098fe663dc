"""``depthcert demo [--out DIR] [--estimate N]``: the default synthetic experiment (same files as ``run``).

The configuration is :data:`numerics.studies.run.DEFAULT_DEMO_CONFIG` (also shipped as
``depthcert/configs/demo.toml``). Besides the draw's verdicts it prints how often each
route certifies *for this setup*: from the stored validity study shipped with the package
(``depthcert/configs/demo_validity.json``, with the command that produced it), or, with
``--estimate N``, from a quick validity study of ``N`` draws run now (saying which).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from depthcert._help import BAD_INPUT, epilog

STORED = Path(__file__).resolve().parent / "configs" / "demo_validity.json"


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="the default experiment, end to end, with its certificate (~12 s)",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--out", default="depthcert_demo", metavar="DIR",
                   help="output folder (default: ./depthcert_demo)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table")
    p.add_argument("--estimate", type=int, default=None, metavar="N",
                   help="also estimate how often this setup certifies, from N >= 1 fresh draws run now "
                   "(about 10 s each)")


DESCRIPTION = """\
The default experiment of `depthcert run` on a synthetic regression teacher (the
config is depthcert/configs/demo.toml; about 12 s on 2 idle cores): train a weak reference
network, insert a readout block at the top, train it, measure, and certify the
improvement of the test loss by both routes.

One draw of the data is one answer; so the demo also prints how often each route
certifies for this setup over many draws: from the validity study shipped with the
package (with the command that produced it), or with --estimate N from N draws run
now."""

EPILOG = epilog(
    [("stdout", "the table of the draw and the certification rates (JSON with --json)"),
     ("DIR/result.json", "every number, the config, the seeds, versions"),
     ("DIR/bounds_config.toml", "the same numbers as a setup file for `depthcert bounds`"),
     ("DIR/bound_vs_observed.png", "each route's bound against the observed test loss"),
     ("DIR/bound_terms.png", "each bound decomposed into its terms"),
     ("DIR/localised_terms.png", "each localised route's bound decomposed into its costs (THEORY §6b)"),
     ("DIR/validity/", "with --estimate: the quick validity study, as `depthcert validity` writes it\n"
                       "(validity.json, slack.png, manifest.json, draws/)")],
    ["depthcert demo --out depthcert_demo"],
    [(0, "the experiment ran, whether or not a route certifies (the table says)"),
     (1, "the experiment could not be carried out (no first-order signal, divergence)"), BAD_INPUT])


def setup_rates(config: dict, estimate: int | None, out: str, progress: bool = False) -> dict:
    """The certification rates of ``config``'s setup: a quick study, or the stored one (if it matches)."""
    from plumbing.store import load_json

    use = config.get("variants", {}).get("use")
    if estimate is not None:
        from numerics.studies.validity import run_validity

        s = run_validity(config, estimate, Path(out) / "validity", progress=progress)   # a bar on stderr
        return {"source": f"quick estimate from {estimate} draws run now ({out}/validity/validity.json)",
                "draws": s["draws"], "certification": s["certification"], "test_level": s["test_level"], "use": use}
    if not STORED.is_file():
        return {"source": "none: no stored validity study ships with this package"}
    s = load_json(STORED)
    if s.get("config") != config:
        return {"source": f"none: {STORED.name} was produced for another config; run `depthcert validity`"}
    return {"source": f"stored validity study ({STORED.name}): {s.get('command', '?')}", "draws": s["draws"],
            "certification": s["certification"], "test_level": s["test_level"],
            "wall_time": s.get("wall_time"), "machine": s.get("machine"), "held_out": s.get("held_out_setups"),
            "use": use}


def format_rates(r: dict) -> str:
    if "certification" not in r:
        return f"certification rate of this setup: {r['source']}"
    lines = [f"certification rate of this setup over {r['draws']} draws of (S, T) "
             f"(Clopper-Pearson {100 * (1 - r['test_level']):g}% intervals) -- {r['source']}:"]
    use = (r.get("use") or None)
    lines += _rate_lines(r["certification"], use)
    h = r.get("held_out")
    if h:
        lines += [f"what to expect on a setup drawn like this one (new seed: teacher, reference, block), "
                  f"over {h['draws']} held-out setups -- {h['command']}:"] + _rate_lines(h["certification"], use)
    return "\n".join(lines)


#: The rows the demo prints: Paper A's routes, "some route", and this project's choices (THEORY §6).
_SHOWN = ("population", "direct", "any", "population_risk", "any_with_variants")


def _rate_lines(certification: dict, use: str | None = None) -> list[str]:
    out = []
    for name in [n for n in _SHOWN if n in certification] + ([use] if use in certification else []):
        c = certification[name]
        lo, hi = c["certification_interval"]
        what = " (Choice, fixed before the data)" if name == use else (" (Choice)" if name == "any_with_variants" else "")
        out.append(f"  {name:<28} {100 * c['certification_rate']:5.1f}%  [{100 * lo:.1f}%, {100 * hi:.1f}%]{what}")
    return out


#: A lower bound of the time of one draw of a validity study (**Choice**: the help says about 10 s; 1 s
#: refuses only counts that could not finish within a week on any machine).
SECONDS_PER_DRAW = 1.0


def run(args: argparse.Namespace) -> int:
    from depthcert.errors import InputError
    from plumbing.machine import check_work

    if args.estimate is not None and (args.estimate < 1):
        raise InputError("--estimate", "an integer >= 1", args.estimate)
    if args.estimate is not None:   # before any import or work: a draw takes about 10 s, never under 1 s
        check_work("--estimate", args.estimate, SECONDS_PER_DRAW, "draw")
    from plumbing.sizes import MAX_DRAWS

    if args.estimate is not None and args.estimate > MAX_DRAWS:   # validity's own maximum, before the heavy imports
        raise InputError("--estimate", f"an integer in [1, {MAX_DRAWS}] (the stated maximum of a validity study)",
                         args.estimate)
    from depthcert._cmd_run import execute
    from numerics.studies.run import DEFAULT_DEMO_CONFIG
    return execute(DEFAULT_DEMO_CONFIG, args.out, args.json,
                   after=lambda: setup_rates(DEFAULT_DEMO_CONFIG, args.estimate, args.out, progress=not args.json),
                   show=format_rates, progress="depthcert demo")
