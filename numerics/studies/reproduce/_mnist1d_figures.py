"""Figures of the MNIST-1D suites, drawn from stored cells only (never from a live computation).

* :func:`plot_ag_max` -- AG_max against depth, one line per seed, the geometric mean, the
  paper's 5e-3 and the plateau onset marked; test loss against depth beside it.
* :func:`plot_ag_conventions` -- AG_max against depth under each convention (training sample
  and held-out probe; top site, stem, max over sites; one panel each), the test loss beside.
* :func:`plot_growth_pairs` -- grown vs scratch test loss, paired by seed.

The rebound grid and the exponent fit are the run study's kinds (``rebound``,
``appendix-m`` of :data:`numerics.studies.figures.KINDS`), which read these cells unchanged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from plumbing.figures import pyplot, save_figure
from numerics.studies.reproduce._power import plateau_onset

__all__ = ["PAPER_PLATEAU", "plateau_onset", "plot_ag_conventions", "plot_ag_max", "plot_growth_pairs"]

#: Paper B's AG_max plateau level on CIFAR-10 ResNets.
PAPER_PLATEAU = 5e-3


def _by_seed(cells: Sequence[Mapping], key: str) -> dict:
    out: dict = {}
    for c in cells:
        out.setdefault(c["config"]["seed"], []).append((c["config"]["model"]["depth"], c[key]))
    return {s: sorted(v) for s, v in out.items()}


def plot_ag_max(cells: Sequence[Mapping], out_dir: str | Path) -> list[str]:
    """``out_dir/ag-max.png``: AG_max per seed (log) with the plateau marked, and test loss, against depth."""
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ag = _by_seed(cells, "AG_max")
    for s, pts in ag.items():
        d, v = np.array(pts).T
        a1.plot(d, v, "o-", ms=3, lw=0.8, alpha=0.6, label=f"seed {s}")
    depths = sorted({c["config"]["model"]["depth"] for c in cells})
    gm = [np.exp(np.mean([np.log(c["AG_max"]) for c in cells if c["config"]["model"]["depth"] == d])) for d in depths]
    a1.plot(depths, gm, "s-", color="k", lw=2, label="geometric mean")
    a1.axhline(PAPER_PLATEAU, color="C3", ls="--", label="Paper B's plateau 5e-3 (CIFAR-10)")
    onset = plateau_onset(depths, gm)
    if onset is not None:
        a1.axvline(onset, color="C2", ls=":", label=f"plateau onset D = {onset:g} (< 10% further drop)")
    a1.set(yscale="log", xlabel="depth D (residual blocks)", ylabel="AG_max = max_i,l ||m_i||",
           title="AG_max vs depth (MNIST-1D, 1-D ResCNN)")
    a1.legend(fontsize=6)
    for s, pts in _by_seed(cells, "L_test").items():
        d, v = np.array(pts).T
        a2.plot(d, v, "o-", ms=3, lw=0.8, alpha=0.6, label=f"seed {s}")
    a2.set(yscale="log", xlabel="depth D", ylabel="test loss (cross-entropy on T)", title="Test loss vs depth")
    a2.legend(fontsize=6)
    return [str(save_figure(fig, Path(out_dir) / "ag-max.png"))]


def plot_ag_conventions(cells: Sequence[Mapping], out_dir: str | Path) -> list[str]:
    """``out_dir/ag-max-conventions.png``: the seeds' geometric-mean AG_max per convention (training sample, held-out
    probe; per-sample loss: a batch mean over B divides every value by B) and the mean test loss, against depth."""
    from numerics.studies.reproduce._mnist1d_signals import AG_CONVENTIONS, ag_curves

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    have = cells[0]["diagnostics"]["sites"]
    for ax, sample in zip(axes[:2], ("training sample", "held-out probe")):
        for k, (name, key, site) in enumerate(c for c in AG_CONVENTIONS if c[0].startswith(sample)):
            if key not in have:
                continue
            D, log_ag, loss = ag_curves(cells, key, site)
            ax.plot(D, np.exp(log_ag.mean(0)), "os^"[k] + "-", label=site)
            onset = plateau_onset(D, np.exp(log_ag.mean(0)))
            if onset is not None:
                ax.axvline(onset, color=f"C{k}", ls=":", lw=0.8)
        ax.axhline(PAPER_PLATEAU, color="C3", ls="--", lw=0.8, label="5e-3 (seed 001, CIFAR-10)")
        ax.set(yscale="log", xlabel="depth D", ylabel="AG_max = max_i ||m_i|| (per-sample loss)",
               title=f"AG_max, {sample}")
        ax.legend(fontsize=7)
    D, _, loss = ag_curves(cells, "AG_max", "top site")
    axes[2].plot(D, loss.mean(0), "o-k")
    onset = plateau_onset(D, loss.mean(0))
    if onset is not None:
        axes[2].axvline(onset, color="k", ls=":", lw=0.8, label=f"stops improving at D = {onset:g} (10% rule)")
        axes[2].legend(fontsize=7)
    axes[2].set(yscale="log", xlabel="depth D", ylabel="test loss (cross-entropy on T)", title="Test loss (mean over seeds)")
    return [str(save_figure(fig, Path(out_dir) / "ag-max-conventions.png"))]


def plot_growth_pairs(cells: Sequence[Mapping], out_dir: str | Path) -> list[str]:
    """``out_dir/growth-vs-scratch.png``: test (and train) loss of grown vs scratch, one line per seed."""
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key in ((a1, "L_test"), (a2, "L_train")):
        for c in cells:
            ax.plot([0, 1], [c[f"{key}_scratch"], c[f"{key}_grown"]], "o-", color="C0", alpha=0.6)
        ax.set(xticks=[0, 1], xticklabels=["scratch", "grown"], yscale="log", ylabel=f"{key} (cross-entropy)",
               title=f"{key}: paired by seed ({len(cells)} seeds)")
    return [str(save_figure(fig, Path(out_dir) / "growth-vs-scratch.png"))]
