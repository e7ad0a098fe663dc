"""Statistics of predicted-vs-observed studies and trial insertions (numpy and scipy only, no torch).

* :func:`rank_test` -- Spearman's rho of a score with a realised gain over units (sites, or
  sites x networks with a ``strata`` label: pooled), with its permutation p-values: **exact**
  (every permutation of the units within their strata) when there are at most ``max_exact``
  of them (default ``8! = 40320``: every order of 8 sites), else Monte Carlo with
  ``n_mc`` permutations (stated: ``exact=False``, ``n_permutations``), ``p = (1 + #) / (1 + n_mc)``.
* :func:`calibration_slope` -- OLS slope of realised on predicted with its Student-t interval
  (``n - 2`` degrees of freedom, as :func:`scipy.stats.linregress`).
* :func:`mean_interval` -- the Student-t interval of a mean over independent replicates (seeds).
* :func:`ratio_check` -- the first-order check: the per-seed ratio realised / predicted, its
  interval over seeds, and whether the interval excludes 1 (flagged).
* :func:`halving_rungs` -- the cumulative step counts of successive halving.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

__all__ = ["DEFAULT_MC", "MAX_EXACT", "calibration_slope", "halving_rungs", "mean_interval", "rank_test", "ratio_check",
           "spearman"]

#: Up to this many permutations the p-value enumerates all of them (8! = 40320: every order of 8 sites).
MAX_EXACT = math.factorial(8)
#: **Choice**: Monte Carlo permutations beyond ``MAX_EXACT``.
DEFAULT_MC = 9999
_TIE = 1e-12     # rho values within this of the observed one count as equal (floating point of tied ranks)


def _rank_rho(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Pearson's r of the rank vector ``ra`` ``(n,)`` with every row of ``rb`` ``(m, n)`` (nan if constant)."""
    a = ra - ra.mean()
    b = rb - rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum() * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (b @ a) / np.where(den > 0, den, 1.0), np.nan)


def spearman(a, b) -> float:
    """Spearman's rho of two equal-length vectors (average ranks for ties); nan when one is constant, no warning.

    Example:
        >>> spearman([1, 2, 3], [3, 2, 1]), spearman([1, 1, 1], [1, 2, 3])
        (-1.0, nan)
    """
    return float(_rank_rho(stats.rankdata(np.asarray(a, dtype=float)), stats.rankdata(np.asarray(b, dtype=float))[None, :])[0])


def _statistic(ra_by: list, rb_perm_by: list) -> np.ndarray:
    """The mean over strata of each stratum's Spearman rho, per permutation row."""
    return np.mean([_rank_rho(ra, rb) for ra, rb in zip(ra_by, rb_perm_by)], axis=0)


def _perms_exact(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64).reshape(-1, n)


