"""Plots of the bounds (matplotlib imported lazily, Agg backend when headless)."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from plumbing.figures import pyplot, save_figure
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




def __getattr__(name: str):
    """``plot_bound_terms``: the bound-terms waterfall of the run study (one function for ``depthcert bounds`` and
    ``depthcert run`` outputs, :func:`numerics.studies.run.plot_bound_terms`), imported on first use so that
    ``depthcert bounds --plot`` imports no torch."""
    if name == "plot_bound_terms":
        from numerics.studies.run._plot_terms import plot_bound_terms

        return plot_bound_terms
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
