"""``depthcert reproduce --suite quick|full --out DIR``: every empirical claim of THEORY §8-§9.

Runs the suite's studies (resumable: re-running ``DIR`` reuses every stored cell),
writes ``DIR/report.md`` (one row per claim: what the paper says, what we measured with
intervals, the verdict from a rule fixed in code), ``DIR/claims.json`` and the figures.
``quick`` takes under 10 minutes on 2 CPU cores; ``full`` is sized for a bigger machine
or a Ray cluster (``--backend ray``). Exit 0 when the report was written (verdicts are
answers), 2 on bad input.
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help="reproduce the papers' empirical claims and write a report",
                       description="Measure each empirical claim of THEORY §8-§9 and write DIR/report.md.")
    p.add_argument("--suite", required=True, choices=("quick", "full"), help="quick (< 10 min, 2 cores) or full")
    p.add_argument("--out", required=True, help="output folder (re-running it resumes)")
    p.add_argument("--backend", default="local", help="local (default) or ray")
    p.add_argument("--workers", type=int, default=None, help="local: worker processes (default: one per core)")
    p.add_argument("--threads", type=int, default=None, help="threads per cell (default: cores // workers)")
    p.add_argument("--address", default=None, help="ray: address of an existing cluster")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print claims.json's content as one JSON object")


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
