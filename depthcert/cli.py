"""The ``depthcert`` command line: parse, call the public API, print.

Each sub-command lives in its own module ``depthcert/_cmd_<name>.py`` exposing
``add_parser(subparsers)`` and ``run(args) -> int``; modules are imported lazily so
``depthcert bounds`` never imports torch. Every help page is written for a user: what the
command answers, its inputs, the files it writes, an example and the exit status (layout:
:mod:`depthcert._help`).

Exit codes: 0 success, 1 a negative answer (e.g. a chain that is not entailed), 2 bad
input (one line naming the key, the allowed range and the value; never a traceback),
130 / 143 interrupted by SIGINT / SIGTERM (one line: what is stored; :mod:`depthcert._guard`).
Any other exception ends in one line too (its type, message and where it was raised; exit 1, as
Python's own exit on an uncaught exception; ``DEPTHCERT_TRACEBACK=1`` prints the traceback instead).
Output works on any locale: where stdout or stderr cannot encode a character (``LANG=C``, a pipe
with ``PYTHONIOENCODING=ascii``), it is written in ASCII (``±`` as ``+/-``, ``—`` as ``--``,
``→`` as ``->``; :func:`any_locale`).
"""
from __future__ import annotations

import argparse
import codecs
import importlib
import os
import sys

from depthcert import __version__
from depthcert._help import HelpFormatter
from depthcert.errors import InputError

#: The commands of ``depthcert``, in the order of ``depthcert --help``: ``{name: module}``, each
#: module with ``add_parser(subparsers)`` and ``run(args) -> exit status``.
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


DESCRIPTION = """\
When does adding depth to a normalised residual network provably improve its test risk,
and when is a network already deep enough? depthcert evaluates the certificates of
Paper A (Theorems 1-3: insert a zero-initialised residual block, train it, bound the new
model's test loss), machine-checks their proofs, measures every quantity they need on
real training runs, and scans a network for depth saturation (Paper B).

Start with `depthcert demo` (about 12 s on 2 idle cores): one experiment end to end, with its
certificate. Each command's own page, `depthcert COMMAND --help`, says what it reads,
what it writes, and gives an example."""

EPILOG = """\
exit status (every command):
  0  the command ran and printed its answer (a negative verdict is an answer too,
     except where a command's help says 1)
  1  a conclusion failed: a proof chain that does not hold (prove), a guarantee
     that failed more often than stated (validity), an experiment that could not be
     carried out (run, demo)
  2  bad input: one line on stderr naming the option or config key, the allowed
     values and the value given; also a results folder another depthcert process
     is writing, or stored results that are corrupt or made by another config, or a
     file that could not be written (disk full, a file-size limit: the previous file
     is intact, the partial one removed)
  130, 143  interrupted (Ctrl-C, SIGTERM): one line says how much is stored; the
     same command again continues from there"""


#: ASCII for the non-ASCII characters depthcert's own output uses (**Choice**); others become ``\\uXXXX``.
ASCII = {"±": "+/-", "—": "--", "–": "-", "→": "->", "←": "<-", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~", "×": "x",
         "·": ".", "…": "...", "−": "-", "∞": "inf", "√": "sqrt", "²": "^2", "³": "^3", "½": "1/2", "‖": "||",
         "∈": " in ", "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "Δ": "Delta", "ε": "eps", "κ": "kappa",
         "λ": "lambda", "μ": "mu", "ρ": "rho", "σ": "sigma", "Σ": "Sigma", "τ": "tau", "φ": "phi", "ϕ": "phi",
         "“": '"', "”": '"', "‘": "'", "’": "'", "§": "S"}
_ERRORS = "depthcert-ascii"


def _ascii_fallback(exc: UnicodeEncodeError):
    text = exc.object[exc.start:exc.end]
    return "".join(ASCII.get(c, f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}") for c in text), exc.end


codecs.register_error(_ERRORS, _ascii_fallback)


def any_locale(*streams) -> None:
    """Make ``streams`` (default stdout and stderr) write what their encoding cannot encode in ASCII
    (:data:`ASCII`), instead of raising ``UnicodeEncodeError`` (``LANG=C``, ``PYTHONIOENCODING=ascii``)."""
    for stream in streams or (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "".join(ASCII).encode(encoding)
            continue                                  # UTF-8 and the like: unchanged
        except (UnicodeEncodeError, LookupError):
            pass
        try:
            stream.reconfigure(errors=_ERRORS)
        except (AttributeError, ValueError, OSError):  # a stream that cannot be reconfigured: left as it is
            pass


def _where(exc: BaseException) -> str:
    """``file:line`` where ``exc`` was raised (its innermost frame)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _first_line(exc: BaseException) -> str:
    from plumbing.validation import first_line

    return first_line(exc)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse prints usage + exits 2 already; keep one line
        self.exit(2, f"depthcert: error: {message}\n")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = _Parser(prog="depthcert", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"depthcert {__version__}",
                        help="print the version of depthcert and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND",
                                title="commands")
    wanted = [a for a in argv if a in COMMANDS][:1] or list(COMMANDS)
    for name in COMMANDS:
        if name in wanted:
            importlib.import_module(COMMANDS[name]).add_parser(sub)
        else:  # listed for --help without importing its (possibly heavy) module
            sub.add_parser(name, help=f"see `depthcert {name} --help`")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    any_locale()
    args = build_parser(argv).parse_args(argv)
    from depthcert._guard import check_outputs, close_progress_bars, guarded, interrupted_line, out_folder

    try:
        module = importlib.import_module(COMMANDS[args.command])
        check_outputs(args, getattr(module, "EPILOG", ""))   # an output that would destroy an input, before any work
        with guarded(args.command, out_folder(args)):
            return int(module.run(args) or 0)
    except InputError as exc:
        print(f"depthcert {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:   # SIGINT, or SIGTERM (depthcert._guard): the stored work is intact
        close_progress_bars()
        print(f"depthcert {args.command}: {interrupted_line(args.command, getattr(args, 'out', None))}",
              file=sys.stderr)
        return 128 + getattr(exc, "signum", 2)
    except Exception as exc:   # noqa: BLE001 -- never a traceback: one line, what and where (exit 1 as Python's own)
        if os.environ.get("DEPTHCERT_TRACEBACK"):
            raise
        close_progress_bars()
        print(f"depthcert {args.command}: error: {type(exc).__name__} at {_where(exc)}: {_first_line(exc)} "
              "(not a known bad input; DEPTHCERT_TRACEBACK=1 prints the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
