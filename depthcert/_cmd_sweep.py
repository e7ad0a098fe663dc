"""``depthcert sweep --config sweep.toml --out DIR [--backend local|ray] [--workers N]``.

Runs every cell of a sweep file (a base ``run`` config, a ``[grid]`` and an optional
``[zip]``; see :mod:`numerics.studies.sweeps`) that ``DIR`` does not hold yet, writing
``DIR/cells/<key>/result.json`` per cell and ``DIR/results.csv``; then the figures the
sweep file lists under ``plots``. Exit 0 when the sweep ran (failed cells are listed),
2 on bad input (one line; every cell is validated before anything runs).
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="a grid of experiments (resumable; local processes or a Ray cluster)",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=True, metavar="FILE",
                   help="sweep file (TOML): base (a `depthcert run` config), [grid] (dotted keys -> lists of "
                   "values, every combination), optional [zip] (lists varied together) and plots (figure kinds); "
                   "see examples/sweeps/")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder; running again with it resumes")
    p.add_argument("--backend", default="local", help="local (default): processes on this machine; ray: Ray tasks")
    p.add_argument("--workers", type=int, default=None,
                   help="local: worker processes (default 1); ray: tasks in flight (default: all)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch/BLAS threads per cell (default: cores // workers, at most $OMP_NUM_THREADS when it "
                   "is set; ray: 1)")
    p.add_argument("--address", default=None, metavar="HOST:PORT",
                   help="ray: address of an existing cluster (default: start a local one)")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bar")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object")


DESCRIPTION = """\
How do the measured quantities and the bounds change with depth, width or data size?
This runs `depthcert run` on every cell of a grid: the sweep file's base config with
the keys of [grid] set to every combination of their values. Every cell is validated
before anything runs; each is stored as soon as it is done, and running again computes
only the cells the folder does not hold yet. Then it draws the figures the sweep file
lists under plots (see `depthcert plot --help`)."""

EPILOG = epilog(
    [("stdout", "the cell counts (computed now, reused, failed) and the files"),
     ("DIR/cells/KEY/result.json", "one `depthcert run` result per cell"),
     ("DIR/results.csv", "one row per cell: its varied keys and measured quantities"),
     ("DIR/sweep.json", "the sweep (base, grid, zip, plots, cells): what a re-run checks the folder against"),
     ("DIR/plots/", "the figures listed under plots (PNG, PDF and the plotted numbers as JSON)")],
    ["depthcert sweep --config examples/sweeps/teacher_depth.toml --out runs/depth --workers 2"],
    [(0, "the sweep ran (cells that failed are listed and counted)"), BAD_INPUT])


def run(args: argparse.Namespace) -> int:
    from plumbing.validation import check_ray_address

    check_ray_address(args.address, "--address")     # before any work (and whatever the backend; no torch imported yet)
    from depthcert._io import dumps
    from plumbing.config import check_config_file

    check_config_file(args.config, "--config")     # a FIFO or an oversized file: refused before the heavy imports
    if args.backend == "ray" and args.address:
        from plumbing.machine import check_reachable

        check_reachable("--address", args.address)   # seconds, not Ray's minutes (checked again before ray.init)
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
