"""The ``depthcert`` command line: parse, call the public API, print.

Each sub-command lives in its own module ``depthcert/_cmd_<name>.py`` exposing
``add_parser(subparsers)`` and ``run(args) -> int``; modules are imported lazily so
``depthcert bounds`` never imports torch.

Exit codes: 0 success, 1 a negative answer (e.g. a chain that is not entailed), 2 bad
input (one line naming the key, the allowed range and the value; never a traceback).
"""
from __future__ import annotations

import argparse
import importlib
import sys

from depthcert.errors import InputError

COMMANDS = {
    "bounds": "depthcert._cmd_bounds",
    "prove": "depthcert._cmd_prove",
    "run": "depthcert._cmd_run",
    "demo": "depthcert._cmd_demo",
    "sweep": "depthcert._cmd_sweep",
    "plot": "depthcert._cmd_plot",
    "reproduce": "depthcert._cmd_reproduce",
    "validity": "depthcert._cmd_validity",
    "saturation": "depthcert._cmd_saturation",
    "grow": "depthcert._cmd_grow",
    "certify": "depthcert._cmd_certify",
    "study": "depthcert._cmd_study",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage + exits 2 already; keep one line
        self.exit(2, f"depthcert: error: {message}\n")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="depthcert", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    wanted = [a for a in argv if a in COMMANDS][:1] or list(COMMANDS)
    for name in COMMANDS:
        if name in wanted:
            importlib.import_module(COMMANDS[name]).add_parser(sub)
        else:  # listed for --help without importing its (possibly heavy) module
            sub.add_parser(name, help=f"see `depthcert {name} --help`")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    try:
        return int(importlib.import_module(COMMANDS[args.command]).run(args) or 0)
    except InputError as exc:
        print(f"depthcert {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
