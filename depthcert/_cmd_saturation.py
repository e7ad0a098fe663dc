"""``depthcert saturation --config FILE [--json] [--out DIR]``: is the network deep enough? (THEORY §8)

Trains the ``[reference]`` network of the config (any supported workload:
:mod:`numerics.workloads`) and scans every insertion site on an independent probe sample:
projection scores, ``||G||^2``, AG_max, realisability, curvature, Theorem 1's gain bounds
and two saturation tests at the stated level. Prints a table (or ``--json``), writes
``DIR/saturation.json`` and ``DIR/saturation.png``. Exit 0 whatever the verdict (a verdict is
an answer), 2 on bad input (unknown site, batch-norm, a shape-changing site, bad keys).
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("saturation", help="scan every insertion site: where would one more block help?",
                       description="Paper B's saturation scan and test at a stated level.")
    p.add_argument("--config", required=False, help="TOML with [task] [model] [reference] [saturation]")
    p.add_argument("--out", default=None, help="output folder (saturation.json, saturation.png)")
    from depthcert._cmd_user import add_user_arguments

    add_user_arguments(p, "saturation")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    if args.model or not args.config:   # a user's own model and data (depthcert._cmd_user)
        from depthcert._cmd_user import run_user

        return run_user(args, "saturation")
    from depthcert._cmd_study import bad_input
    from depthcert._io import dumps, versions
    from depthcert.config import read_toml
    from numerics.studies.saturation import format_table, run as run_saturation

    with bad_input("saturation"):
        result = run_saturation(read_toml(args.config), args.out, progress=not args.json)
    result["versions"] = versions()
    print(dumps(result) if args.json else format_table(result))
    return 0
