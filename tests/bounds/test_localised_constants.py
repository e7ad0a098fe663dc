"""The linear constants 4/3 (``e_G``) and 14/3 (the empirical-Bernstein tails of differences) by Monte Carlo.

Both are the range ("linear") terms of Bernstein-type bounds, which carry the bound only where
the variance is tiny and the sample small: a *rare large value*. Their laws here are two-point:

* ``e_G`` (Pinelis in Bernstein form, :func:`bounds.localised.e_G`): ``xi = +b`` with probability
  ``p``, ``-b`` otherwise, so ``||xi - E xi||`` reaches ``2 b = a``; ``sigma^2`` is the *centred*
  variance ``4 b^2 p (1-p)`` (the inequality holds with it; the uncentred ``E||xi||^2`` of
  THEORY §6b is an upper bound of it, so a bound that fails here fails there too, and one that
  covers with ``sigma^2`` covers with any upper bound of it).
* the empirical-Bernstein tail (:func:`bounds.localised.bernstein_difference`, range ``2 r_d``):
  ``d = +r_d`` with probability ``p``, ``-r_d`` otherwise; the failure is ``E d - mean_n > t``.

Finding (an exact computation over the sufficient statistic, every ``n`` in 1..1000, ``p`` on a
log grid, levels 1e-3..0.9): **halving either constant alone never under-covers** on these laws
(the failure probability stays below the level), nor does it on the symmetric or ``{0, b}``
laws; so no Monte-Carlo test can catch a halving (the symbolic mutants of ``proofs_check`` do).
The largest weakening that does under-cover: ``4/3 -> 0.2`` (x 0.15) for ``e_G`` (failure 1.8
times the level at ``M = 3``), ``14/3 -> 7/6`` (x 0.25) for the tail (8.6 times at ``n = 200``).
These tests show coverage of the true bounds and power against those weakenings: one-sided exact
binomial tests of the failure rate against the level, at test level ``TEST_LEVEL = 0.01``.
"""
import numpy as np
import pytest
from scipy.stats import binom, binomtest

from bounds import localised as loc
from bounds._statement import evaluate

TEST_LEVEL, REPS = 0.01, 100_000


def _flagged(fails: np.ndarray, level: float) -> bool:
    return binomtest(int(np.sum(fails)), fails.size, level, alternative="greater").pvalue < TEST_LEVEL


def _e_G_fails(factor: float, M: int, p: float, level: float, seed: int) -> np.ndarray:
    """``||G_S - G|| > e_G`` with its linear term ``4 b L/(3M)`` times ``factor``."""
    b = 0.5
    k = np.random.default_rng(seed).binomial(M, p, size=REPS)
    dev = np.abs(2 * b * (k / M - p))                     # |mean(xi) - E xi| for xi = +-b
    vals = {"b_xi": b, "sigma2_ub": 4 * b**2 * p * (1 - p), "M": M, "delta_G": level}
    full = float(evaluate(loc.e_G(loc.delta_G), vals))
    linear = float(evaluate(loc.e_G(loc.delta_G), {**vals, "sigma2_ub": 0.0}))   # 4 b L / (3M)
    assert linear == pytest.approx(4 * b * np.log(2 / level) / (3 * M), rel=1e-12)
    return dev > full - (1 - factor) * linear


def _tail_fails(factor: float, n: int, p: float, level: float, seed: int) -> np.ndarray:
    """``E d - mean_n > t`` for the Maurer--Pontil tail with its range term ``14 r_d L/(3(n-1))`` times ``factor``."""
    r = 0.3
    k = np.random.default_rng(seed).binomial(n, p, size=REPS).astype(np.float64)
    m = k / n
    mean, var = r * (2 * m - 1), n / (n - 1) * (2 * r) ** 2 * m * (1 - m)
    vals = {"n": n, "V": var, "lv": level, "r_d": r}
    import sympy as sp

    n_, V, lv, rd = sp.Symbol("n", positive=True), sp.Symbol("V", nonnegative=True), sp.Symbol("lv", positive=True), \
        sp.Symbol("r_d", positive=True)
    expr = loc.bernstein_difference(n_, V, lv, 1, 2 * rd)
    full = np.asarray(evaluate(expr, vals), dtype=np.float64)
    linear = float(evaluate(expr, {**vals, "V": 0.0}))
    assert linear == pytest.approx(14 * r * np.log(2 / level) / (3 * (n - 1)), rel=1e-12)
    return r * (2 * p - 1) - mean > full - (1 - factor) * linear


# (M or n, p, level) where the linear term carries the bound (from the exact search of the module docstring)
E_G_WORLD, TAIL_WORLD = (3, 0.006, 0.01), (200, 0.0235, 0.001)


def test_e_G_covers_a_rare_large_value_and_its_linear_constant_weakened_is_flagged():
    assert not _flagged(_e_G_fails(1.0, *E_G_WORLD, seed=0), E_G_WORLD[2])
    assert _flagged(_e_G_fails(0.15, *E_G_WORLD, seed=1), E_G_WORLD[2])        # 4/3 -> 0.2


def test_bernstein_tail_covers_a_rare_large_value_and_its_range_constant_weakened_is_flagged():
    assert not _flagged(_tail_fails(1.0, *TAIL_WORLD, seed=2), TAIL_WORLD[2])
    assert _flagged(_tail_fails(0.25, *TAIL_WORLD, seed=3), TAIL_WORLD[2])     # 14/3 -> 7/6


def _exact_failure(kind: str, factor: float, size: int, p: float, level: float) -> float:
    """The failure probability exactly, summed over the binomial count (no Monte Carlo)."""
    k = np.arange(size + 1)
    pk = binom.pmf(k, size, p)
    L, m = np.log(2 / level), k / size
    if kind == "e_G":      # b = 1/2: |m - p| > factor 4 b L/(3M) + sqrt(2 s^2 L/M)
        fail = np.abs(m - p) > factor * 2 * L / (3 * size) + np.sqrt(2 * p * (1 - p) * L / size)
    else:                  # r_d = 1/2, range 1: p - m > sqrt(2 V L/n) + factor 7 L/(3(n-1))
        V = size / (size - 1) * m * (1 - m)
        fail = p - m > np.sqrt(2 * V * L / size) + factor * 7 * L / (3 * (size - 1))
    return float(pk[fail].sum())


@pytest.mark.parametrize("kind,world", [("e_G", E_G_WORLD), ("tail", TAIL_WORLD)])
def test_halving_alone_is_not_detectable_here_exactly(kind, world):
    """The record of the finding at the test's own world: halved, the bound still covers (exactly);
    the weakening the Monte-Carlo test flags under-covers (exactly), by an independent formula."""
    size, p, level = world
    assert _exact_failure(kind, 1.0, size, p, level) <= level
    assert _exact_failure(kind, 0.5, size, p, level) <= level
    assert _exact_failure(kind, 0.15 if kind == "e_G" else 0.25, size, p, level) > 1.5 * level
