"""``depthcert reproduce --suite quick|full|mnist1d-quick|mnist1d|mnist1d-full --out DIR``: every empirical claim of THEORY §8-§9.

Runs the suite's studies (resumable: re-running ``DIR`` reuses every stored cell),
writes ``DIR/report.md`` (one row per claim: what the paper says, what we measured with
intervals, the verdict from a rule fixed in code), ``DIR/claims.json`` and the figures.
``quick`` takes under 10 minutes on 2 CPU cores; ``full`` is sized for a bigger machine
or a Ray cluster (``--backend ray``). Exit 0 when the report was written (verdicts are
answers), 2 on bad input.
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="do the papers' empirical claims hold? measure each, write a report",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--suite", required=True, choices=("quick", "full", "mnist1d-quick", "mnist1d", "mnist1d-full"),
                   help="quick: light sizes, under 10 min on 2 cores; "
                   "full: sized for a bigger machine or a Ray cluster; mnist1d-quick / mnist1d / mnist1d-full: "
                   "1-D residual CNNs on MNIST-1D (10 min, 90 min with --workers 2 on 2 cores, a Ray cluster)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder; running again with it resumes")
    p.add_argument("--backend", default="local", help="local (default): processes on this machine; ray: Ray tasks")
    p.add_argument("--workers", type=int, default=None, help="local: worker processes (default: one per core)")
    p.add_argument("--threads", type=int, default=None, help="threads per cell (default: cores // workers, at most $OMP_NUM_THREADS when it is set)")
    p.add_argument("--address", default=None, metavar="HOST:PORT", help="ray: address of an existing cluster")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress bars")
    p.add_argument("--json", action="store_true", help="print the content of claims.json as one JSON object")


DESCRIPTION = """\
Do the papers' empirical claims hold when measured here? This runs the studies behind
every empirical claim of the theory (the depth power law, the best depth against the
data size, saturation, growth against training from scratch, ...), each as resumable
cells, and writes a report with one row per claim: what the paper says, what was
measured (with intervals), and the verdict of a rule fixed in advance."""

EPILOG = epilog(
    [("stdout", "one line per claim with its verdict, then where the report is"),
     ("DIR/report.md", "the report: a table of the claims, then one section each"),
     ("DIR/claims.json", "the same as data"),
     ("DIR/figures/", "the figures the report shows"),
     ("DIR/sweeps/", "the stored cells of each sweep of the suite (what a re-run reuses)"),
     ("DIR/growth/", "with --suite quick or full: the stored growth runs (one file per seed)"),
     ("DIR/ag_max/", "with --suite quick or full: the stored AG_max runs (one file per seed)"),
     ("DIR/validity/", "with --suite quick or full: the validity study of the bounds")],
    ["depthcert reproduce --suite quick --out runs/reproduce"],
    [(0, "the report was written (a claim that is not reproduced is a verdict, not an error)"), BAD_INPUT])


def run(args: argparse.Namespace) -> int:
    from depthcert._io import dumps
    from numerics.studies.reproduce import default_workers, reproduce

    workers = args.workers if args.workers is not None else default_workers(args.backend)
    rep = reproduce(args.suite, args.out, backend=args.backend, workers=workers, threads=args.threads,
                    address=args.address, progress=not args.no_progress)
    if args.json:
        print(dumps(rep.to_dict()))
        return 0
    width = max(len(c.claim.id) for c in rep.claims)
    for c in rep.claims:
        print(f"{c.claim.id:<{width}}  {c.verdict}")
    print(f"wrote {rep.out_dir}/report.md ({rep.wall_s / 60:.1f} min)")
    return 0
