"""``depthcert demo [--out DIR]``: the default synthetic experiment (same files as ``run``).

The configuration is :data:`numerics.studies.run.DEFAULT_DEMO_CONFIG` (also shipped as
``depthcert/configs/demo.toml``).
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="run the default synthetic experiment (< 2 min on 2 cores)",
                       description="Run the default synthetic experiment and certify the improvement.")
    p.add_argument("--out", default="depthcert_demo", help="output folder (default: ./depthcert_demo)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from depthcert._cmd_run import execute
    from numerics.studies.run import DEFAULT_DEMO_CONFIG

    return execute(DEFAULT_DEMO_CONFIG, args.out, args.json)
