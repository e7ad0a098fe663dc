"""``depthcert sweep --config sweep.toml --out DIR [--backend local|ray] [--workers N]``.

Runs every cell of a sweep file (a base ``run`` config, a ``[grid]`` and an optional
``[zip]``; see :mod:`numerics.studies.sweeps`) that ``DIR`` does not hold yet, writing
``DIR/cells/<key>/result.json`` per cell and ``DIR/results.csv``; then the figures the
sweep file lists under ``plots``. Exit 0 when the sweep ran (failed cells are listed),
2 on bad input (one line; every cell is validated before anything runs).
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a grid of experiments (resumable; local processes or Ray)",
                       description="Run the missing cells of a sweep file and collect them in results.csv.")
    p.add_argument("--config", required=True, help="sweep TOML (base, [grid], [zip], plots)")
    p.add_argument("--out", required=True, help="output folder (re-running it resumes)")
    p.add_argument("--backend", default="local", help="local (default) or ray")
    p.add_argument("--workers", type=int, default=None,
                   help="local: worker processes (default 1); ray: tasks in flight (default: all)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch/BLAS threads per cell (default: cores // workers; ray: 1)")
    p.add_argument("--address", default=None, help="ray: address of an existing cluster (default: start one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")


def run(args: argparse.Namespace) -> int:
    from depthcert._io import dumps
    from numerics.studies.sweeps import load_sweep, sweep

    spec = load_sweep(args.config)
    outcome = sweep(spec, args.out, backend=args.backend, workers=args.workers, threads=args.threads,
                    address=args.address, progress=not args.no_progress)
    figures = []
    if spec.plots:
        from numerics.studies.figures import plot_kind

        figures = [str(p) for kind in spec.plots for p in plot_kind(args.out, kind)]
    if args.json:
        print(dumps({**outcome.to_dict(), "figures": figures}))
        return 0
    for path in figures:
        if path.endswith("_exponents.md"):     # the fitted-vs-predicted exponent table
            print(open(path, encoding="utf-8").read())
    print(f"{outcome.cells} cells: {outcome.computed} computed now, {outcome.reused} reused, "
          f"{outcome.failed} failed ({outcome.backend}, {outcome.workers} worker(s) x {outcome.threads} thread(s), "
          f"{outcome.wall_s:.1f} s)")
    print("wrote " + ", ".join([outcome.table] + figures))
    return 0
