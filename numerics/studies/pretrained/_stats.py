"""Paired statistics of the pretrained study: per-arm intervals paired by seed, a rank correlation with its interval."""
from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["paired_interval", "rank_correlation"]


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
