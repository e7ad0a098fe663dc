"""A world where every population risk is known, for validity tests of the routes and variants.

Losses are ``B * Bernoulli(p)``: a function's sample mean on ``n`` points is
``B Binomial(n, p) / n`` and the unbiased sample variance of its losses is
``B^2 n/(n-1) m (1-m)`` (``m`` the mean over ``B``), so whole samples are never drawn.

* ``F``: ``n_class`` functions, each with risk ``r``; ``f~_pop`` is one of them (index 0),
  fixed before ``S``. Its uniform deviation is bounded by Massart's lemma,
  ``Rad_n(l o F) <= B sqrt(2 ln n_class / n)``; with ``L_loss = 1/sqrt(2)``, ``L_top = 1``,
  ``d = 1``, ``nu_V = 1`` and ``rho_phi = B sqrt(2 ln n_class)`` the readout closed form of
  :mod:`bounds.generalisation` is exactly that bound, so every route applies as stated.
* ``f_old``: a fixed function with risk ``r + delta_R`` (independent of ``S`` and ``T``).
* ``f_new``: the empirical risk minimiser over ``F`` on ``S`` (selection with (C2)).
* ``f~_S``: the minimiser on ``S`` over the first half of ``F`` (depends on ``S``).

Everything is vectorised over ``draws`` independent repetitions. Only three empirical risks
on ``S`` matter (``f~_pop``, ``f_new``, ``f~_S``), so the minimum of ``count`` i.i.d.
binomials is drawn exactly by inverting its CDF ``1 - (1 - F(k))^count``: classes of
millions of functions cost nothing.
"""
from __future__ import annotations

import math

import numpy as np

from bounds.routes import Setup
from bounds.variant_routes import VariantInputs


def _variance(mean, n, B):
    m = mean / B
    return B**2 * n / (n - 1) * m * (1 - m)


def min_binomial(n: int, p: float, count: int, size: int, rng) -> np.ndarray:
    """The minimum of ``count`` i.i.d. ``Binomial(n, p)``, ``size`` times (exact inverse-CDF draw)."""
    from scipy.stats import binom

    cdf = binom.cdf(np.arange(n + 1), n, p)
    below = np.minimum(cdf, 1.0 - np.finfo(float).eps)      # log1p(-1) = -inf; F(n) = 1 is set below
    cdf_min = -np.expm1(count * np.log1p(-below))
    cdf_min[cdf >= 1.0] = 1.0
    return np.searchsorted(cdf_min, rng.random(size), side="left")


def draw(draws: int, *, M=400, K=2000, n_class=200, r=0.4, delta_R=0.05, B=1.0, seed=0, **levels):
    """``(setup, inputs, observed, truth)`` for ``draws`` independent ``(S, T)``; ``levels``: tail levels."""
    rng = np.random.default_rng(seed)
    pop = rng.binomial(M, r, size=draws)                              # f~_pop, index 0 of F
    first = min_binomial(M, r, n_class // 2 - 1, draws, rng)          # rest of the first half of F
    second = min_binomial(M, r, n_class - n_class // 2, draws, rng)   # second half
    RS_pop, RS_jS = B * pop / M, B * np.minimum(pop, first) / M       # f~_S: ERM over the first half
    RS_new = np.minimum(RS_jS, B * second / M)                        # f_new: ERM over F
    p_old = r + delta_R
    LT = {k: B * rng.binomial(K, p, size=draws) / K for k, p in (("new", r), ("old", p_old), ("jump_S", r))}
    setup = Setup(L_test_old=LT["old"], delta_R=np.full(draws, delta_R), delta_erm=RS_pop - RS_new,
                  delta_test_R=LT["old"] - LT["jump_S"], M=M, K=K, delta=0.05, delta_prime=0.05, B=B,
                  L_loss=1 / math.sqrt(2), family="readout",
                  block=dict(d=1, L_top=1.0, rho_phi=B * math.sqrt(2 * math.log(n_class)), nu_V=1.0),
                  delta_erm_S=RS_jS - RS_new)
    inputs = VariantInputs(var_S_jump_pop=_variance(RS_pop, M, B), var_T_new=_variance(LT["new"], K, B),
                           var_T_old=_variance(LT["old"], K, B), var_T_jump_S=_variance(LT["jump_S"], K, B),
                           **levels)
    truth = {"R_new": r, "R_old": p_old, "RS_new": RS_new, "RS_pop": RS_pop, "L_test_new": LT["new"],
             "L_test_old": LT["old"], "L_test_jump_S": LT["jump_S"]}
    return setup, inputs, LT["new"], truth


def with_levels(setup: Setup, delta: float, delta_prime: float) -> Setup:
    import dataclasses

    return dataclasses.replace(setup, delta=delta, delta_prime=delta_prime)


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Two one-sided Clopper-Pearson bounds ``(lower, upper)`` on a rate, each at ``confidence``."""
    from scipy.stats import beta

    alpha = 1 - confidence
    lower = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return lower, upper
