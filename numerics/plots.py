"""Figures drawn from *saved* results (``result.json``, sweep points); never re-running.

matplotlib is imported lazily inside each function (Agg backend), so importing
:mod:`numerics` does not need it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping, Sequence

from bounds._io import pyplot, save_figure

__all__ = ["load_result", "plot_bound_vs_observed", "plot_sweep"]


def load_result(result: Mapping | str | Path) -> Mapping:
    """A result dict, or the content of a ``result.json`` path / of a folder holding one."""
    if isinstance(result, Mapping):
        return result
    path = Path(result)
    if path.is_dir():
        path = path / "result.json"
    return json.loads(path.read_text(encoding="utf-8"))


def plot_bound_vs_observed(result: Mapping | str | Path, path: str | Path) -> Path:
    """Bar chart per route: the bound on ``L_test(f_new)`` vs the observed ``L_test(f_new)``,
    with ``L_test(f_old)`` as a line (a route certifies when its bar is below the line).

    Returns:
        The written PNG path.
    """
    res = load_result(result)
    plt = pyplot()
    names = list(res["routes"])
    bounds = [res["routes"][n]["bound"] for n in names]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = range(len(names))
    colors = ["tab:green" if res["routes"][n]["certified"] else "tab:red" for n in names]
    ax.bar([x - 0.2 for x in xs], bounds, width=0.4, color=colors, label="bound (green: certified)")
    ax.bar([x + 0.2 for x in xs], [res["L_test_new"]] * len(names), width=0.4, color="tab:blue",
           label="observed L_test(f_new)")
    ax.axhline(res["L_test_old"], color="k", ls="--", lw=1, label="L_test(f_old)")
    ax.set_xticks(list(xs), [f"{n}\n(Thm {2 if n == 'population' else 3})" for n in names])
    ax.set_ylabel("test loss")
    ax.set_title("bound vs observed test loss after insertion")
    ax.set_ylim(0, 1.3 * max(bounds + [res["L_test_old"], res["L_test_new"]]))
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    return save_figure(fig, path)


def plot_sweep(points: Sequence[Mapping], x_key: str, y_keys: Sequence[str], path: str | Path,
               *, logx: bool = False) -> Path:
    """Line plot of saved sweep points: ``y_keys`` (dotted paths into each result) vs ``x_key``.

    Args:
        points: sweep records ``{"params": {...}, "result": {...}}`` (see
            :func:`numerics.sweeps.load_points`).
        x_key: a grid key (dotted, e.g. ``"sizes.M"``), read from ``params`` or ``config``.
        y_keys: dotted keys of ``result`` (e.g. ``"routes.direct.bound"``, ``"L_test_new"``).
    """
    from numerics.sweeps import get_dotted

    plt = pyplot()
    def x_of(p):
        return p["params"][x_key] if x_key in p["params"] else get_dotted(p["config"], x_key)

    pts = sorted(points, key=x_of)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = [x_of(p) for p in pts]
    for key in y_keys:
        ax.plot(xs, [get_dotted(p["result"], key) for p in pts], marker="o", label=key)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x_key)
    ax.legend(fontsize=7)
    return save_figure(fig, path)
