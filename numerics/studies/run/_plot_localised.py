"""The localised certificates' bounds decomposed into their terms (THEORY §6b, **Choice**), as waterfalls.

A figure of its own (``localised_terms.png`` of ``depthcert run``): the localised costs are
orders of magnitude below the paper's (``1e-6`` against ``1e-2`` on a converged reference), so
a shared axis with :func:`numerics.studies.run.plot_bound_terms` would hide them. Drawn from a
stored ``result.json`` only, with the same bars (reference, gains, costs labelled with the
events that pay them, the bound) and the route fixed before the data marked in its title.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from plumbing.figures import pyplot, save_figure
from numerics.studies.run._plot_terms import _grid, _waterfall, _zoom

__all__ = ["plot_localised_terms"]


def plot_localised_terms(result: Mapping | str | Path, path: str | Path) -> Path:
    """One waterfall per ``routes.localised_*`` of a run's ``result.json`` (or its path).

    Raises:
        ValueError: the result holds no localised route.

    Returns:
        The path of the written PNG.
    """
    if not isinstance(result, Mapping):
        import json

        result = json.loads(Path(result).read_text(encoding="utf-8"))
    routes = {k: r for k, r in result["routes"].items() if k.startswith("localised_")}
    if not routes:
        raise ValueError("result has no routes.localised_*, must come from a run with the localised routes.")
    use = ((result.get("localised") or {}).get("use") or {}).get("name")
    plt = pyplot()
    fig, axes = _grid(plt, len(routes))
    reference, reached = float(result["L_test_old"]), []
    for ax, (name, r) in zip(axes.flat, routes.items()):
        reached += _waterfall(ax, r["terms"], r, reference)
        mark = " [use: fixed before the data]" if name == use else ""
        ax.set_title(f"{name.removeprefix('localised_')}{mark}\nfailure p {r['failure_probability']:.3g}", fontsize=8)
    _zoom(axes, reached)
    fig.suptitle("Localised certificates (THEORY §6b, Choice): L_test(f_old) (grey), gains (green), costs (red) "
                 "[events], bound (blue: certified alone); dashed: L_test(f_old)", fontsize=9)
    return save_figure(fig, path)
