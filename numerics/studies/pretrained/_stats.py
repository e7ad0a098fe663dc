"""Paired statistics of the pretrained study: per-arm intervals paired by seed, rank correlations of the
scan's scores with the realised gains (exact permutation p-values over sites, intervals over seeds)."""
from __future__ import annotations

import itertools

import numpy as np
from scipy import stats

__all__ = ["LEVEL", "SCORES", "heldout_paired", "paired_interval", "permutation_pvalues", "rank_correlation",
           "rank_correlations", "ranking_words"]

#: The scan's per-site scores whose ranking is tested, the one ``best_site`` uses (``predicted_gain``) first.
SCORES = ("predicted_gain", "P_affine", "P_readout", "AG_max")
#: The level of the rank tests (one-sided: "the ranking predicts" means a positive association).
LEVEL = 0.05
_TIE = 1e-12      # rho values within this of the observed one count as equal (floating point of tied ranks)


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


def _spearman_of_ranks(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Pearson's r of rank vectors: ``ra`` ``(n,)`` against every row of ``rb`` ``(m, n)``."""
    a = ra - ra.mean()
    b = rb - rb.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum() * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (b @ a) / den


def permutation_pvalues(scores, gains) -> dict:
    """Spearman's rho of ``scores`` and ``gains`` (one value per site) and its exact permutation p-values:
    the gains' ranks are paired with the scores' ranks in every one of the ``n!`` orders (the null: the
    pairing of sites is exchangeable). ``p_one_sided`` = P(rho >= observed), ``p_two_sided`` =
    P(|rho| >= |observed|), each counting the observed pairing (so never below ``1 / n!``).

    Example:
        >>> r = permutation_pvalues([1, 2, 3, 4], [10, 20, 30, 40])
        >>> r["rho"], r["p_one_sided"] == 1 / 24, r["n_permutations"]
        (1.0, True, 24)
    """
    a, b = np.asarray(scores, dtype=float), np.asarray(gains, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or not 3 <= a.size <= 8:
        raise ValueError(f"scores and gains: one value per site, 3 to 8 sites (exact enumeration), got {a.shape} and {b.shape}.")
    ra, rb = stats.rankdata(a), stats.rankdata(b)
    rho = float(_spearman_of_ranks(ra, rb[None, :])[0])
    perms = np.array(list(itertools.permutations(range(a.size))))
    null = _spearman_of_ranks(ra, rb[perms])
    return {"rho": rho, "p_one_sided": float(np.mean(null >= rho - _TIE)),
            "p_two_sided": float(np.mean(np.abs(null) >= abs(rho) - _TIE)), "n_permutations": int(perms.shape[0]),
            "n_sites": int(a.size)}


def rank_correlations(scores_by_seed: dict, gains_by_seed, level: float = 0.95, alpha: float = LEVEL) -> list[dict]:
    """Spearman's rho of each score with the realised gains, over sites.

    ``scores_by_seed[name]`` and ``gains_by_seed``: ``(n_seeds, n_sites)``, each seed its own scan (its
    scores) and its own arms (its gains). The headline ``rho`` pairs the per-site means over seeds
    (**Choice**: the mean, for the scores as for the gains), with the exact permutation p-values of
    :func:`permutation_pvalues`; the headline test is one-sided at ``alpha`` ("the ranking predicts" is
    a positive association). ``interval``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of
    the per-seed rho (each seed's scores against its own gains), ``per_seed`` those values.
    """
    g = np.asarray(gains_by_seed, dtype=float)
    out = []
    for name, sc in scores_by_seed.items():
        s = np.asarray(sc, dtype=float)
        if s.shape != g.shape or not np.isfinite(s).all():
            out.append({"score": name, "rho": None, "not_run": "the scan has no finite value of this score at every site"})
            continue
        res = permutation_pvalues(s.mean(0), g.mean(0))
        per_seed = [float(stats.spearmanr(si, gi).statistic) for si, gi in zip(s, g)]
        finite = [r for r in per_seed if np.isfinite(r)]
        iv = ([float(q) for q in np.quantile(finite, [(1 - level) / 2, (1 + level) / 2])] if len(finite) >= 2 else None)
        out.append({"score": name, "rho": res["rho"], "p_one_sided": res["p_one_sided"], "p_two_sided": res["p_two_sided"],
                    "headline_p": "p_one_sided", "alpha": alpha, "n_sites": res["n_sites"],
                    "n_permutations": res["n_permutations"], "interval": iv, "interval_level": level,
                    "interval_is": "percentiles of the per-seed rho (each seed: its own document split, masks, f_old, "
                                   "scan and arms)", "n_seeds": int(g.shape[0]), "per_seed": per_seed,
                    "words": ranking_words(res["rho"], res["p_one_sided"], res["p_two_sided"], alpha)})
    return out


def ranking_words(rho: float, p_one: float, p_two: float, alpha: float = LEVEL) -> str:
    """What a correlation says, by its p-values at ``alpha``: only a one-sided p at or below ``alpha``
    supports "predicts"; a two-sided p at or below ``alpha`` with a negative rho is a reversed ranking."""
    if p_one <= alpha:
        return f"evidence that the ranking predicts the realised gains (one-sided p <= {alpha:g})"
    if rho < 0 and p_two <= alpha:
        return f"evidence that the ranking is reversed (negative rho, two-sided p <= {alpha:g})"
    return f"no evidence that the ranking predicts the realised gains (one-sided p > {alpha:g})"


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
