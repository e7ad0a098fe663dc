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

from depthcert._help import epilog


def add_parser(sub) -> None:
    p = sub.add_parser("saturation", help="is the network deep enough? where would one more block help?",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=False, metavar="FILE",
                   help="TOML with [task], [model], [reference] and [saturation] (a [growth] table, read by "
                   "`depthcert grow`, may be there too); see depthcert/configs/digits_cnn.toml (or --model and "
                   "--data for your own network)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder for saturation.json and saturation.png (with --model also sites.csv) "
                        "(default: write no files)")
    from depthcert._cmd_user import add_user_arguments

    add_user_arguments(p, "saturation")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table")


DESCRIPTION = """\
Is this network already deep enough, and if not, where would one more block help? This
trains the config's reference network (any supported workload: synthetic teachers,
digits, characters, CIFAR; MLP, CNN, ResNet, GPT-2 or Hugging Face models) and scans
every insertion site on an independent probe sample: the first-order gain a new block
could bring there (projection scores, ||G||^2, AG_max), whether a block can realise it,
the curvature, the guaranteed gain of Theorem 1, and two saturation tests at the
stated level."""

EPILOG = epilog(
    [("stdout", "one row per site and the verdict (JSON with --json)"),
     ("DIR/saturation.json", "with --out: every number of the scan, the config, versions"),
     ("DIR/saturation.png", "with --out: the scan per site"),
     ("DIR/sites.csv", "with --model: one row per site of your network")],
    ["depthcert saturation --config depthcert/configs/digits_cnn.toml --out runs/saturation"],
    [(0, "the scan ran, whatever the verdict (saturated or not is an answer)"),
     (2, "bad input: an unknown key or site, batch norm, a site that changes the shape;\n"
         "one line on stderr naming it, the allowed values and the value given")])


def run(args: argparse.Namespace) -> int:
    if args.model or not args.config:   # a user's own model and data (depthcert._cmd_user)
        from depthcert._cmd_user import run_user

        return run_user(args, "saturation")
    from depthcert._cmd_study import bad_input
    from depthcert._io import dumps, versions
    from depthcert.config import read_toml

    config = read_toml(args.config)     # a bad file is refused before the heavy imports
    from plumbing.sizes import check_config_sizes

    check_config_sizes(config)          # sizes that cannot fit, before torch is imported (again once merged)
    from numerics.studies.saturation import format_table, run_saturation

    with bad_input("saturation"):
        result = run_saturation(config, args.out, progress=not args.json)
    result["versions"] = versions()
    print(dumps(result) if args.json else format_table(result))
    return 0
