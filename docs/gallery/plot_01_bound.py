"""
Evaluating Theorems 2 and 3 on a setup
======================================

Paper A gives two routes from a measured improvement to a guarantee on the test loss of the
network after a block is inserted: the **population route** (Theorem 2) and the **direct
route** (Theorem 3), both in this project's formalisation (``docs/THEORY.md`` §5–§6). Each route
turns a setup (the reference test loss ``L_test_old``, the margins ``Delta_R``,
``Delta_ERM``, ``Delta_test^R``, the sample sizes ``M`` and ``K``, the levels and the block's
constants) into a bound on ``L_test(f_new)`` and a failure probability. A route *certifies*
when its bound lies below ``L_test_old`` and its failure probability is at most the level.

This example evaluates the README's setup, then sweeps the training-sample size ``M`` to see
where each route starts to certify, all through :func:`bounds.routes.evaluate_routes` (every
field of a :class:`~bounds.routes.Setup` may be a numpy array). The same numbers come from the
command line with ``depthcert bounds --config examples/setup.toml --level 0.1``.
"""

# %%
# One setup
# ---------
# The README's example setup, at level 0.1. ``eps_M`` and ``eps_K`` are the closed-form
# uniform-deviation costs of THEORY §4 for the ``readout`` block family.
import dataclasses

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from bounds.routes import Setup, evaluate_routes

LEVEL = 0.1
setup = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5,
              delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5, family="readout",
              block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
rep = evaluate_routes(setup, level=LEVEL)

print(f"eps_M = {float(rep.eps_M):.4f}   eps_K = {float(rep.eps_K):.4f}")
for route in (rep.population, rep.direct):
    print(f"{route.route:<11} ({route.theorem}): bound {float(route.bound):.4f} vs L_test_old "
          f"{setup.L_test_old}, failure probability {float(route.failure_probability):.4g}")
    print(f"    {route.to_dict()['message']}")
    print(f"    smallest certifying M (K fixed): {float(route.min_M):.4g}")

# %%
# At ``M = 2·10^5`` neither route certifies: the costs ``2 eps_M`` (and ``2 eps_K`` for the
# direct route) exceed the margins. The report does not stop at "no": ``min_M`` is the smallest
# training-sample size at which the route would certify with everything else unchanged
# (closed form, since ``eps_M`` scales as ``1/sqrt(M)``).
#
# Sweeping M
# ----------
# The same setup with ``M`` as an array of 400 values: one call evaluates them all.
Ms = np.geomspace(1e4, 1e9, 400)
swept = evaluate_routes(dataclasses.replace(setup, M=Ms), level=LEVEL)

fig, ax = plt.subplots(figsize=(7, 4.2))
for route, colour, label in ((swept.population, "C0", "population route (Thm 2)"),
                             (swept.direct, "C1", "direct route (Thm 3)")):
    ax.semilogx(Ms, route.bound, color=colour, label=label)
    ok = np.asarray(route.certified)
    if ok.any():
        ax.fill_between(Ms, 0, 1, where=ok, color=colour, alpha=0.12, transform=ax.get_xaxis_transform(),
                        label=f"{label.split(' (')[0]} certifies")
    one = getattr(rep, route.route)
    if np.isfinite(one.min_M):
        ax.axvline(float(one.min_M), color=colour, ls="-.", lw=1)
ax.axhline(setup.L_test_old, color="k", ls="--", lw=1, label="L_test(f_old)")
ax.axvline(setup.M, color="grey", ls=":", lw=1, label="this setup's M")
ax.set(xlabel="training-sample size M (K = 1e5 fixed)", ylabel="bound on L_test(f_new)",
       title="Bounds vs M (dash-dot: each route's min_M)", ylim=(0.4, 1.2))
ax.legend(fontsize=8, loc="upper right")
fig.tight_layout()

# %%
# The shaded span is where the population route certifies: its bound falls with ``M``
# towards ``L_test_old - Delta_R/2 - Delta_ERM`` and crosses ``L_test_old`` at ``min_M``
# (about ``2.6·10^6`` here). The direct route's bound flattens at
# ``L_test_old - Delta_ERM - Delta_test^R + 2 eps_K``: with ``K = 10^5`` the cost ``2 eps_K``
# alone exceeds its margin, so no ``M`` makes it certify (its ``min_M`` is ``nan``, not a
# number to wait for) and it needs a larger test sample.
#
# Sample sizes that certify
# -------------------------
# A grid of ``(M, K)``: 200 × 200 setups in one call.
Mg, Kg = np.meshgrid(np.geomspace(1e4, 1e8, 200), np.geomspace(1e3, 1e8, 200))
grid = evaluate_routes(dataclasses.replace(setup, M=Mg, K=Kg), level=LEVEL)
region = np.asarray(grid.population.certified, dtype=int) + 2 * np.asarray(grid.direct.certified, dtype=int)

fig, ax = plt.subplots(figsize=(6.5, 4.6))
cmap = ListedColormap(["#f2f2f2", "#9ecae1", "#fdae6b", "#a1d99b"])
ax.pcolormesh(Mg, Kg, region, cmap=cmap, vmin=-0.5, vmax=3.5, shading="auto")
ax.set(xscale="log", yscale="log", xlabel="M (training sample S)", ylabel="K (test sample T)",
       title="Which route certifies (level 0.1)")
ax.plot(setup.M, setup.K, "k*", ms=12, label="this setup")
handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in cmap.colors]
ax.legend(handles + [ax.lines[0]], ["neither", "population only", "direct only", "both", "this setup"],
          fontsize=8, loc="lower right")
fig.tight_layout()

print(f"of the grid: population route {np.mean(grid.population.certified):.1%}, "
      f"direct route {np.mean(grid.direct.certified):.1%}, both {np.mean(region == 3):.1%}; "
      f"'some route' (union of their events) {np.mean(grid.any_route.certified):.1%}")

# %%
# The population route needs ``K`` only for its Hoeffding tails at deviation ``Delta_R/4``
# (their probability must fit the level), so above a modest ``K`` only ``M`` matters (the
# vertical boundary); the direct route pays ``2 eps_K`` in its bound, so it needs both sizes
# large. "Some route certifies" (``grid.any_route``) pays for the union of the failure events
# of every route taking part: here ``delta + delta'`` = 0.1 plus the population route's
# Hoeffding tails, so it fits the level only where ``K`` makes those tails negligible --
# picking the better route after seeing the numbers is not free. These are statements about the formulas at given
# margins: whether a trained network *achieves* such margins is what the demo and
# ``depthcert validity`` measure (rates over draws, not one evaluation).
