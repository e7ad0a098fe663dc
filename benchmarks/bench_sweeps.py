"""Sweep parallelism: ``--workers 2`` against one worker, as a ratio measured in the same run.

Run ``python benchmarks/bench_sweeps.py`` (``--cells N`` to change the sweep size). A
sweep of small ``run`` cells (tiny teacher task, ~1 s per cell) is run with one worker
(``threads = cores``, the serial baseline) and with ``--workers 2`` (``threads = cores //
2`` each: the driver plus one spawned process), alternately, each in a fresh folder so
that nothing is reused. Target (issue 11): on 2 cores, ``--workers 2`` at least 1.6x
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

from numerics.studies.sweeps import available_cores, make_spec, sweep  # noqa: E402

SMALL_CELL = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 1000, "steps": 100},
              "block_training": {"steps": 20, "batch_size": 512}}


def _spec(cells: int):
    depths = [1, 2, 3, 4]
    seeds = list(range((cells + len(depths) - 1) // len(depths)))
    spec = make_spec(SMALL_CELL, {"model.depth": depths, "seed": seeds})
    return spec.__class__(**{**spec.__dict__, "cells": spec.cells[:cells]})


def _time(spec, workers: int) -> float:
    folder = Path(tempfile.mkdtemp(prefix="bench_sweeps_"))
    try:
        start = time.perf_counter()
        sweep(spec, folder, workers=workers, progress=False)
        return time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench(cells: int, repeats: int) -> dict:
    spec = _spec(cells)
    times = {1: [], 2: []}
    for _ in range(repeats):
        for w in (1, 2):
            times[w].append(_time(spec, w))
    med = {w: statistics.median(v) for w, v in times.items()}
    return {"cells": len(spec.cells), "serial_s": med[1], "workers2_s": med[2], "ratio": med[1] / med[2],
            "all": times}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cells", type=int, default=16)
    p.add_argument("--repeats", type=int, default=2)
    args = p.parse_args(argv)
    print(f"cores: {available_cores()}, load average: {os.getloadavg()}")
    for n in (args.cells, 2):
        r = bench(n, args.repeats)
        verdict = "PASS" if (r["ratio"] >= 1.6 if n == args.cells else r["ratio"] >= 0.95) else "MISS"
        print(f"{r['cells']:>3} cells: 1 worker {r['serial_s']:.1f} s, --workers 2 {r['workers2_s']:.1f} s, "
              f"speed-up {r['ratio']:.2f}x  [{verdict}: target {'>= 1.6x' if n == args.cells else 'never slower'}]")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
