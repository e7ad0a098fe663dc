"""Finite-sample confidence bounds for quantities *estimated* before they enter a route.

When ``Delta_R`` is not known exactly but estimated from a Monte-Carlo sample, Theorem 2
may be applied to any ``Delta_R' <= Delta_R`` (each premise stays true with the smaller
margin); the event ``Delta_R' > Delta_R`` then joins the union bound. This project's
**Choice**: ``Delta_R'`` is the empirical-Bernstein lower bound below, and its level is
added to the population route's failure probability (``Setup.delta_R_failure``).
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from bounds._statement import evaluate
from plumbing.validation import InputError

_n, _V, _level, _range = sp.symbols("n V level value_range", positive=True)


def maurer_pontil_deviation(n: sp.Expr, variance: sp.Expr, level: sp.Expr, value_range: sp.Expr) -> sp.Expr:
    """``sqrt(2 V ln(2/level) / n) + 7 R ln(2/level) / (3 (n - 1))``: Maurer--Pontil (2009), Thm 4.

    One-sided deviation of the mean of ``n >= 2`` i.i.d. values in an interval of length
    ``R`` from its expectation, with ``V`` their unbiased sample variance, at ``level``.
    The only place the formula is written (:func:`empirical_bernstein_lower` and the
    variants' Bernstein tails of :mod:`bounds.variants` read it).

    Example:
        >>> n, V, R = sp.symbols("n V R", positive=True)
        >>> maurer_pontil_deviation(n, V, 2 * sp.exp(-1), R)   # ln(2/level) = 1
        7*R/(3*n - 3) + sqrt(2)*sqrt(V)/sqrt(n)
    """
    log = sp.log(2 / level)
    return sp.sqrt(2 * variance * log / n) + 7 * value_range * log / (3 * (n - 1))


def empirical_bernstein_lower(mean, sample_var, n, value_range, level):
    """``E Z >= mean - sqrt(2 V ln(2/level) / n) - 7 R ln(2/level) / (3 (n - 1))`` w.p. >= 1 - level.

    Maurer and Pontil (2009), Theorem 4, for i.i.d. ``Z_i`` in an interval of length ``R``,
    with ``V`` the unbiased sample variance. Vectorised over numpy arrays.

    Args:
        mean: sample mean of ``n`` i.i.d. values.
        sample_var: their unbiased sample variance (``ddof=1``).
        n: sample size, ``>= 2``.
        value_range: ``R``, the length of an interval holding every ``Z_i`` surely.
        level: failure probability in ``(0, 1)``.

    References:
        A. Maurer, M. Pontil, Empirical Bernstein bounds and sample variance penalization,
        COLT 2009 (arXiv 0907.3740).

    Example:
        >>> round(float(empirical_bernstein_lower(0.5, 0.0, 1001, 1.0, 0.05)), 6)  # variance-free term only
        0.491393
    """
    n = np.asarray(n, dtype=np.float64)
    if np.any(n < 2):
        raise InputError("n", "an integer >= 2", n.tolist())
    lv = np.asarray(level, dtype=np.float64)
    if np.any((lv <= 0) | (lv >= 1)):
        raise InputError("level", "in (0, 1)", lv.tolist())
    var = np.maximum(np.asarray(sample_var, dtype=np.float64), 0.0)
    dev = evaluate(maurer_pontil_deviation(_n, _V, _level, _range),
                   {"n": n, "V": var, "level": lv, "value_range": value_range})
    return np.asarray(mean, dtype=np.float64) - dev
