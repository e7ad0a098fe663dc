"""``depthcert prove [--json] [--chain FILE.toml] [--timeout S]``: machine-checked proof chains.

Without ``--chain``: verify every theorem of :mod:`bounds`, reject every mutant, run the
side algebra; exit 0 only if all of it holds, else 1. With ``--chain``: exit 0 when the
user's chain is entailed (non-vacuously), 1 when it is not (a countermodel confirmed in
exact arithmetic is printed), when its premises contradict each other (``vacuous``) or
when the answer is unknown (``entailed: null``); 2 for malformed or oversized input (the
message names the formula and the column, or the limit).
"""
from __future__ import annotations

import argparse
import math
import sys

from depthcert._help import BAD_INPUT, epilog
from depthcert._io import dumps

DEFAULT_TIMEOUT_S = 5.0


def add_parser(sub) -> None:
    from proofs_check import describe_limits

    p = sub.add_parser("prove", help="do the theorems follow from their premises? machine-checked proof chains",
                       description=DESCRIPTION, epilog=EPILOG + "\n\n" + describe_limits())
    p.add_argument("--chain", default=None, metavar="TOML",
                   help="check your own chain instead: a TOML file with name, assume, premises and conclusion "
                   "(see examples/chains/)")
    p.add_argument("--json", action="store_true", help="print exactly one JSON object instead of the report")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"time limit of the solver per query, in seconds, in (0, 3600] (default {DEFAULT_TIMEOUT_S})")


DESCRIPTION = """\
Do the theorems really follow from their premises? Without --chain, this checks every
proof chain of the toolkit by machine: Theorems 1-3, this project's tighter variants
of Theorems 2 and 3 and its localised certificates on loss differences (THEORY §6b) are entailed by their premises (Farkas certificates and the z3
solver), every premise is needed, the failure probabilities add up; every built-in
wrong version of a theorem (a mutant) is rejected; and the side algebra holds.

With --chain FILE, it checks your own chain: whether the conclusion follows from the
premises and assumptions. When it does not, a countermodel confirmed in exact
arithmetic is printed; premises that contradict each other are reported as vacuous."""

EPILOG = epilog(
    [("stdout", "the report: one line per check (one JSON object with --json); nothing is written")],
    ["depthcert prove", "depthcert prove --chain examples/chains/descent_lemma.toml"],
    [(0, "every check holds (with --chain: the conclusion is entailed, non-vacuously)"),
     (1, "a check failed (with --chain: not entailed, vacuous, or unknown within the time limit)"),
     BAD_INPUT])


def run(args: argparse.Namespace) -> int:
    from depthcert.errors import InputError

    if not (math.isfinite(args.timeout) and 0 < args.timeout <= 3600):
        raise InputError("--timeout", "a number of seconds in (0, 3600]", args.timeout)
    if args.chain is not None:
        return _run_chain(args)
    from proofs_check import format_report, verify_all

    report = verify_all(timeout_s=args.timeout)
    print(dumps(report.to_dict()) if args.json else format_report(report))
    return 0 if report.ok else 1


def _run_chain(args: argparse.Namespace) -> int:
    from depthcert.errors import InputError
    from proofs_check import ChainSyntaxError, format_chain, load_chain
    from proofs_check._isolate import check_chain_limited

    try:
        chain = load_chain(args.chain)
    except (ChainSyntaxError, InputError) as exc:  # malformed input: one line, exit 2
        if args.json:
            print(dumps({"error": str(exc), "key": exc.key, "column": getattr(exc, "column", None),
                         "entailed": None, "status": "bad input", "reason": str(exc)}))
        print(f"depthcert prove: error: {exc}", file=sys.stderr)
        return 2
    result = check_chain_limited(chain, timeout_s=args.timeout)   # hard limits: time per query and chain, memory
    print(dumps(result.to_dict()) if args.json else format_chain(result))
    return 0 if result.entailed is True else 1
