"""The slack figure of a validity study, drawn from its stored ``validity.json`` (one box per premise)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from plumbing.figures import pyplot, save_figure
from plumbing.store import load_result

__all__ = ["plot_slack"]


def _untestable(s: Mapping, key: str) -> bool:
    """Whether the event of premise ``key`` (``"<route>.<premise> [<event>]"``) is not testable at the study's truth
    size (``events.*.testability``): its box is then labelled so, as the text and ``validity.json`` say."""
    if " [" not in key or "." not in key:
        return False
    route, event = key.split(".", 1)[0], key.rsplit(" [", 1)[1].rstrip("]")
    e = s["events"].get(f"{route}/{event}") or s["events"].get(event) or {}
    t = e.get("testability")
    return bool(t) and not t["testable"]


def _label(s: Mapping, key: str) -> str:
    return f"{key} (not testable at this truth size)" if _untestable(s, key) else key


def _boxes(entries: Mapping) -> list[dict]:
    return [{"label": name, "med": v["median"], "q1": v["q25"], "q3": v["q75"], "whislo": v["q05"],
             "whishi": v["q95"], "fliers": [v["min"], v["max"]]} for name, v in entries]


def plot_slack(summary: Mapping | str | Path, path: str | Path) -> Path:
    """Two panels, one box per premise (5-95% whiskers, quartiles, median, min/max points).

    Left: the slack ``allowance - deviation`` (negative: the premise failed; symmetric-log
    axis). Right: the share of its allowance a premise used, ``deviation / allowance``
    (above 1: failed; log axis) -- a premise far below 1 is the step that makes the bound
    loose. Premises without a deviation budget (the ``Delta_R`` confidence bound) appear
    on the left only.

    Returns:
        The written PNG path.
    """
    s = load_result(summary, "validity.json")
    items = sorted((_label(s, k), v) for k, v in s["slack"].items())
    used = sorted((_label(s, k), v) for k, v in (s.get("slack_used") or {}).items())
    plt = pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 0.35 * len(items) + 1.8), sharey=False)
    ax.bxp(_boxes(items), orientation="horizontal", showfliers=True)
    ax.axvline(0.0, color="r", lw=1, ls="--")
    small = min([abs(v["median"]) for _, v in items if v["median"] != 0] or [1e-6])
    ax.set_xscale("symlog", linthresh=max(small / 2, 1e-12), linscale=0.5)
    lo, hi = min(v["min"] for _, v in items), max(v["max"] for _, v in items)
    ax.set_xlim(min(lo * 2, -small), max(hi * 2, small))
    ax.set_xlabel("slack of the premise: allowance - deviation (negative: violated)")
    ax.tick_params(axis="y", labelsize=7)
    if used:
        ax2.bxp(_boxes(used), orientation="horizontal", showfliers=True)
        ax2.axvline(1.0, color="r", lw=1, ls="--")
        ax2.set_xscale("symlog", linthresh=1e-3, linscale=0.5)
        ax2.set_xlim(min(-0.05, 2 * min(v["min"] for _, v in used)), max(2.0, max(v["max"] for _, v in used) * 1.5))
        ax2.set_xlabel("share of the allowance used: deviation / allowance (> 1: violated)")
        ax2.tick_params(axis="y", labelsize=7)
    fig.suptitle(f"validity: slack of each premise over {s['draws']} draws (vary = {s['vary']})")
    return save_figure(fig, path)
