"""
Depth scaling: Appendix M and a fitted power law
================================================

Appendix M of Paper A turns the insertion mechanism into a power law in depth. Under this
project's Assumptions G (the first-order signal decays, ``s(D) ~ D^-alpha`` with
``alpha > 1/2``) and G' (the gain of the next block is ``~ s(D)^2``), telescoping the gains gives
``R(D) - R_inf = Theta(D^-(2 alpha - 1))`` (THEORY §7; the assumptions are **Choice**:
the summaries name them without stating them).

This example reads the predictions from :mod:`bounds.appendix_m`, checks the fitting
machinery of :mod:`bounds.fitting` on a curve with a known exponent, then runs a tiny depth
sweep of the teacher task (:mod:`numerics.studies.sweeps`) and fits it with
:func:`numerics.studies.scaling.appendix_m`. The sweep's sizes are far below those of
``examples/sweeps/teacher_depth.toml``, so its verdict decides nothing; it shows what the study
computes and how it reports a failed assumption.
"""

# %%
# What Appendix M predicts
# ------------------------
# Symbolic, from :mod:`bounds.appendix_m` (never re-typed here).
import dataclasses
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from bounds import appendix_m as am
from bounds.fitting import bootstrap_scaling_law
from numerics.studies.scaling import appendix_m, exponent_table
from numerics.studies.sweeps import load_cells, make_spec, sweep

print("R(D) - R_inf is between", am.excess_risk_bounds())
print("so R(D) - R_inf ~ D^-a with a =", am.excess_exponent())
print("best depth at data size M: D* =", am.optimal_depth(), "~ M^", am.growth_exponent(am.optimal_depth()))
print("deepest certified depth ~ M^", am.growth_exponent(am.deepest_certified_depth()))

# %%
# The fit, on a curve with a known exponent
# -----------------------------------------
# ``L(x) = E + A x^-alpha`` is fitted in log-sum-exp form with a Huber loss on log residuals
# (L-BFGS-B from a grid of starts), with percentile-bootstrap intervals from resampled points.
# Synthetic data with ``alpha = 1.2``, ``E = 0.05`` and 3% multiplicative noise:
rng = np.random.default_rng(0)
x = np.repeat([1.0, 2, 3, 4, 6, 8, 12, 16], 3)
y = (0.05 + 0.5 * x**-1.2) * np.exp(rng.normal(0, 0.03, x.size))
bf = bootstrap_scaling_law(x, y, n_boot=300, seed=0)
print(f"alpha_hat = {bf.fit.alpha:.3f}, 95% interval [{bf.alpha_interval[0]:.3f}, {bf.alpha_interval[1]:.3f}] "
      f"(true 1.2); E = {bf.fit.E:.4f} [{bf.E_interval[0]:.4f}, {bf.E_interval[1]:.4f}] (true 0.05)")

grid = np.geomspace(1, 16, 100)
curves = np.array([dataclasses.replace(bf.fit, E=e, A=a, alpha=al).predict(grid) for e, a, al in bf.samples])
fig, ax = plt.subplots(figsize=(6, 4.2))
ax.loglog(x, y - bf.fit.E, "o", ms=4, label="data minus fitted E")
ax.loglog(grid, bf.fit.predict(grid) - bf.fit.E, "C1", label=f"fit: A x^-{bf.fit.alpha:.2f}")
band = np.percentile(curves - bf.fit.E, [2.5, 97.5], axis=0)
ax.fill_between(grid, np.maximum(band[0], 1e-6), band[1], color="C1", alpha=0.2, label="95% bootstrap band")
ax.loglog(grid, 0.5 * grid**-1.2, "k:", label="true 0.5 x^-1.2")
ax.set(xlabel="x", ylabel="L(x) - E", title="Known exponent recovered")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# A tiny depth sweep
# ------------------
# A base ``depthcert run`` config (a light version of ``examples/sweeps/teacher_exp.toml``: a
# depth-4 width-8 teacher, reference networks of width 8) and a grid over the reference depth
# and the seed. Each cell trains a reference of that depth, measures the per-site signals
# ``||G_l||`` on an independent probe sample and the population risk ``R(D)``; cells are stored
# atomically in a temporary folder, and :func:`~numerics.studies.sweeps.sweep` resumes from it.
BASE = {"seed": 0, "task": {"kind": "regression", "d_in": 4, "depth": 4, "width": 8, "noise_std": 0.05},
        "model": {"width": 8, "depth": 1, "norm": "rms", "eps_n": 0.0},
        "reference": {"n": 2000, "optimizer": "adam", "lr": 0.01, "steps": 200, "batch_size": 256},
        "insertion": {"at": -1, "family": "readout", "width": 16, "seed": 2, "output_cap": 0.5},
        "block_training": {"optimizer": "sgd", "lr": 0.5, "steps": 20, "batch_size": 1024},
        "sizes": {"M": 2000, "K": 2000, "population": 4000, "delta": 0.025, "delta_prime": 0.025}}
