"""Paired statistics of the pretrained study: per-arm intervals paired by seed, a rank correlation with its interval."""
from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["heldout_paired", "paired_interval", "rank_correlation"]


def paired_interval(diffs, level: float = 0.95) -> dict:
    """Student-t interval for the mean of per-seed paired differences (``n >= 2`` seeds)."""
    d = np.asarray(diffs, dtype=float)
    n = d.size
    if n < 2:
        return {"mean": float(d.mean()) if n else None, "interval": None, "n_seeds": int(n)}
    half = stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / np.sqrt(n)
    return {"mean": float(d.mean()), "interval": [float(d.mean() - half), float(d.mean() + half)],
            "n_seeds": int(n), "level": level}


def rank_correlation(scores, gains_by_seed, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman's rho between the scan's per-site ``scores`` and the realised gains (mean over seeds),
    with a percentile bootstrap interval over seeds (``gains_by_seed``: ``(n_seeds, n_sites)``).

    Example:
        >>> r = rank_correlation([1, 2, 3, 4], [[1, 2, 3, 4], [1.1, 2.2, 2.9, 4.2]])
        >>> r["value"]
        1.0
    """
    g = np.asarray(gains_by_seed, dtype=float)
    s = np.asarray(scores, dtype=float)
    value = float(stats.spearmanr(s, g.mean(0)).statistic)
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, g.shape[0], g.shape[0])
        r = stats.spearmanr(s, g[idx].mean(0)).statistic
        if np.isfinite(r):
            boots.append(r)
    lo, hi = (np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if boots else (np.nan, np.nan))
    return {"value": value, "interval": [float(lo), float(hi)], "level": level, "method": "Spearman; percentile bootstrap over seeds",
            "n_sites": int(s.size), "n_seeds": int(g.shape[0])}


def heldout_paired(mean_d: float, var_d: float, K: int, B: float, level: float = 0.05) -> dict:
    """The held-out paired test beside the certificate: upper bounds on ``R(f_new) - R(f_old)`` from the
    per-sequence loss differences ``d_i = l_i(f_new) - l_i(f_old)`` on ``T`` (mean, unbiased variance, ``K``).

    * ``t``: the one-sided Student-t bound ``mean + t_{K-1, 1-level} sqrt(var / K)`` (a normal
      approximation: its level is asymptotic);
    * ``bernstein``: the empirical Bernstein bound (Maurer and Pontil) with the sure range ``2 B`` of a
      difference of two losses in ``[0, B]`` (valid at ``level`` for every ``K``).

    Each certifies an improvement when its bound is ``< 0``.
    """
    from bounds.confidence import empirical_bernstein_lower

    t_up = float(mean_d + stats.t.ppf(1 - level, K - 1) * np.sqrt(var_d / K))
    eb_up = -float(empirical_bernstein_lower(-mean_d, var_d, K, 2.0 * B, level))
    return {"bound_on": "R(f_new) - R(f_old)", "mean_T": float(mean_d), "K": int(K), "level": level,
            "t": {"bound": t_up, "certified": bool(t_up < 0), "validity": "asymptotic (normal approximation)"},
            "bernstein": {"bound": eb_up, "certified": bool(eb_up < 0), "range": 2.0 * B,
                          "validity": "finite-sample, sure range 2 B"}}
