"""Sweep parallelism: ``--workers 2`` against one worker, as a ratio measured in the same run.

Run ``python benchmarks/bench_sweeps.py`` (``--cells N`` to change the sweep size). A
sweep of small ``run`` cells (the teacher task, a few seconds per cell) is run with one worker
(``threads = cores``, the serial baseline; and, for reference, on one thread) and with
``--workers 2`` (``threads = cores // 2`` each: the driver plus one spawned process),
alternately, each in a fresh folder so that nothing is reused. Target (issue 11): on 2 cores,
``--workers 2`` at least 1.6x
faster than one worker, and never slower -- also for a sweep shorter than a worker's
start-up (``--cells 2``). On a shared machine the ratio is noisy: report the load.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plumbing.config import merge_config  # noqa: E402
from numerics.studies.reproduce import SUITES  # noqa: E402
from numerics.studies.sweeps import available_cores, make_spec, sweep  # noqa: E402

#: Small cells: the quick suite's teacher depth sweep at half the reference steps (~1 s per cell on an idle
#: core; 2-4 s on a loaded machine).
SMALL_CELL = merge_config(SUITES["quick"].sweeps["depth"]["base"], {"reference": {"steps": 300}})


def _spec(cells: int):
    depths = [1, 2, 3, 4]
    seeds = list(range((cells + len(depths) - 1) // len(depths)))
    spec = make_spec(SMALL_CELL, {"model.depth": depths, "seed": seeds})
    return spec.__class__(**{**spec.__dict__, "cells": spec.cells[:cells]})


def _time(spec, workers: int, threads: int | None = None) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench_sweeps_"))
    try:
        start = time.perf_counter()
        sweep(spec, folder, workers=workers, threads=threads, progress=False)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench(cells: int, repeats: int) -> dict:
    """Medians of: one worker (all cores' threads), one worker on one thread, two workers."""
    spec = _spec(cells)
    cores = available_cores()
    runs = {"serial": (1, cores), "serial_1thread": (1, 1), "workers2": (2, max(1, cores // 2))}
    times = {k: [] for k in runs}
    for _ in range(repeats):
        for k, (w, t) in runs.items():
            times[k].append(_time(spec, w, t))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"cells": len(spec.cells), **{f"{k}_s": v for k, v in med.items()},
            "ratio": med["serial"] / med["workers2"], "ratio_1thread": med["serial_1thread"] / med["workers2"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=48)   # ~1 s cells: a spawned worker pays ~5-10 s of start-up
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    print(f"cores: {available_cores()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"load average: {os.getloadavg()}")
    for n in (args.cells, 2):
        r = bench(n, args.repeats)
        verdict = "PASS" if (r["ratio"] >= 1.6 if n == args.cells else r["ratio"] >= 0.95) else "MISS"
        print(f"{r['cells']:>3} cells: 1 worker {r['serial_s']:.1f} s ({available_cores()} threads; "
              f"{r['serial_1thread_s']:.1f} s on 1 thread), --workers 2 {r['workers2_s']:.1f} s: speed-up "
              f"{r['ratio']:.2f}x ({r['ratio_1thread']:.2f}x vs 1 thread)  "
              f"[{verdict}: target {'>= 1.6x' if n == args.cells else 'never slower'}]")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
