"""``depthcert bounds --config setup.toml [--json] [--level 0.1]``."""
from __future__ import annotations

import argparse

from depthcert import report
from depthcert._io import dumps
from depthcert.config import load_bounds_config
from depthcert.errors import InputError

DEFAULT_LEVEL = 0.1


def add_parser(sub) -> None:
    p = sub.add_parser("bounds", help="evaluate Theorems 2 and 3 on a setup file",
                       description="Evaluate the population (Theorem 2) and direct (Theorem 3) routes.")
    p.add_argument("--config", required=True, help="setup TOML file")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object")
    p.add_argument("--level", type=float, default=None,
                   help=f"largest acceptable failure probability (default: config 'level' or {DEFAULT_LEVEL})")
    p.add_argument("--plot", default=None, metavar="PNG",
                   help="also write a figure: bounds vs M, failure probability vs Delta_R")
    p.add_argument("--plot-terms", default=None, metavar="PNG",
                   help="also write a figure: each route's and variant's bound decomposed into its terms")


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
    print(dumps(out) if args.json else text)
    return 0


def _write(flag: str, path: str, make) -> str:
    try:
        return str(make())
    except OSError as exc:
        raise InputError(flag, "a writable PNG path", f"{path} ({exc.strerror})") from None
