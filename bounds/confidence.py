"""Finite-sample confidence bounds for quantities *estimated* before they enter a route.

When ``Delta_R`` is not known exactly but estimated from a Monte-Carlo sample, Theorem 2
may be applied to any ``Delta_R' <= Delta_R`` (each premise stays true with the smaller
margin); the event ``Delta_R' > Delta_R`` then joins the union bound. This project's
**Choice**: ``Delta_R'`` is the empirical-Bernstein lower bound below, and its level is
added to the population route's failure probability (``Setup.delta_R_failure``).
"""
from __future__ import annotations

import numpy as np

from bounds._validation import InputError


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
    log_term = np.log(2.0 / lv)
    var = np.maximum(np.asarray(sample_var, dtype=np.float64), 0.0)
    return (np.asarray(mean, dtype=np.float64) - np.sqrt(2.0 * var * log_term / n)
            - 7.0 * np.asarray(value_range, dtype=np.float64) * log_term / (3.0 * (n - 1.0)))
