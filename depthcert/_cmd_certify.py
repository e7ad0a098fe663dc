"""``depthcert certify --model FILE.py:factory [--weights CKPT.pt] --data FILE.py:function [--site S]``.

Paper A's certificate at one site of a user's network (:func:`depthcert.certify_insertion`):
``function()`` returns the roles ``signal``, ``S`` and ``T``; every route of the table is
evaluated (``DIR/routes.csv``, ``DIR/certify.json``). Without ``--site``, the best site of a
scan of ``signal``. Exit 0 whatever the answer, 2 on bad input (one line).
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    from depthcert._cmd_user import add_user_arguments

    p = sub.add_parser("certify", help="certify one insertion in your own network (Paper A routes)",
                       description="Paper A's certificate at a site of a user's nn.Module, from samples by role.")
    add_user_arguments(p, "certify")
    p.add_argument("--out", default=None, help="output folder (certify.json, routes.csv)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from depthcert._cmd_user import run_user
    from depthcert.errors import InputError

    if not args.model:
        raise InputError("--model", "FILE.py:factory", None)
    return run_user(args, "certify")
