"""``depthcert certify --model FILE.py:factory [--weights CKPT.pt] --data FILE.py:function [--site S]``.

Paper A's certificate at one site of a user's network (:func:`depthcert.certify_insertion`):
``function()`` returns the roles ``signal``, ``S`` and ``T``; every route of the table is
evaluated (``DIR/routes.csv``, ``DIR/certify.json``). Without ``--site``, the best site of a
scan of ``signal``. Exit 0 whatever the answer, 2 on bad input (one line).
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog

DESCRIPTION = """\
Would one more block provably help your own network? This takes a model you wrote
(--model FILE.py:factory, optionally --weights) and data by role (--data FILE.py:function
returning the samples signal, S and T, which must not overlap), inserts a block at
--site (default: the best site of a saturation scan of the signal sample) and evaluates
every route of Paper A's theorems (and this project's variants) on it. Constants a route
needs (--B, --L-top, --L-loss, --kappa, --A-norm, --rho-phi) are yours to give, or
derived where they exist with --derive-constants (a post-norm state, a linear or pooled
linear head); a route without them is listed with what it misses and not evaluated."""

EPILOG = epilog(
    [("stdout", "the paper's two routes and the route fixed before the data (with --routes all: one row per route; "
                "bound, failure probability, certified), the route fixed by default; each row's "
                "S_only, improvement and its share of the realised gain, and how much each certified route covers"),
     ("DIR/certify.json", "with --out: every number, which sample fixed what, the notes"),
     ("DIR/routes.csv", "with --out: the route table")],
    ["depthcert certify --model net.py:make_model --data net.py:roles --B 4.0 --L-top 2.0 --out runs/certify"],
    [(0, "the certificate was evaluated, certified or not"), BAD_INPUT])


def add_parser(sub) -> None:
    from depthcert._cmd_user import add_user_arguments

    p = sub.add_parser("certify", help="would one more block provably help your own network? (Paper A's routes)",
                       description=DESCRIPTION, epilog=EPILOG)
    add_user_arguments(p, "certify")
    p.add_argument("--out", default=None, metavar="DIR", help="output folder for certify.json and routes.csv (default: write no files)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table")
    p.add_argument("--routes", choices=("all", "default"), default="default",
                   help="rows printed: 'default' (the default): the paper's two routes and the route fixed before the "
                        "data; 'all': every route (routes.csv and certify.json always hold every route)")


def run(args: argparse.Namespace) -> int:
    from depthcert._cmd_user import run_user
    from depthcert.errors import InputError

    if not args.model:
        raise InputError("--model", "FILE.py:factory", None)
    return run_user(args, "certify")
