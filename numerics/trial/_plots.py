"""The figure of ``dc.plot_calibration``: predicted against observed per horizon, rho against horizon."""
from __future__ import annotations

import numpy as np

__all__ = ["calibration_figure"]


def _site_means(rows, score: str):
    g = rows.groupby("site", sort=False)
    m = g[[score, "realised_gain"]].mean()
    if "seed" in rows.columns and rows["seed"].nunique() > 1:
        from numerics.trial._stats import mean_interval

        iv = np.array([mean_interval(v, 0.05)[1:] for _, v in g["realised_gain"]])
        err = np.abs(iv - m["realised_gain"].to_numpy()[:, None]).T
    else:
        err = None
    return m, err


def calibration_figure(df, calib, score: str):
    """A matplotlib ``Figure``: panels per horizon (``score`` against ``realised_gain``, site means,
    t intervals over seeds, the identity line ``y = x``) and rho against horizon per score
    (filled markers where the one-sided permutation p is at most the level)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = df[df["kind"] == "seed"] if "kind" in df.columns else df
    horizons = sorted(rows["horizon"].unique())
    fig, axes = plt.subplots(1, len(horizons) + 1, figsize=(3.2 * (len(horizons) + 1), 3.2), squeeze=False)
    for ax, h in zip(axes[0], horizons):
        m, err = _site_means(rows[rows["horizon"] == h], score)
        x, y = m[score].astype(float).to_numpy(), m["realised_gain"].to_numpy()
        ax.errorbar(x, y, yerr=err, fmt="o", ms=4, capsize=2)
        for name, xi, yi in zip(m.index, x, y):
            ax.annotate(str(name), (xi, yi), fontsize=6)
        lim = [np.nanmin(np.r_[x, y, 0.0]), np.nanmax(np.r_[x, y, 0.0])]
        ax.plot(lim, lim, color="grey", ls="--", lw=0.8, label="identity")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_xlabel(score)
        ax.set_ylabel("realised gain (held out)")
        ax.set_title(f"horizon {h}")
    ax = axes[0][-1]
    for s, g in calib.groupby("score", sort=False):
        g = g.sort_values("horizon")
        line, = ax.plot(g["horizon"], g["rho"], "-", lw=1, label=s)
        sig = g["p_one_sided"] <= g["level"]
        ax.plot(g["horizon"][sig], g["rho"][sig], "o", color=line.get_color())
        ax.plot(g["horizon"][~sig], g["rho"][~sig], "o", mfc="none", color=line.get_color())
    if len(horizons) > 1 and min(horizons) >= 0:
        ax.set_xscale("symlog", linthresh=1)
    ax.axhline(0, color="black", lw=0.5)
    ax.set_ylim(-1.05, 1.05)
    ax.set_xlabel("horizon (training steps)")
    ax.set_ylabel("Spearman rho over sites")
    ax.set_title("rho (filled: one-sided p <= level)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    return fig
