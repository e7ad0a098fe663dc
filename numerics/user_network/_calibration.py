"""``dc.calibration`` and ``dc.plot_calibration``: per horizon and score, does a score rank the sites as the
realised gains do (Spearman's rho, permutation p-values), and is it calibrated (the slope at horizon 0)?"""
from __future__ import annotations

import numpy as np

from numerics.user_network._predicted import GAIN_SCORES, SCORES, _check_level, _positive_int

__all__ = ["calibration", "plot_calibration"]


def _seed_rows_only(df):
    if "kind" in df.columns:
        df = df[df["kind"] == "seed"]
    return df


COLUMNS = ["horizon", "score", "target", "rho", "p_one_sided", "p_two_sided", "exact", "n_permutations", "n_units",
           "n_strata", "n_seeds", "predicts", "note", "rho_seeds", "rho_seeds_lo", "rho_seeds_hi", "level", "slope", "intercept",
           "slope_lo", "slope_hi", "slope_seeds", "slope_seeds_lo", "slope_seeds_hi"]


def _score_row(g, means, units, score, target, h, with_slope: bool, level, tests: dict) -> dict:
    """One horizon's row for one score: the rank test over the site means, the per-seed rhos (and slopes)."""
    from numerics.trial import calibration_slope, mean_interval, rank_test, spearman

    m = means[units + [score, target]].astype({score: float, target: float}).dropna()
    if len(m) < 3:
        raise ValueError(f"df has {len(m)} sites with a finite {score!r} and {target!r} at horizon {h}, "
                         "must have >= 3 (a rank test over sites).")
    strata = m["network"].to_numpy() if "network" in units else None
    rt = rank_test(m[score].to_numpy(), m[target].to_numpy(), strata, **tests)
    per_seed, slopes = [], []
    for _, gs in g.groupby("seed"):
        v = gs[units + [score, target]].astype({score: float, target: float}).dropna()
        if len(v) >= 3:   # pooled networks: the mean of the within-network rhos, as the headline statistic
            by = [w for _, w in v.groupby("network")] if "network" in units else [v]
            rhos = [r for r in (spearman(w[score], w[target]) for w in by if len(w) >= 2) if np.isfinite(r)]
            per_seed.append(float(np.mean(rhos)) if rhos else np.nan)
            slopes += [calibration_slope(v[score], v[target], level)["slope"]] if with_slope else []
    rs, rlo, rhi = mean_interval(per_seed, level)
    row = {"horizon": h, "score": score, "target": target, **{k: rt[k] for k in
           ("rho", "p_one_sided", "p_two_sided", "exact", "n_permutations", "n_units", "n_strata")},
           "n_seeds": int(g["seed"].nunique()), "predicts": bool(rt["p_one_sided"] <= level), "note": rt.get("note", ""),
           "rho_seeds": rs, "rho_seeds_lo": rlo, "rho_seeds_hi": rhi, "level": level}
    if with_slope:
        cs = calibration_slope(m[score].to_numpy(), m[target].to_numpy(), level)
        ss, slo, shi = mean_interval(slopes, level)
        row.update(slope=cs["slope"], intercept=cs["intercept"], slope_lo=cs["slope_lo"], slope_hi=cs["slope_hi"],
                   slope_seeds=ss, slope_seeds_lo=slo, slope_seeds_hi=shi)
    return row


