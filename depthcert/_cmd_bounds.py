"""``depthcert bounds --config setup.toml [--json] [--level 0.1]``."""
from __future__ import annotations

import argparse

from depthcert import report
from depthcert._io import dumps
from depthcert.config import load_setup
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


def run(args: argparse.Namespace) -> int:
    from bounds.regimes import degenerate_regime
    from bounds.routes import evaluate_routes

    setup, cfg_level = load_setup(args.config)
    level = args.level if args.level is not None else (cfg_level if cfg_level is not None else DEFAULT_LEVEL)
    rep = evaluate_routes(setup, level)
    regime = degenerate_regime(setup, rep.level)
    out = {**rep.to_dict(), "degenerate_regime": regime.to_dict(), "setup": report.setup_dict(setup)}
    if args.plot:
        from depthcert.plots import plot_routes

        try:
            out["plot"] = str(plot_routes(setup, rep.level, args.plot))
        except OSError as exc:
            raise InputError("--plot", "a writable PNG path", f"{args.plot} ({exc.strerror})") from None
    print(dumps(out) if args.json else report.routes_table(rep, regime))
    return 0
