"""``depthcert run --config exp.toml --out DIR``: one end-to-end experiment (THEORY §1-§6).

Trains the reference model, inserts a block, trains it with the (C2) fallback, measures
every quantity, evaluates Theorems 2 and 3 through :mod:`bounds.routes`, prints a table
and writes ``DIR/result.json`` (atomically, with the config and versions),
``DIR/bounds_config.toml`` (the same numbers for ``depthcert bounds``) and
``DIR/bound_vs_observed.png``.
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run one experiment from a TOML config",
                       description="Train, insert, measure and certify (Theorems 2 and 3).")
    p.add_argument("--config", required=True, help="experiment TOML (see depthcert/configs/demo.toml)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def execute(config: dict, out: str, as_json: bool) -> int:
    """Run, write, print; shared by ``run`` and ``demo``.

    Exit 0 when the experiment ran (whether or not a route certifies; the table says),
    1 with one line when it could not be carried out (no first-order signal, divergence).
    """
    import sys

    from depthcert._io import dumps, versions
    from numerics.studies.run import format_table, run_experiment, write_outputs
    from numerics.training import DivergenceError

    try:
        result = run_experiment(config)
    except (ArithmeticError, DivergenceError) as exc:
        print(f"depthcert: experiment stopped: {exc}", file=sys.stderr)
        return 1
    result["versions"] = versions()
    paths = write_outputs(result, out)
    print(dumps(result) if as_json else format_table(result))
    if not as_json:
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def run(args: argparse.Namespace) -> int:
    from depthcert.config import read_toml

    return execute(read_toml(args.config), args.out, args.json)
