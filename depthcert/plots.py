"""Plots of the bounds (matplotlib imported lazily, Agg backend when headless)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping

import numpy as np

from bounds._io import pyplot, save_figure
from bounds.regimes import degenerate_regime
from bounds.routes import Setup, evaluate_routes


def _with(setup: Setup, **changes) -> Setup:
    return dataclasses.replace(setup, **changes)


def plot_routes(setup: Setup, level: float, path: str | Path) -> Path:
    """Two panels: both bounds vs ``M`` (with ``min_M``), and failure probability vs ``Delta_R``.

    Returns:
        The path of the written PNG.
    """
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    M0 = float(setup.M)
    Ms = np.geomspace(max(1.0, M0 / 100), M0 * 1000, 200)
    rep = evaluate_routes(_with(setup, M=Ms, K=np.full_like(Ms, float(setup.K))), level)
    ax1.semilogx(Ms, rep.population.bound, label="population route (Thm 2)")
    ax1.semilogx(Ms, rep.direct.bound, label="direct route (Thm 3)")
    ax1.axhline(float(setup.L_test_old), color="k", ls="--", lw=1, label="L_test(f_old)")
    ax1.axvline(M0, color="grey", ls=":", lw=1, label="this setup's M")
    one = evaluate_routes(setup, level)
    for r, c in ((one.population, "C0"), (one.direct, "C1")):
        if np.isfinite(r.min_M):
            ax1.axvline(float(r.min_M), color=c, ls="-.", lw=1)
    ax1.set(xlabel="training size M", ylabel="bound on L_test(f_new)", title="Bounds vs M (others fixed)")
    ax1.legend(fontsize=8)
    dRs = np.geomspace(1e-4, max(1.0, 10 * float(setup.delta_R)), 200)
    fail = evaluate_routes(_with(setup, delta_R=dRs), level).population.failure_probability
    ax2.semilogx(dRs, fail, label="population route failure prob.")
    ax2.axhline(float(setup.delta) + float(setup.delta_prime), color="C1", label="direct route failure prob.")
    ax2.axhline(level, color="k", ls="--", lw=1, label=f"level {level:g}")
    ax2.axhline(1.0, color="r", ls=":", lw=1, label="vacuous above 1")
    reg = degenerate_regime(setup, level)
    ax2.axvline(reg.delta_R_crossover, color="grey", ls="-.", lw=1, label="population route crossover")
    ax2.set(xlabel="Delta_R", ylabel="failure probability", title="Degenerate regime (Delta_R -> 0)")
    ax2.legend(fontsize=8)
    return save_figure(fig, path)


_COLORS = {"reference": "0.55", "gain": "tab:green", "cost": "tab:red"}


def _route_panels(result: Mapping) -> list[tuple[str, str, list, Mapping]]:
    """``(name, statement, terms, route dict)`` for the paper routes and every variant of ``result``."""
    variants = result["variants"]
    panels = [(f"{key.replace('_route', '')} (Thm {2 if key.startswith('population') else 3})", "paper",
               variants["paper_terms"][key], result[key]) for key in ("population_route", "direct_route")]
    panels += [(name, "Choice", r["terms"], r) for name, r in variants["routes"].items()]
    return panels


def _label(t: Mapping) -> str:
    """A bar's label: the term, and for a cost the event(s) that pay it."""
    events = t.get("events") or ([t["event"]] if t.get("event") else [])
    return t["term"] + (f" [{'+'.join(events)}]" if events else "")


def _waterfall(ax, terms, route: Mapping, reference: float) -> list[float]:
    """Floating bars from ``L_test_old`` through every gain and cost to the bound; returns the levels reached."""
    running, labels, levels = reference, [], [reference]
    for i, t in enumerate(terms):
        value = float(t["value"])
        if t["role"] == "reference":
            ax.bar(i, reference, color=_COLORS["reference"], width=0.7)
        else:
            ax.bar(i, value, bottom=running, color=_COLORS[t["role"]], width=0.7)
            running += value
        labels.append(_label(t))
        levels.append(running)
    ax.bar(len(terms), running, color="tab:blue" if route["certified"] else "tab:orange", width=0.7)
    ax.axhline(reference, color="k", ls="--", lw=1)
    ax.set_xticks(range(len(terms) + 1), labels + ["bound"], rotation=60, ha="right", fontsize=7)
    return levels


def _grid(plt, n_panels: int):
    ncols = min(5, n_panels)
    nrows = -(-n_panels // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.1 * ncols, 3.8 * nrows), sharey=True, squeeze=False)
    for ax in list(axes.flat)[n_panels:]:
        ax.axis("off")
    return fig, axes


def _zoom(axes, reached: list[float]) -> None:
    """Shared y axis zoomed on the levels the waterfalls reach."""
    finite = [x for x in reached if np.isfinite(x)]
    lo, hi = min(finite), max(finite)
    pad = 0.08 * (hi - lo) if hi > lo else 0.05 * abs(hi) + 1e-3
    axes[0][0].set_ylim(lo - pad, hi + pad)
    axes[0][0].set_ylabel("bound on L_test(f_new)")


def plot_bound_terms(result: Mapping, path: str | Path) -> Path:
    """Per route and variant, the bound as a waterfall: ``L_test_old``, each gain, each cost (THEORY §5-§6).

    Reads a stored ``depthcert bounds --json`` result (keys ``population_route``,
    ``direct_route``, ``variants``); each cost is labelled with the event(s) that pay it (the
    paper's population route shows its two Hoeffding costs ``Delta_R/4`` next to the full
    gain ``Delta_R``); the dashed line is ``L_test(f_old)``: a route certifies when its bound
    (blue; orange when not certified) ends below it and its failure probability is within
    the level. Panels share the y axis, zoomed on the levels reached.

    Returns:
        The path of the written PNG.
    """
    plt = pyplot()
    panels = _route_panels(result)
    reference = float(panels[0][2][0]["value"])
    fig, axes = _grid(plt, len(panels))
    reached = []
    for ax, (name, origin, terms, route) in zip(axes.flat, panels):
        reached += _waterfall(ax, terms, route, reference)
        fail = route["failure_probability"]
        ax.set_title(f"{name}\n[{origin}]" + ("" if fail is None else f" failure p {fail:.3g}"), fontsize=8)
    _zoom(axes, reached)
    fig.suptitle("Bounds decomposed: L_test(f_old) (grey), gains (green), costs (red) [paid on these events], bound "
                 "(blue: certified alone, fixed before the data); dashed: L_test(f_old)", fontsize=9)
    return save_figure(fig, path)