spec = make_spec(BASE, {"model.depth": [1, 2, 3, 4, 6, 8], "seed": [0, 1]})
folder = tempfile.mkdtemp()
outcome = sweep(spec, folder, threads=1, progress=False)
print(f"{outcome.computed} cells computed, {outcome.failed} failed, in {outcome.wall_s:.1f} s")

# %%
# Appendix M on the stored cells
# ------------------------------
# ``s(D) = max_l ||G_l||`` is fitted by ``c D^-alpha`` and ``R(D)`` by ``R_inf + A D^-a``, both
# refitted on the same bootstrap resamples of the cells, so ``a - (2 alpha_hat - 1)`` has its own
# interval; the verdict follows a rule fixed before any sweep was run
# (:data:`numerics.studies.scaling.AGREEMENT_RULE`).
res = appendix_m(load_cells(folder), n_boot=200)
print(exponent_table(res))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
depths = np.geomspace(1, 8, 50)
ax1.loglog(res.depths, res.signal, "o", label="cells (2 seeds per depth)")
ax1.loglog(depths, res.signal_fit.fit.predict(depths), "C1",
           label=f"fit c D^-alpha: alpha_hat = {res.alpha.estimate:.2f} [{res.alpha.interval[0]:.2f}, {res.alpha.interval[1]:.2f}]")
ax1.set(xlabel="depth D", ylabel="s(D) = max_l ||G_l||", title="signal vs depth")
ax1.legend(fontsize=8, loc="lower right")
excess = res.risk - res.risk_fit.fit.E    # cells at or below the fitted R_inf are not drawn (log axis)
ax2.loglog(res.depths, np.where(excess > 0, excess, np.nan), "o", label="R(D) - fitted R_inf")
ax2.loglog(depths, res.risk_fit.fit.predict(depths) - res.risk_fit.fit.E, "C1",
           label=f"fit A D^-a, a = {res.excess_observed.estimate:.2f}")
ax2.set(xlabel="depth D", ylabel="excess population risk", title=f"risk vs depth: {res.verdict}")
ax2.legend(fontsize=8)
for ax in (ax1, ax2):
    ax.set_xticks([1, 2, 3, 4, 6, 8], ["1", "2", "3", "4", "6", "8"])
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
fig.tight_layout()

# %%
# Here the signal does not decay with depth: ``alpha_hat`` is negative, its interval lies below
# 1/2, so Assumption G fails at this level and Appendix M predicts no exponent -- the verdict
# is "inconclusive" by the rule, not a fit forced through the points. The excess risk is flat
# (the fitted ``a`` sits at its lower limit 0). The full-size sweep shows the same on this task:
# ``depthcert sweep --config examples/sweeps/teacher_depth.toml --out DIR --workers 2`` (18 cells)
# gave ``alpha_hat`` = -1.01 [-1.54, 0.02] (``docs/RESULTS.md``). Two seeds per depth at these
# sizes are two draws per depth: read the intervals, not the points.
