"""``depthcert study NAME [--config FILE] --out DIR [--quick]``: the §8 studies (Paper B).

``NAME`` is ``growth-vs-scratch``, ``agmax-depth``, ``local-insertion`` or
``optimizer-invariance`` (:data:`numerics.studies.growth.STUDIES`); writes ``DIR/NAME.json``
and ``DIR/NAME.png``. ``--quick`` runs at light sizes.
"""
from __future__ import annotations

import argparse
import contextlib

from depthcert._help import BAD_INPUT, epilog

NAMES = ("growth-vs-scratch", "agmax-depth", "local-insertion", "optimizer-invariance", "pretrained")


@contextlib.contextmanager
def bad_input(command: str):
    """Turn the value errors that bad input reaches deep inside (e.g. a model's sizes) into the
    CLI's one-line exit 2 (:class:`~depthcert.errors.InputError`)."""
    from depthcert.errors import InputError
    from plumbing.validation import first_line

    try:
        yield
    except InputError:
        raise
    except (ValueError, FileNotFoundError) as exc:
        raise InputError("--config", "a configuration this network and data accept", first_line(exc)) from None


def add_parser(sub) -> None:
    p = sub.add_parser("study", help="the growth studies: vs scratch, AG_max vs depth, local insertion, optimisers",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("name", choices=NAMES, help="which study (see the list above)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="TOML with the tables of `depthcert grow` (default: a synthetic teacher of known depth)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.add_argument("--quick", action="store_true", help="light sizes (much shorter runs: seconds for the growth studies, minutes for pretrained)")
    p.add_argument("--json", action="store_true", help="print the result on one line (default: indented JSON)")


DESCRIPTION = """\
The experiments around growth to saturation (Paper B), each from a depth-0 student:
  growth-vs-scratch     a grown network against the same architecture trained from
                        scratch with the same step budget: test loss over 5 seeds
  agmax-depth           AG_max, test loss and population risk of networks trained
                        at each depth, and the depth where AG_max levels off
  local-insertion       the loss reduction of one block inserted at the best site,
                        against the gain Theorem 1 guarantees, per depth
  optimizer-invariance  the first step of SGD, momentum and Adam from a new block
                        lowers the loss exactly when the network is not saturated
  pretrained            a real pretrained post-LN BERT (all-MiniLM-L6-v2, offline:
                        the 'pretrained' extra): where to insert a block, does it help,
                        and LLaMA-Pro's control (an existing layer tuned instead);
                        writes DIR/study.json, DIR/report.md and its figures"""

EPILOG = epilog(
    [("stdout", "the result as JSON"),
     ("DIR/NAME.json", "the study's numbers (pretrained: DIR/study.json instead)"),
     ("DIR/NAME.png", "its figure"),
     ("DIR/study.json, DIR/report.md", "pretrained: the arms, the rank correlations of the scan's scores, the\n"
                                       "scan's cost; the report "
                                       "and its figures (NAME.png, and scan.png: the scan per site)")],
    ["depthcert study growth-vs-scratch --out runs/study --quick"], [(0, "the study ran"), BAD_INPUT])


def run(args: argparse.Namespace) -> int:
    from depthcert._io import dumps
    from depthcert.config import read_toml
    from numerics.studies.growth import run_study

    with bad_input("study"):
        config = read_toml(args.config) if args.config else None
        if args.name == "pretrained":
            return _pretrained(args, config)
        result = run_study(args.name, config, args.out, quick=args.quick, progress=not args.json)
    print(dumps(result, indent=None if args.json else 2))
    return 0


def _pretrained(args: argparse.Namespace, config) -> int:
    from depthcert._io import dumps
    from numerics.studies.pretrained import DEFAULTS, run_pretrained
    from depthcert.errors import InputError

    table = (config or {}).get("pretrained", {})
    unknown = sorted(set(table) - set(DEFAULTS) - {"s_n", "t_n"})
    if unknown:
        raise InputError("--config [pretrained]", f"keys among {sorted(DEFAULTS)}", ", ".join(unknown))
    study = run_pretrained(args.out, quick=args.quick, config=table, progress=not args.json)
    print(dumps({k: study[k] for k in ("arms", "rank_correlation", "rank_correlations", "scan_cost_ratio")}, indent=None if args.json else 2))
    return 0
