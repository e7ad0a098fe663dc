"""Benchmark: the eight THEORY §6 variants on a batch of setups vs the paper's two routes, same run.

Run: ``python benchmarks/bench_variants.py [--n 1000000]``. Prints both times and their
ratio (variants / routes), measured in the same run on the same setups, and the cost of
the ``any_route`` evaluation (every route again, at its levels times the common factor of the union).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repository's packages

from benchmarks.bench_bounds import random_setups  # noqa: E402
from bounds.routes import evaluate_routes  # noqa: E402
from bounds.variant_routes import VariantInputs, evaluate_variants  # noqa: E402


def random_inputs(setups, seed: int = 1) -> VariantInputs:
    rng = np.random.default_rng(seed)
    n, B = np.size(setups.M), np.asarray(setups.B)
    var = lambda: rng.uniform(0, 0.25, n) * B**2  # noqa: E731
    return VariantInputs(var_S_jump_pop=var(), var_T_new=var(), var_T_old=var(), var_T_jump_S=var(),
                         rad_hat=rng.uniform(0, 0.01, n), rad_hat_mc_error=rng.uniform(0, 1e-3, n),
                         delta_mc=np.asarray(setups.delta) / 10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args()
    setups, small = random_setups(args.n), random_setups(10)
    inputs = random_inputs(setups)
    evaluate_routes(small, 0.1)
    evaluate_variants(small, 0.1, random_inputs(small))   # warm the lambdify caches
    t0 = time.perf_counter()
    evaluate_routes(setups, 0.1, validate=False)
    t_routes = time.perf_counter() - t0
    t0 = time.perf_counter()
    rep = evaluate_variants(setups, 0.1, inputs, validate=False, any_route=False)
    t_var = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = evaluate_variants(setups, 0.1, inputs, validate=False)
    t_any = time.perf_counter() - t0
    assert len(rep.variants) == 8 and full.any_route is not None
    print(f"paper routes (2):  {args.n} setups in {t_routes:.3f} s")
    print(f"variants (8):      {args.n} setups in {t_var:.3f} s ({t_var / args.n * 1e9:.0f} ns/setup)")
    print(f"ratio variants / routes: {t_var / t_routes:.2f}x (per route: {t_var / 8 / (t_routes / 2):.2f}x)")
    print(f"with any_route (all 10 routes again at their scaled levels): {t_any:.3f} s, {t_any / t_var:.2f}x the variants alone")


if __name__ == "__main__":
    main()
