"""The centred (Pinelis) form of ``e_G`` and the centred variance's upper bound (THEORY §6b (b), issue 29).

Monte Carlo with a known answer (as ``tests/bounds/test_localised_coverage.py``): each bound,
evaluated from :mod:`bounds.localised` (never re-typed), is applied to ``REPS`` samples; its
failure rate is tested against its level (one-sided exact binomial test at 0.01); the bound
with a constant halved must be rejected.

* ``e_G`` at the *centred* variance ``s^2 = E||xi - E xi||^2``: ``xi = g +- s`` (``G = g``), far
  from 0, so the uncentred ``E xi^2 = g^2 + s^2`` is 37 times ``s^2``: Pinelis' inequality holds
  with ``s^2`` (its ``b^2`` is the sum of the conditional variances of ``xi_i - E xi``) and the
  range ``||xi - E xi|| <= 2 b_xi``.
* the centred variance's bound ``min(u, b^2) - max(0, ||G_n|| - e_n)^2``: ``xi = +-b`` (``G = 0``,
  ``s^2 = b^2 = E xi^2``), where it fails exactly when ``||G_n|| > e_n``; ``e_n`` halved is flagged.
"""
import numpy as np
import sympy as sp
from scipy.stats import binomtest

from bounds import localised as loc
from bounds._statement import evaluate

LEVEL, TEST_LEVEL, REPS = 0.05, 0.01, 4000


def _flagged(fails: np.ndarray, level: float = LEVEL) -> bool:
    return binomtest(int(np.sum(fails)), fails.size, level, alternative="greater").pvalue < TEST_LEVEL


def _centred_e_G_fails(factor, M=20000, seed=0, g=3.0, s=0.5):
    k = np.random.default_rng(seed).binomial(M, 0.5, size=REPS).astype(np.float64)
    dev = np.abs(s * (2 * k / M - 1))                       # |G_S - G|, xi = g + s or g - s
    bound = evaluate(loc.e_G(loc.delta_G), {"b_xi": g + s, "sigma2_ub": s**2, "M": M, "delta_G": LEVEL})
    return dev > factor * bound


def test_e_G_at_the_centred_variance_covers_and_halved_is_flagged():
    assert not _flagged(_centred_e_G_fails(1.0))
    assert _flagged(_centred_e_G_fails(0.5, seed=1))


def test_e_G_at_the_centred_variance_is_smaller_than_at_the_uncentred():
    vals = {"b_xi": 3.5, "M": 20000, "delta_G": LEVEL}
    centred = float(evaluate(loc.e_G(loc.delta_G), {**vals, "sigma2_ub": 0.25}))
    uncentred = float(evaluate(loc.e_G(loc.delta_G), {**vals, "sigma2_ub": 9.25}))
    assert centred < uncentred / 4


_n, _mean, _V, _G, _lv = sp.symbols("n_c mean_c V_c G_c level_c", nonnegative=True)


def _centred_bound_fails(factor, n=20000, seed=0, b=0.7):
    """``xi = +-b``: the bound from the library; with ``factor``, the same with ``e_n`` scaled (re-composed here)."""
    k = np.random.default_rng(seed).binomial(n, 0.5, size=REPS).astype(np.float64)
    G_n = np.abs(b * (2 * k / n - 1))
    vals = {"n_c": n, "mean_c": b**2, "V_c": 0.0, "G_c": G_n, "level_c": LEVEL, "b_xi": b}
    full = evaluate(loc.centred_variance_upper_expression(_n, _mean, _V, _G, _lv), vals)
    u = min(float(evaluate(loc.sigma2_upper_expression(_n, _mean, _V, _lv / 2), vals)), b**2)
    e_n = float(evaluate(loc.e_G(loc.delta_G, 1, loc.sigma2_ub), {"b_xi": b, "M": n, "delta_G": LEVEL / 2,
                                                                   "sigma2_ub": u}))
    recomposed = np.maximum(0.0, u - np.maximum(0.0, G_n - e_n) ** 2)
    assert np.allclose(full, recomposed, rtol=1e-12, atol=0)        # the library's composition, checked here
    bound = recomposed if factor == 1 else np.maximum(0.0, u - np.maximum(0.0, G_n - factor * e_n) ** 2)
    return bound < b**2                                               # s^2 = b^2 here


def test_centred_variance_bound_covers_and_halved_is_flagged():
    assert not _flagged(_centred_bound_fails(1.0))
    assert _flagged(_centred_bound_fails(0.5, seed=1))


def test_centred_variance_bound_is_below_the_uncentred_when_the_mean_is_large():
    """xi = 3 +- 0.5 seen on 10^5 samples: E xi^2 = 9.25, s^2 = 0.25; the centred bound is far below the uncentred."""
    n, g, s, b = 100_000, 3.0, 0.5, 3.5
    mean, var = g**2 + s**2, 4 * g**2 * s**2
    vals = {"n_c": n, "mean_c": mean, "V_c": var, "G_c": g, "level_c": LEVEL, "b_xi": b}
    centred = float(evaluate(loc.centred_variance_upper_expression(_n, _mean, _V, _G, _lv), vals))
    uncentred = float(evaluate(loc.sigma2_upper_expression(_n, _mean, _V, _lv), vals))
    assert s**2 <= centred < uncentred / 4


# ---- E||phi||^2's bound (issue 29: (b)'s remainder at sqrt(tr_ub) instead of rho_phi) -------------------
def _trace_fails(factor, n=20000, seed=0, rho=1.5, p=0.1):
    """``||phi||^2 in {0, rho^2}`` with ``P(rho^2) = p``: ``E||phi||^2 = p rho^2``."""
    k = np.random.default_rng(seed).binomial(n, p, size=REPS).astype(np.float64)
    mean = rho**2 * k / n
    var = n / (n - 1) * mean * (rho**2 - mean)
    nn, m, V, lv = sp.symbols("nn m V lv", positive=True)
    dev = loc.trace_upper_expression(nn, m, V, lv) - m
    upper = mean + factor * evaluate(dev, {"nn": n, "V": var, "lv": LEVEL, "rho_phi": rho})
    return upper < p * rho**2


def test_trace_bound_covers_and_halved_is_flagged():
    assert not _flagged(_trace_fails(1.0))
    assert _flagged(_trace_fails(0.5, seed=1))
