"""Figures of the growth studies, drawn from their stored results (never recomputed)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from plumbing.figures import pyplot, save_figure


def plot_trajectory(traj: Mapping, path: str | Path) -> Path:
    """AG_max and the losses (train, test, population) against depth; the stop marked."""
    plt = pyplot()
    steps = traj["steps"]
    depth = [s["depth"] for s in steps]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.4))
    a1.plot(depth, [s["AG_max"] for s in steps], "o-", label="AG_max")
    a1.set_yscale("log")
    a1.set_ylabel("AG_max (max over probe samples and sites)")
    for key, label in (("L_train", "train"), ("L_test", "test"), ("R", "population")):
        a2.plot(depth, [s[key] for s in steps], "o-", label=label)
    a2.set_ylabel("loss")
    rule = traj.get("stop_rule")
    for ax in (a1, a2):
        ax.set_xlabel("depth")
        ax.set_xticks(depth)
        if rule:
            ax.axvline(rule["depth"], color="k", ls="--", lw=1)
            ax.text(rule["depth"], ax.get_ylim()[1], f" stop: {rule['reason']}", va="top", fontsize=7)
        ax.legend(fontsize=7)
    fig.suptitle(f"growth: stopped because {traj.get('stopped_because')}", fontsize=9)
    return save_figure(fig, path)


def plot_versus(result: Mapping, path: str | Path) -> Path:
    """Grown vs scratch test loss per seed, and the mean relative difference with its interval."""
    plt = pyplot()
    rows = result["per_seed"]
    fig, ax = plt.subplots(figsize=(5, 3.4))
    xs = range(len(rows))
    ax.plot(xs, [r["L_test_grown"] for r in rows], "o", label="grown")
    ax.plot(xs, [r["L_test_scratch"] for r in rows], "s", label="scratch")
    ax.set_xticks(list(xs), [str(r["seed"]) for r in rows])
    ax.set_xlabel("seed")
    ax.set_ylabel("test loss")
    lo, hi = result["relative_ci"]
    ax.set_title(f"(scratch - grown)/scratch = {result['relative_mean']:.3g} [{lo:.3g}, {hi:.3g}]", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def plot_depth_profile(result: Mapping, keys: list[tuple[str, str]], path: str | Path, log: bool = True) -> Path:
    """Quantities of a depth profile (``result["depths"]``) against depth."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for key, label in keys:
        vals = [max(float(v), 1e-12) if log else float(v) for v in result[key]]
        ax.plot(result["depths"], vals, "o-", label=label)
    if log:
        ax.set_yscale("log")
    if result.get("plateau_threshold"):
        ax.axhline(result["plateau_threshold"], color="k", ls=":", lw=1)
    ax.set_xlabel("depth")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def plot_invariance(result: Mapping, path: str | Path) -> Path:
    """<step, G> and the first-order loss change per optimiser, at an improvable and a saturated site."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    cases = list(result["cases"])
    opts = list(result["cases"][cases[0]]["optimizers"])
    width = 0.8 / len(cases)
    for k, case in enumerate(cases):
        vals = [abs(result["cases"][case]["optimizers"][o]["inner_with_G"]) or 1e-300 for o in opts]
        ax.bar([i + k * width for i in range(len(opts))], vals, width, label=f"{case}: |<step, G>|")
    ax.set_yscale("log")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(opts))], opts)
    ax.legend(fontsize=7)
    ax.set_title("first step of zero-state optimisers", fontsize=9)
    return save_figure(fig, path)
