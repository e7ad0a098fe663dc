"""Benchmark: vectorised (lambdified) route evaluation vs per-setup sympy ``subs``.

Run: ``python benchmarks/bench_bounds.py [--n 1000000]``. Prints the time per setup of
both and their ratio, measured in the same run (the baseline is evaluated on a small
subsample, since ``subs`` costs milliseconds per setup).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from bounds import THEOREM_2, THEOREM_3, _symbols as s
from bounds.generalisation import eps_expression
from bounds.routes import Setup, evaluate_routes


def random_setups(n: int, seed: int = 0) -> Setup:
    rng = np.random.default_rng(seed)
    return Setup(
        L_test_old=rng.uniform(0.1, 2, n), delta_R=rng.uniform(1e-3, 0.5, n), delta_erm=rng.uniform(0, 0.1, n),
        delta_test_R=rng.uniform(-0.1, 0.5, n), M=rng.uniform(1e3, 1e8, n), K=rng.uniform(1e3, 1e8, n),
        delta=rng.uniform(1e-4, 0.1, n), delta_prime=rng.uniform(1e-4, 0.1, n), B=rng.uniform(0.5, 10, n),
        L_loss=rng.uniform(0.5, 3, n), family="readout",
        block=dict(d=rng.integers(1, 64, n).astype(float), L_top=rng.uniform(0.5, 5, n),
                   rho_phi=rng.uniform(0.5, 5, n), nu_V=rng.uniform(0.01, 1, n)))


def per_setup_subs(setup: Setup, i: int) -> tuple[float, float]:
    """Baseline: both bounds of setup ``i`` by sympy substitution."""
    vals = {getattr(s, k): float(np.asarray(getattr(setup, k))[i]) for k in
            ("L_test_old", "delta_R", "delta_erm", "delta_test_R", "M", "K", "delta", "delta_prime", "B", "L_loss")}
    vals.update({getattr(s, k): float(v[i]) for k, v in setup.block.items()})
    vals[s.n_grid] = 1
    vals[s.eps_M] = eps_expression("readout", s.M, s.delta, grid=True).subs(vals)
    vals[s.eps_K] = eps_expression("readout", s.K, s.delta_prime, grid=True).subs(vals)
    return float(THEOREM_2.bound.subs(vals)), float(THEOREM_3.bound.subs(vals))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--baseline-n", type=int, default=200)
    args = ap.parse_args()
    setups = random_setups(args.n)
    evaluate_routes(random_setups(10), 0.1)   # warm the lambdify cache
    t0 = time.perf_counter()
    rep = evaluate_routes(setups, 0.1, validate=False)
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    base = [per_setup_subs(setups, i) for i in range(args.baseline_n)]
    t_subs = (time.perf_counter() - t0) / args.baseline_n
    np.testing.assert_allclose([b[0] for b in base], rep.population.bound[: args.baseline_n], rtol=1e-10)
    np.testing.assert_allclose([b[1] for b in base], rep.direct.bound[: args.baseline_n], rtol=1e-10)
    per = t_vec / args.n
    print(f"vectorised evaluate_routes: {args.n} setups in {t_vec:.3f} s ({per * 1e9:.1f} ns/setup, both routes, "
          f"min_M/min_K included)")
    print(f"per-setup sympy subs:       {t_subs * 1e3:.3f} ms/setup (bounds only; {args.baseline_n} setups)")
    print(f"ratio (subs / vectorised, per setup): {t_subs / per:,.0f}x")


if __name__ == "__main__":
    main()