def calibration(df, scores=None, target: str = "realised_gain", level: float = 0.05, *, n_mc: int = 9999,
                max_exact: int = 40320, seed: int = 0):
    """Per horizon and score: does the score rank the sites as the realised gains do, and is it calibrated?

    Over the sites (the units; with a ``network`` column, the sites of every network, pooled): the
    per-site means over seeds of each score and of ``target``, Spearman's rho with its permutation
    p-values -- exact (every permutation) when there are at most ``max_exact`` (8! = 40320: up to 8
    sites), else ``n_mc`` random permutations, stated in ``exact`` and ``n_permutations``; pooled
    networks are permuted within each network and the statistic is the mean of their rhos. At the
    first horizon (0: the jumpboard as inserted), for the scores in loss units (``GAIN_SCORES``), the
    calibration slope of realised on predicted (OLS over the site means, Student-t interval with
    ``n - 2`` degrees of freedom; 1 is calibrated) and the mean of the per-seed slopes with its t
    interval over seeds.

    Parameters
    ----------
    df : pandas.DataFrame
        The table of :func:`depthcert.predicted_vs_observed` (its ``kind == "seed"`` rows are used), or
        any table with ``site``, ``horizon``, ``seed``, the score columns and ``target``.
    scores : sequence of str or None, default None
        The score columns (None: ``df.attrs["scores"]``, else those of ``SCORES`` present).
    target : str, default "realised_gain"
        The realised column (``"tune_gain"``: the control arm).
    level : float, default 0.05
        The slope intervals are two-sided at ``1 - level``; ``predicts`` is ``p_one_sided <= level``.
    n_mc : int, default 9999
        Monte Carlo permutations beyond ``max_exact``.
    max_exact : int, default 40320
        The largest number of permutations enumerated exactly.
    seed : int, default 0
        Seed of the Monte Carlo permutations.

    Returns
    -------
    pandas.DataFrame
        One row per horizon x score: ``rho``, ``p_one_sided`` (the ranking predicts: positive
        association), ``p_two_sided``, ``exact``, ``n_permutations``, ``n_units``, ``n_seeds``,
        ``predicts``, ``note`` (why a rho is undefined: a constant score), ``rho_seeds`` (mean per-seed rho)
        with ``rho_seeds_lo``/``rho_seeds_hi``, and at
        horizon 0 for gain scores ``slope``, ``intercept``, ``slope_lo``, ``slope_hi``, ``slope_seeds``,
        ``slope_seeds_lo``, ``slope_seeds_hi``.

    Raises
    ------
    ValueError
        A missing column, fewer than 3 sites, or a bad level, n_mc or max_exact (named).

    Examples
    --------
        >>> import pandas as pd
        >>> import depthcert as dc
        >>> df = pd.DataFrame({"seed": [0] * 4, "site": list("abcd"), "horizon": [0] * 4,
        ...                    "predicted_gain": [1.0, 2.0, 3.0, 4.0], "realised_gain": [2.0, 4.0, 6.0, 8.0]})
        >>> c = dc.calibration(df, scores=["predicted_gain"])
        >>> float(c["rho"][0]), float(c["p_one_sided"][0]) == 1 / 24, bool(c["exact"][0]), round(float(c["slope"][0]), 6)
        (1.0, True, True, 2.0)
    """
    import pandas as pd

    level = _check_level(level)
    tests = {"n_mc": _positive_int("n_mc", n_mc), "max_exact": _positive_int("max_exact", max_exact),
             "seed": _positive_int("seed", seed, least=0)}
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df is a {type(df).__name__}, must be the pandas.DataFrame of dc.predicted_vs_observed.")
    rows = _seed_rows_only(df)
    if scores is None:
        scores = df.attrs.get("scores") or [s for s in SCORES if s in df.columns]
    scores = [scores] if isinstance(scores, str) else list(scores)
    need = ["site", "horizon", target, *scores]
    missing = [c for c in need if c not in rows.columns]
    if missing:
        raise ValueError(f"df lacks the columns {missing}, must have {need} (the table of dc.predicted_vs_observed).")
    units = ["network", "site"] if "network" in rows.columns else ["site"]
    rows = rows if "seed" in rows.columns else rows.assign(seed=0)
    first = min(rows["horizon"])
    out = []
    for h, g in rows.groupby("horizon", sort=True):
        means = g.groupby(units, sort=False)[[target, *scores]].mean(numeric_only=False).reset_index()
        out += [_score_row(g, means, units, s, target, h, s in GAIN_SCORES and h == first, level, tests) for s in scores]
    return pd.DataFrame(out, columns=COLUMNS)


def plot_calibration(df, calib=None, score: str = "predicted_gain"):
    """The figure of predicted against observed: one panel per horizon (a score's site means against the
    realised gains, intervals over seeds, the identity line) and one of rho against horizon per score.

    Parameters
    ----------
    df : pandas.DataFrame
        The table of :func:`depthcert.predicted_vs_observed`.
    calib : pandas.DataFrame or None, default None
        Its :func:`depthcert.calibration` (None: computed).
    score : str, default "predicted_gain"
        The score on the x axis of the per-horizon panels.

    Returns
    -------
    matplotlib.figure.Figure
        ``len(horizons) + 1`` axes (the caller saves or closes it).

    Raises
    ------
    ValueError
        ``score`` is not a column of ``df`` (named).

    Examples
    --------
        >>> import pandas as pd
        >>> import depthcert as dc
        >>> df = pd.DataFrame({"seed": [0] * 4 + [1] * 4, "site": list("abcd") * 2, "horizon": [0] * 8,
        ...                    "predicted_gain": [1, 2, 3, 4, 1.1, 2.1, 2.9, 4.2], "realised_gain": [1, 2, 4, 3, 1, 2.5, 3, 4]})
        >>> fig = dc.plot_calibration(df)
        >>> len(fig.axes), fig.axes[0].get_xlabel()
        (2, 'predicted_gain')
    """
    from numerics.trial._plots import calibration_figure

    if score not in df.columns:
        raise ValueError(f"score == {score!r}, must be a column of df (e.g. {[s for s in SCORES if s in df.columns]}).")
    if calib is None:
        calib = calibration(df, scores=[s for s in (df.attrs.get("scores") or SCORES) if s in df.columns])
    return calibration_figure(df, calib, score)
