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

Everything is vectorised over ``draws`` independent repetitions. When ``draws * n_class``
is small, every function's count on ``S`` is drawn, and the empirical variants get a valid
data-dependent Rademacher value: Massart's finite-class lemma on ``S``,
``Rad_S(l o F) <= max_f ||l_f(S)||_2 sqrt(2 ln n_class) / M = B sqrt(max_f count_f)
sqrt(2 ln n_class) / M`` (losses in ``{0, B}``), passed as ``rad_hat`` with Monte-Carlo
error 0 (the event ``E_MC`` then never occurs). Otherwise only three empirical risks on
``S`` matter (``f~_pop``, ``f_new``, ``f~_S``), so the minimum of ``count`` i.i.d. binomials
is drawn exactly by inverting its CDF ``1 - (1 - F(k))^count``: classes of millions of
functions cost nothing (and the empirical variants are skipped).
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


EXPLICIT = 4_000_000   # draws * n_class up to which every count on S is drawn


def _counts_on_S(draws, M, n_class, r, rng):
    """``(pop, first, second, max_count)``: f~_pop's count, the minima of the two halves' other counts, the maximum."""
    if draws * n_class <= EXPLICIT:
        c = rng.binomial(M, r, size=(draws, n_class))
        return c[:, 0], c[:, 1:n_class // 2].min(1), c[:, n_class // 2:].min(1), c.max(1)
    pop = rng.binomial(M, r, size=draws)                              # f~_pop, index 0 of F
    first = min_binomial(M, r, n_class // 2 - 1, draws, rng)          # rest of the first half of F
    second = min_binomial(M, r, n_class - n_class // 2, draws, rng)   # second half
    return pop, first, second, None


def draw(draws: int, *, M=400, K=2000, n_class=200, r=0.4, delta_R=0.05, B=1.0, seed=0, **levels):
    """``(setup, inputs, observed, truth)`` for ``draws`` independent ``(S, T)``; ``levels``: tail levels.

    ``inputs`` has a Massart ``rad_hat`` (error 0, ``delta_mc = delta/10``) when every count is drawn.
    """
    rng = np.random.default_rng(seed)
    pop, first, second, max_count = _counts_on_S(draws, M, n_class, r, rng)
    RS_pop, RS_jS = B * pop / M, B * np.minimum(pop, first) / M       # f~_S: ERM over the first half
    RS_new = np.minimum(RS_jS, B * second / M)                        # f_new: ERM over F
    p_old = r + delta_R
    LT = {k: B * rng.binomial(K, p, size=draws) / K for k, p in (("new", r), ("old", p_old), ("jump_S", r))}
    setup = Setup(L_test_old=LT["old"], delta_R=np.full(draws, delta_R), delta_erm=RS_pop - RS_new,
                  delta_test_R=LT["old"] - LT["jump_S"], M=M, K=K, delta=0.05, delta_prime=0.05, B=B,
                  L_loss=1 / math.sqrt(2), family="readout",
                  block=dict(d=1, L_top=1.0, rho_phi=B * math.sqrt(2 * math.log(n_class)), nu_V=1.0),
                  delta_erm_S=RS_jS - RS_new)
    mc = {} if max_count is None else dict(rad_hat=massart(max_count, M, n_class, B), rad_hat_mc_error=0.0,
                                           delta_mc=0.005)
    inputs = VariantInputs(var_S_jump_pop=_variance(RS_pop, M, B), var_T_new=_variance(LT["new"], K, B),
                           var_T_old=_variance(LT["old"], K, B), var_T_jump_S=_variance(LT["jump_S"], K, B),
                           **mc, **levels)
    truth = {"R_new": r, "R_old": p_old, "RS_new": RS_new, "RS_pop": RS_pop, "L_test_new": LT["new"],
             "L_test_old": LT["old"], "L_test_jump_S": LT["jump_S"]}
    return setup, inputs, LT["new"], truth


def massart(max_count, M, n_class, B):
    """Massart's lemma on ``S``: ``max_f ||l_f(S)||_2 sqrt(2 ln n_class) / M`` with ``||l_f||_2 = B sqrt(count_f)``.

    With ``L_loss L_top sqrt(2) = 1`` (the toy's constants) this is the vector Rademacher value itself.
    """
    return B * np.sqrt(max_count) * math.sqrt(2 * math.log(n_class)) / M


def with_levels(setup: Setup, delta: float, delta_prime: float, inputs: VariantInputs | None = None):
    """``setup`` at levels ``(delta, delta')``; with ``inputs``, also ``inputs`` with ``delta_mc = delta/10``."""
    import dataclasses

    out = dataclasses.replace(setup, delta=delta, delta_prime=delta_prime)
    if inputs is None:
        return out
    return out, dataclasses.replace(inputs, delta_mc=None if inputs.delta_mc is None else delta / 10)


def clopper_pearson(k: int, n: int, confidence: float) -> tuple[float, float]:
    """Two one-sided Clopper-Pearson bounds ``(lower, upper)`` on a rate, each at ``confidence``."""
    from scipy.stats import beta

    alpha = 1 - confidence
    lower = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return lower, upper
