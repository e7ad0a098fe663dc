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

KINDS = ("bound-vs-M", "region", "appendix-m", "dstar", "rebound", "data", "covariance")


def add_parser(sub) -> None:
    p = sub.add_parser("plot", help="draw a figure from stored results (sweep or run folder)",
                       description="Figures of predicted vs observed quantities, from stored results only.")
    p.add_argument("dir", metavar="DIR", help="a sweep folder (cells/) or a run folder (result.json)")
    p.add_argument("--kind", required=True, choices=KINDS, help="which figure")
    p.add_argument("--out", default=None, help="folder for the files (default DIR/plots)")
    p.add_argument("--depth-key", default="model.depth", help="the varied depth (default model.depth)")
    p.add_argument("--data-key", default="reference.n", help="the varied data size (dstar, data; default reference.n)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--cell", type=int, default=0, help="region/covariance: index of the cell to draw (default 0)")


def run(args: argparse.Namespace) -> int:
    from numerics.studies.figures import plot_kind

    paths = plot_kind(args.dir, args.kind, out=args.out, depth_key=args.depth_key, data_key=args.data_key,
                      n_boot=args.n_boot, cell=args.cell)
    for p in paths:
        if str(p).endswith("_exponents.md"):
            print(open(p, encoding="utf-8").read())
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
