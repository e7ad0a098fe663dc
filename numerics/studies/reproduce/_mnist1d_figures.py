"""Figures of the MNIST-1D suites, drawn from stored cells only (never from a live computation).

* :func:`plot_ag_max` -- AG_max against depth, one line per seed, the geometric mean, the
  paper's 5e-3 and the plateau onset marked; test loss against depth beside it.
* :func:`plot_growth_pairs` -- grown vs scratch test loss, paired by seed.

The rebound grid and the exponent fit are the run study's kinds (``rebound``,
``appendix-m`` of :data:`numerics.studies.figures.KINDS`), which read these cells unchanged.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from plumbing.figures import pyplot, save_figure

__all__ = ["PAPER_PLATEAU", "plateau_onset", "plot_ag_max", "plot_growth_pairs"]

#: Paper B's AG_max plateau level on CIFAR-10 ResNets.
PAPER_PLATEAU = 5e-3


def plateau_onset(depths: Sequence[float], curve: Sequence[float], drop: float = 0.1) -> float | None:
    """The first depth, after a drop of more than ``drop`` from the first depth, from which the curve never
    again falls by more than ``drop`` (relative) below its value.

    **Choice** (a figure annotation, not a claim's statistic): a 10% remaining drop marks
    the onset of the plateau; None when the curve never drops, or keeps falling to the last depth.
    """
    c = np.asarray(curve, dtype=float)
    for i, d in enumerate(depths[:-1]):
        if c[i] < (1 - drop) * c[0] and c[i + 1:].min() >= (1 - drop) * c[i]:
            return float(d)
    return None


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
