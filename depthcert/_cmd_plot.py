"""``depthcert plot DIR --kind KIND [--out FOLDER]``: figures from stored results (PNG and PDF).

``DIR`` is a sweep folder (``cells/``) or a run folder (``result.json``); nothing is
re-run. Kinds: ``bound-vs-M`` (both routes' bounds vs observed ``L_test(f_new)`` as
``M``/``K`` grow, ``L_test(f_old)`` and ``min_M`` marked), ``region`` (certification
region in the (``M``, ``Delta_R``) plane with the degenerate-regime crossover),
``appendix-m`` (``s(D)`` with ``alpha_hat``; ``R(D) - R_inf`` with observed vs predicted
exponent, bootstrap intervals; also writes the exponent table), ``dstar`` (``D*(M)``
against ``M^{1/(2a+1)}``), ``rebound`` (depth-only vs joint depth-and-width scaling),
``data`` (loss vs data size), ``covariance`` (the (A3) heatmap). Exit 0, or 2 when the
results cannot support the kind (one line saying what is missing).
"""
from __future__ import annotations

import argparse

from depthcert._help import epilog

KINDS = ("bound-vs-M", "region", "appendix-m", "dstar", "rebound", "data", "covariance")


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="a figure of predicted vs observed quantities, from stored results",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("dir", metavar="DIR", help="a sweep folder (holding cells/) or a run folder (holding result.json)")
    p.add_argument("--kind", required=True, choices=KINDS, help="which figure (see the list above)")
    p.add_argument("--out", default=None, metavar="FOLDER", help="folder for the files (default DIR/plots)")
    p.add_argument("--depth-key", default="model.depth", metavar="KEY",
                   help="the config key that varies the depth across cells (default model.depth)")
    p.add_argument("--data-key", default="reference.n", metavar="KEY",
                   help="dstar, data: the config key that varies the data size (default reference.n)")
    p.add_argument("--n-boot", type=int, default=1000, metavar="N", help="bootstrap resamples (default 1000)")
    p.add_argument("--cell", type=int, default=0, metavar="I",
                   help="region, covariance: index of the cell to draw (default 0)")


DESCRIPTION = """\
Does what the theory predicts match what was measured? This draws one figure from
results already stored by `depthcert sweep` or `depthcert run`; nothing is re-run.

Kinds:
  bound-vs-M   both routes' bounds against the observed new test loss as M, K grow
  region       where the certificate holds in the (M, Delta_R) plane
  appendix-m   the depth power law: s(D) and R(D) - R_inf against depth, with the
               fitted and the predicted exponent (bootstrap intervals)
  dstar        the best depth D*(M) against M^(1/(2a+1))
  rebound      depth-only against joint depth-and-width scaling
  data         loss against the data size
  covariance   the heatmap of assumption (A3)"""

EPILOG = epilog(
    [("stdout", "the files written (appendix-m: the exponent table first)"),
     ("FOLDER/KIND.png", "the figure (FOLDER is --out, default DIR/plots)"),
     ("FOLDER/KIND.pdf", "the same figure as PDF"),
     ("FOLDER/KIND.json", "the plotted numbers"),
     ("FOLDER/KIND_exponents.md", "appendix-m: fitted vs predicted exponents (also printed)")],
    ["depthcert plot runs/depth --kind appendix-m"],
    [(0, "the figure was written"),
     (2, "bad input, or stored results that cannot support this kind\n(one line saying what is missing)")])


def _check_n_boot(folder: str, n_boot) -> None:
    """The bootstrap's memory, before the heavy imports (cells counted from the folder's listing; the
    loaded records are checked again)."""
    from pathlib import Path

    from plumbing.machine import check_fits
    from plumbing.sizes import bootstrap_memory

    if isinstance(n_boot, int) and n_boot >= 20:
        cells = Path(folder) / "cells"
        try:
            count = sum(1 for _ in cells.iterdir()) if cells.is_dir() else 1
        except OSError:
            count = 1
        check_fits(bootstrap_memory(n_boot, max(count, 1)))


def run(args: argparse.Namespace) -> int:
    _check_n_boot(args.dir, args.n_boot)
    from numerics.studies.figures import plot_kind

    paths = plot_kind(args.dir, args.kind, out=args.out, depth_key=args.depth_key, data_key=args.data_key,
                      n_boot=args.n_boot, cell=args.cell)
    for p in paths:
        if str(p).endswith("_exponents.md"):
            print(open(p, encoding="utf-8").read())
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