def rank_test(scores, gains, strata=None, *, max_exact: int = MAX_EXACT, n_mc: int = DEFAULT_MC, seed: int = 0) -> dict:
    """Spearman's rho of ``scores`` and ``gains`` (one value per unit) with permutation p-values.

    ``strata`` (optional, one label per unit, e.g. the network): the statistic is the mean over
    strata of each stratum's rho, and the null permutes the gains *within* each stratum (so
    networks of different loss scales are never compared with each other). Without strata: one
    stratum, the ordinary Spearman rho. ``p_one_sided = P(rho* >= rho)`` (the ranking predicts: a
    positive association), ``p_two_sided = P(|rho*| >= |rho|)``, both counting the observed pairing.

    Exact when the number of within-strata permutations is ``<= max_exact``; else ``n_mc`` random
    permutations (``numpy.random.default_rng(seed)``) with ``p = (1 + #{rho* >= rho}) / (1 + n_mc)``.

    Example:
        >>> r = rank_test([1, 2, 3, 4], [10, 20, 30, 40])
        >>> r["rho"], r["p_one_sided"] == 1 / 24, r["n_permutations"], r["exact"]
        (1.0, True, 24, True)
    """
    a, b = np.asarray(scores, dtype=float), np.asarray(gains, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 3:
        raise ValueError(f"scores and gains must be 1-D with one value per unit and >= 3 units, got shapes {a.shape} and {b.shape}.")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("scores and gains must be finite (a unit without a score is dropped before the test).")
    labels = np.zeros(a.size, dtype=int) if strata is None else np.unique(np.asarray(strata), return_inverse=True)[1]
    groups = [np.flatnonzero(labels == g) for g in np.unique(labels)]
    if any(len(g) < 2 for g in groups):
        raise ValueError(f"every stratum must hold >= 2 units, got sizes {[len(g) for g in groups]}.")
    ra_by = [stats.rankdata(a[g]) for g in groups]
    rb_by = [stats.rankdata(b[g]) for g in groups]
    rho = float(_statistic(ra_by, [rb[None, :] for rb in rb_by])[0])
    if not math.isfinite(rho):   # a constant score or gain in a stratum: no ranking, no test
        return {"rho": math.nan, "p_one_sided": math.nan, "p_two_sided": math.nan, "exact": True, "n_permutations": 0,
                "n_units": int(a.size), "n_strata": len(groups), "note": "constant scores or gains within a stratum: rho undefined"}
    total = math.prod(math.factorial(len(g)) for g in groups)
    exact = total <= max_exact
    if exact:
        per = [_perms_exact(len(g)) for g in groups]
        combos = np.array(list(itertools.product(*[range(len(p)) for p in per])), dtype=np.int64)
        perm_by = [rb[p[combos[:, k]]] for k, (rb, p) in enumerate(zip(rb_by, per))]
        null = _statistic(ra_by, perm_by)
        p1, p2, m = float(np.mean(null >= rho - _TIE)), float(np.mean(np.abs(null) >= abs(rho) - _TIE)), int(null.size)
    else:
        rng = np.random.default_rng(seed)
        perm_by = [np.stack([rb[rng.permutation(len(rb))] for _ in range(n_mc)]) for rb in rb_by]
        null = _statistic(ra_by, perm_by)
        p1 = float((1 + np.sum(null >= rho - _TIE)) / (1 + n_mc))
        p2 = float((1 + np.sum(np.abs(null) >= abs(rho) - _TIE)) / (1 + n_mc))
        m = int(n_mc)
    return {"rho": rho, "p_one_sided": p1, "p_two_sided": p2, "exact": bool(exact), "n_permutations": m,
            "n_units": int(a.size), "n_strata": len(groups)}


def calibration_slope(predicted, realised, level: float = 0.05) -> dict:
    """OLS of ``realised`` on ``predicted``: slope, intercept and the slope's two-sided level-``(1 - level)``
    Student-t interval (``n - 2`` degrees of freedom; the standard error of :func:`scipy.stats.linregress`).
    A calibrated prediction has slope 1 (and intercept 0).

    Example:
        >>> r = calibration_slope([1, 2, 3, 4], [2, 4, 6, 8])
        >>> round(r["slope"], 6), round(r["intercept"], 6), round(r["slope_lo"], 6)
        (2.0, 0.0, 2.0)
    """
    x, y = np.asarray(predicted, dtype=float), np.asarray(realised, dtype=float)
    n = x.size
    if x.shape != y.shape or n < 3:
        raise ValueError(f"predicted and realised must have one value per unit and >= 3 units, got shapes {x.shape} and {y.shape}.")
    sxx = float(((x - x.mean()) ** 2).sum())
    if not sxx > 0:
        return {"slope": math.nan, "intercept": math.nan, "slope_lo": math.nan, "slope_hi": math.nan, "n": int(n),
                "level": level, "note": "predicted is constant: no slope"}
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    intercept = float(y.mean() - slope * x.mean())
    resid = y - (intercept + slope * x)
    se = math.sqrt(float((resid ** 2).sum()) / (n - 2) / sxx)
    half = float(stats.t.ppf(1 - level / 2, n - 2)) * se
    return {"slope": slope, "intercept": intercept, "slope_se": se, "slope_lo": slope - half, "slope_hi": slope + half,
            "n": int(n), "level": level}


def mean_interval(values, level: float = 0.05) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the two-sided level-``(1 - level)`` Student-t interval of the mean of independent
    replicates (nan bounds with fewer than 2 finite values).

    Example:
        >>> m, lo, hi = mean_interval([1.0, 2.0, 3.0])
        >>> m, round(hi - m, 4)
        (2.0, 2.4841)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if v.size < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(1 - level / 2, v.size - 1)) * float(v.std(ddof=1)) / math.sqrt(v.size)
    return m, m - half, m + half


def ratio_check(realised, predicted, level: float = 0.05) -> dict:
    """The first-order check over seeds: per seed ``ratio = realised / predicted`` (seeds with
    ``predicted <= 0`` dropped and counted), their mean with a level-``(1 - level)`` t interval, and
    ``flagged``: the interval excludes 1 (first order does not describe the step).

    Example:
        >>> r = ratio_check([1.0, 1.1, 0.9, 1.05], [1.0, 1.0, 1.0, 1.0])
        >>> r["flagged"], ratio_check([2.0, 2.1, 1.9, 2.05], [1.0, 1.0, 1.0, 1.0])["flagged"]
        (False, True)
    """
    r, p = np.asarray(realised, dtype=float), np.asarray(predicted, dtype=float)
    keep = np.isfinite(r) & np.isfinite(p) & (p > 0)
    ratios = r[keep] / p[keep]
    m, lo, hi = mean_interval(ratios, level)
    flagged = bool(math.isfinite(lo) and not lo <= 1.0 <= hi)
    return {"ratio": m, "ratio_lo": lo, "ratio_hi": hi, "flagged": flagged, "n_seeds": int(ratios.size),
            "n_dropped": int((~keep).sum()), "level": level, "ratios": ratios.tolist()}


def halving_rungs(n_arms: int, steps: int, eta: int) -> list[int]:
    """Cumulative training steps at each rung of successive halving: ``R = max(1, ceil(log_eta(n_arms)))``
    rungs, rung ``k`` at ``max(1, steps // eta**(R - 1 - k))`` (the last at ``steps``), duplicates merged.

    Example:
        >>> halving_rungs(7, 100, 2), halving_rungs(7, 90, 3), halving_rungs(1, 50, 2)
        ([25, 50, 100], [30, 90], [50])
    """
    R = max(1, math.ceil(math.log(max(n_arms, 1)) / math.log(eta) - 1e-12))
    return sorted({max(1, steps // eta ** (R - 1 - k)) for k in range(R)})
