"""``depthcert study NAME [--config FILE] --out DIR [--quick]``: the §8 studies (Paper B).

``NAME`` is ``growth-vs-scratch``, ``agmax-depth``, ``local-insertion`` or
``optimizer-invariance`` (:data:`numerics.studies.growth.STUDIES`); writes ``DIR/NAME.json``
and ``DIR/NAME.png``. ``--quick`` runs at light sizes.
"""
from __future__ import annotations

import argparse
import contextlib

NAMES = ("growth-vs-scratch", "agmax-depth", "local-insertion", "optimizer-invariance")


@contextlib.contextmanager
def bad_input(command: str):
    """Turn the value errors that bad input reaches deep inside (e.g. a model's sizes) into the
    CLI's one-line exit 2 (:class:`~depthcert.errors.InputError`)."""
    from depthcert.errors import InputError

    try:
        yield
    except InputError:
        raise
    except (ValueError, FileNotFoundError) as exc:
        raise InputError("--config", "a configuration this network and data accept", str(exc).splitlines()[0]) from None


def add_parser(sub) -> None:
    p = sub.add_parser("study", help="Paper B's growth studies (vs scratch, AG_max, local insertion, optimisers)",
                       description="Run one of Paper B's §8 studies and plot it.")
    p.add_argument("name", choices=NAMES)
    p.add_argument("--config", default=None, help="TOML (the grow sections); default: the teacher of known depth")
    p.add_argument("--out", required=True, help="output folder (NAME.json, NAME.png)")
    p.add_argument("--quick", action="store_true", help="light sizes (seconds)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: argparse.Namespace) -> int:
    from depthcert._io import dumps
    from depthcert.config import read_toml
    from numerics.studies.growth import run_study

    with bad_input("study"):
        config = read_toml(args.config) if args.config else None
        result = run_study(args.name, config, args.out, quick=args.quick, progress=not args.json)
    print(dumps(result, indent=None if args.json else 2))
    return 0
