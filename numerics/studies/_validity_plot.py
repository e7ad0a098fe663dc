"""The slack figure of a validity study, drawn from its stored ``validity.json`` (one box per premise)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from bounds._io import pyplot, save_figure
from numerics._store import load_result

__all__ = ["plot_slack"]


def plot_slack(summary: Mapping | str | Path, path: str | Path) -> Path:
    """Horizontal boxes (5-95% whiskers, quartiles, median) of each premise's slack over draws.

    A box left of 0 is a premise that failed in some draws; far right of 0 is a premise
    with a lot to spare -- the step that makes the bound loose. Symmetric-log axis.

    Returns:
        The written PNG path.
    """
    s = load_result(summary, "validity.json")
    items = sorted(s["slack"].items())
    stats = [{"label": name, "med": v["median"], "q1": v["q25"], "q3": v["q75"], "whislo": v["q05"],
              "whishi": v["q95"], "fliers": [v["min"], v["max"]]} for name, v in items]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(stats) + 1.6))
    ax.bxp(stats, orientation="horizontal", showfliers=True)
    ax.axvline(0.0, color="r", lw=1, ls="--")
    small = min([abs(v["median"]) for _, v in items if v["median"] != 0] or [1e-6])
    ax.set_xscale("symlog", linthresh=max(small / 10, 1e-12))
    lo, hi = min(v["min"] for _, v in items), max(v["max"] for _, v in items)
    ax.set_xlim(min(lo * 2, -small), max(hi * 2, small))
    ax.set_xlabel("slack of the premise (negative: violated)")
    ax.set_title(f"validity: slack of each premise over {s['draws']} draws (vary = {s['vary']})")
    ax.tick_params(axis="y", labelsize=7)
    return save_figure(fig, path)
