"""The bound of every route and variant decomposed into its terms, as a waterfall (THEORY §5-§6).

One figure for ``depthcert bounds --plot-terms`` and for the ``bound_terms.png`` of
``depthcert run``, drawn from stored results only: the reference loss ``L_test(f_old)``,
each gain (green), each cost (red, labelled with the event(s) that pay it), the bound.

It reads the keys of a ``depthcert run`` ``result.json``, so it lives with the run study, above
:mod:`bounds` (which knows nothing of the run's outputs); :func:`depthcert.plots.plot_bound_terms` re-exports it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from plumbing.figures import pyplot, save_figure
from bounds.routes._route import route as registered_route

__all__ = ["plot_bound_terms"]

_COLORS = {"reference": "0.55", "gain": "tab:green", "cost": "tab:red"}


def _route_panels(result: Mapping) -> list[tuple[str, str, list, Mapping]]:
    """``(name, statement, terms, route dict)`` for the paper routes and every variant of ``result``.

    ``result`` is a ``depthcert bounds --json`` output (``population_route``, ``direct_route``,
    ``variants.routes``) or a ``depthcert run`` ``result.json`` (``routes.population``,
    ``routes.direct``, ``routes.<variant>`` for each name of ``variants.names``).
    """
    variants = result["variants"]
    if "routes" in result and "population_route" not in result:      # a run's result.json
        paper = {"population_route": result["routes"]["population"], "direct_route": result["routes"]["direct"]}
        chosen = {name: result["routes"][name] for name in variants["names"]}
    else:
        paper = {key: result[key] for key in ("population_route", "direct_route")}
        chosen = variants["routes"]
    panels = [(registered_route(key).plot_label, "paper", variants["paper_terms"][key], paper[key])   # labels: the route registry
              for key in ("population_route", "direct_route")]
    panels += [(name, "Choice", r["terms"], r) for name, r in chosen.items()]
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
    ``direct_route``, ``variants``) or a ``depthcert run`` ``result.json`` (or its path); each cost is labelled with the event(s) that pay it (the
    paper's population route shows its two Hoeffding costs ``Delta_R/4`` next to the full
    gain ``Delta_R``); the dashed line is ``L_test(f_old)``: a route certifies when its bound
    (blue; orange when not certified) ends below it and its failure probability is within
    the level. Panels share the y axis, zoomed on the levels reached.

    Returns:
        The path of the written PNG.
    """
    if not isinstance(result, Mapping):
        import json

        result = json.loads(Path(result).read_text(encoding="utf-8"))
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
