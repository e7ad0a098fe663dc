"""``depthcert bounds --config setup.toml [--json] [--level 0.1]``."""
from __future__ import annotations

import argparse

from depthcert import report
from depthcert._io import dumps
from depthcert._help import BAD_INPUT, epilog
from depthcert.config import load_bounds_config
from depthcert.errors import InputError

DEFAULT_LEVEL = 0.1


def add_parser(sub) -> None:
    p = sub.add_parser("bounds", help="is the deeper model certified? Theorems 2 and 3 on measured numbers",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=True, metavar="FILE",
                   help="setup file (TOML): the measured numbers at the top level, [loss], [block] and optional "
                   "[variants] and [localised] tables; see examples/setup.toml, or the bounds_config.toml a run writes")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object instead of the tables")
    p.add_argument("--level", type=float, default=None,
                   help="largest acceptable failure probability of a certificate, in (0, 1) "
                   f"(default: the file's 'level', else {DEFAULT_LEVEL})")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="also write a figure to PNG: the bounds against the sample size M, and the failure "
                   "probability against the margin Delta_R")
    p.add_argument("--plot-terms", default=None, metavar="PNG",
                   help="also write a figure to PNG: each route's bound split into its terms")


DESCRIPTION = """\
Does inserting a residual block into a trained network provably lower its test loss?
This evaluates the certificates of the theory on the numbers of one setup (the old
model's test loss, the population margin Delta_R, the sample sizes M and K, the loss
constants, the block's norms): the population route (Theorem 2), the direct route
(Theorem 3), their union, a bound on the new model's population risk, and this
project's tighter variants when the file gives their inputs.

For each route it prints the bound on the new model's test loss, its failure
probability, and whether it certifies: the bound is below the old test loss and the
failure probability is within the level. Nothing is trained; every number comes from
the file. A key the file holds but this command does not read is reported on stderr,
with the table it belongs to."""

EPILOG = epilog(
    [("stdout", "the table of the routes and the table of the variants\n(one JSON object with --json)"),
     ("--plot PNG", "bounds vs M, failure probability vs Delta_R"),
     ("--plot-terms PNG", "each route's bound decomposed into its terms")],
    ["depthcert bounds --config examples/setup.toml --level 0.1 --plot bounds.png"],
    [(0, "the bounds were evaluated, whether or not a route certifies (the table says)"), BAD_INPUT])


def run(args: argparse.Namespace) -> int:
    from bounds.regimes import degenerate_regime
    from bounds.routes import evaluate_routes
    from bounds.variant_routes import evaluate_variants

    setup, cfg_level, inputs = load_bounds_config(args.config)
    level = args.level if args.level is not None else (cfg_level if cfg_level is not None else DEFAULT_LEVEL)
    rep = evaluate_routes(setup, level)
    regime = degenerate_regime(setup, rep.level)
    variants = evaluate_variants(setup, rep.level, inputs)
    out = {**rep.to_dict(), "degenerate_regime": regime.to_dict(), "setup": report.setup_dict(setup),
           "variants": variants.to_dict()}
    if args.plot:
        from depthcert.plots import plot_routes

        out["plot"] = _write("--plot", args.plot, lambda: plot_routes(setup, rep.level, args.plot))
    if args.plot_terms:
        from depthcert.plots import plot_bound_terms

        out["plot_terms"] = _write("--plot-terms", args.plot_terms, lambda: plot_bound_terms(out, args.plot_terms))
    text = report.routes_table(rep, regime) + "\n\n" + report.variants_table(rep, variants)
    loc = _localised(args.config, rep.level)    # [localised] (THEORY §6b, Choice): only when the file has it
    if loc is not None:
        out["localised"], more = loc
        text += "\n\n" + more
    print(dumps(out) if args.json else text)
    return 0


def _localised(path: str, level: float):
    """``(JSON dict, text)`` of the file's ``[localised]`` table, or ``None`` without one."""
    from bounds.localised_routes import evaluate_localised
    from depthcert._localised_report import localised_dict, localised_text
    from depthcert.config import localised_inputs_from_dict, read_toml

    got = localised_inputs_from_dict(read_toml(path))
    if got is None:
        return None
    setup, use = got
    rep = evaluate_localised(setup, level, validate=False)
    return localised_dict(rep, use), localised_text(rep, use)


def _write(flag: str, path: str, make) -> str:
    try:
        return str(make())
    except OSError as exc:
        raise InputError(flag, "a writable PNG path", f"{path} ({exc.strerror})") from None
