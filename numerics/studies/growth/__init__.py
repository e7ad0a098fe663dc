"""The growth study (Paper B, THEORY §8): growth to saturation and the §8 experiments around it.

Public entry points (plain dicts in, plain dicts out; each has a figure and a CLI entry,
``depthcert grow`` / ``depthcert study NAME``; ``quick=True`` shrinks every size):

* :func:`grow` -- scan -> insert at the best site -> train -> rescan until saturated,
  ``certified gain < 2 eps_M`` or ``max_depth``; ``DIR/trajectory.json`` atomically after
  every step, resumable (:mod:`numerics.studies.growth._loop`). Figure: :func:`plot_growth`.
* :func:`growth_vs_scratch_study` -- the grown model against the same final architecture
  trained from scratch with the same step budget, over seeds: relative test-loss
  difference with a 95% interval.
* :func:`ag_max_vs_depth` -- AG_max (and risks) of networks trained at each depth, and
  where AG_max falls below a plateau threshold.
* :func:`local_insertion` -- the immediate loss reduction of one block inserted along the
  negative activation gradient (Theorem 1's step), against the depth reached.
* :func:`optimizer_invariance` -- the first step of zero-state SGD, momentum and Adam on a
  network: ``<step, G> < 0`` iff ``G != 0``; no first-order decrease at a saturated site.
* :func:`growth_vs_scratch` -- the earlier single-comparison API (one reference depth, a
  ``full`` block at the top), kept unchanged.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Mapping, Sequence

import torch

from plumbing.config import merge_config
from numerics.studies.growth._loop import (DEFAULT_GROW_CONFIG, GROW_SCHEMA, GROWTH_SCHEMA, STOP_REASONS, grow,
                                           grow_model, validate_grow_config)
from numerics.studies.growth._result import GrowthResult, load, write

__all__ = ["DEFAULT_GROW_CONFIG", "GROWTH_SCHEMA", "GROW_SCHEMA", "GrowthResult", "QUICK", "STOP_REASONS", "STUDIES", "STUDY_DEFAULTS",
           "ag_max_vs_depth", "grow", "grow_model", "growth_vs_scratch", "growth_vs_scratch_study",
           "load", "local_insertion", "optimizer_invariance", "plot_growth", "plot_study", "run", "run_study",
           "validate_grow_config", "write"]

#: Light sizes (seconds on 2 cores) for tests, notebooks and ``reproduce --quick``.
QUICK: dict = {
    "task": {"d_in": 4, "depth": 2, "width": 4, "noise_std": 0.02, "branch_scale": 4.0, "n_test": 1000,
             "n_population": 2000},
    "model": {"width": 8, "depth": 0},
    "reference": {"n": 2000, "steps": 150, "lr": 0.01, "batch_size": 128, "anneal_steps": 100},
    "saturation": {"probe_n": 512, "batch_size": 512, "beta_n": 256, "n_chunks": 8, "width": 8},
    "growth": {"max_depth": 2, "steps_per_growth": 150, "eps_stop": False},
}

#: The studies start from a depth-0 student (so that growth inserts blocks) unless told otherwise.
STUDY_DEFAULTS: dict = {"model": {"depth": 0}}


def _config(config: Mapping | None, quick: bool) -> dict:
    """The user's config over :data:`QUICK` (when ``quick``) over :data:`STUDY_DEFAULTS`."""
    from plumbing.validation import check_schema

    from numerics.builders import own_part

    config, _ = own_part(config or {}, GROW_SCHEMA)
    check_schema(config, GROW_SCHEMA)        # unknown keys and values out of range: InputError
    base = merge_config(STUDY_DEFAULTS, QUICK) if quick else STUDY_DEFAULTS
    return merge_config(base, config)


def run(config: Mapping, out_dir: str | Path, *, progress: bool = True) -> GrowthResult:
    """:func:`grow` as a typed result (:class:`GrowthResult`; ``trajectory.json`` in ``out_dir`` as
    :func:`grow` writes it, resumable)."""
    return GrowthResult.from_dict(grow(config, out_dir, progress=progress))


def plot_growth(trajectory: Mapping | str | Path, path: str | Path) -> Path:
    """AG_max and loss against depth with the stop marked, from a trajectory or its folder."""
    from plumbing.store import load_result
    from numerics.studies.growth._plots import plot_trajectory

    return plot_trajectory(load_result(trajectory, "trajectory.json"), path)


def growth_vs_scratch_study(config: Mapping | None = None, *, seeds: Sequence[int] = (0, 1, 2, 3, 4),
                            out_dir: str | Path | None = None, quick: bool = False, progress: bool = False) -> dict:
    """Grown vs scratch at the same final architecture and step budget, over ``seeds`` (THEORY §8).

    Returns:
        ``{"per_seed": [...], "relative_mean", "relative_ci", "grown_better_fraction", ...}``
        with ``relative = (L_test_scratch - L_test_grown) / L_test_scratch``.
    """
    from numerics.studies.growth._studies import growth_vs_scratch_seeds

    cfg = _config(config, quick)
    seeds = list(seeds)[:2] if quick else list(seeds)
    with tempfile.TemporaryDirectory() as tmp:
        return growth_vs_scratch_seeds(cfg, seeds, out_dir or tmp, progress=progress)


def ag_max_vs_depth(config: Mapping | None = None, *, depths: Sequence[int] | None = None, quick: bool = False,
                    plateau: float = 5e-3) -> dict:
    """AG_max, test loss and population risk of networks trained at each depth (THEORY §8).

    Returns:
        ``{"depths", "AG_max", "L_test", "R", "plateau_threshold", "plateau_depth"}``;
        ``plateau_depth`` is the first depth with AG_max below ``plateau`` (None if none).
    """
    from numerics.studies.growth._studies import depth_profile

    depths = list(depths or ([0, 1, 2] if quick else [0, 1, 2, 3, 4, 5]))
    prof = depth_profile(_config(config, quick), depths)
    below = [d for d, a in zip(prof["depths"], prof["AG_max"]) if a < plateau]
    return {k: prof[k] for k in ("depths", "AG_max", "L_test", "R", "saturated")} | {
        "plateau_threshold": plateau, "plateau_depth": below[0] if below else None}


def local_insertion(config: Mapping | None = None, *, depths: Sequence[int] | None = None,
                    quick: bool = False) -> dict:
    """Immediate loss reduction of one block inserted along ``-G`` at the best site, per depth (THEORY §3, §8).

    Returns:
        ``{"depths", "best_site", "gain_bound", "realised_gain_population", "realised_gain_test",
        "gain_bound_natural", "realised_gain_natural_population", "R"}``.
    """
    from numerics.studies.growth._studies import depth_profile

    depths = list(depths or ([0, 1, 2] if quick else [0, 1, 2, 3, 4, 5]))
    prof = depth_profile(_config(config, quick), depths)
    return {k: prof[k] for k in ("depths", "best_site", "gain_bound", "realised_gain_population",
                                 "realised_gain_test", "gain_bound_natural", "realised_gain_natural_population", "R")}


def optimizer_invariance(config: Mapping | None = None, *, quick: bool = False, lr: float = 1e-4) -> dict:
    """First zero-state step of SGD, momentum and Adam on a network (THEORY §8 invariance)."""
    from numerics.studies.growth._studies import optimizer_invariance as _invariance

    return _invariance(_config(config, quick), lr=lr)


STUDIES = {"growth-vs-scratch": growth_vs_scratch_study, "agmax-depth": ag_max_vs_depth,
           "local-insertion": local_insertion, "optimizer-invariance": optimizer_invariance}


def run_study(name: str, config: Mapping | None = None, out_dir: str | Path | None = None, *,
              quick: bool = False, progress: bool = False) -> dict:
    """Run the study ``name`` (a key of :data:`STUDIES`); write ``NAME.json`` and ``NAME.png`` to ``out_dir``."""
    from plumbing.io import atomic_write_json
    from plumbing.validation import InputError

    from plumbing.io import check_writable_dir

    if name not in STUDIES:
        raise InputError("study", f"one of {sorted(STUDIES)}", name)
    if out_dir is not None:
        check_writable_dir(out_dir)     # before any work
    import inspect

    fn = STUDIES[name]
    extra = {"progress": progress} if "progress" in inspect.signature(fn).parameters else {}
    result = fn(config, quick=quick, **extra)
    if out_dir is not None:
        out = Path(out_dir)
        atomic_write_json(out / f"{name}.json", result)
        plot_study(name, result, out / f"{name}.png")
    return result


def plot_study(name: str, result: Mapping, path: str | Path) -> Path:
    """The figure of a stored study result."""
    from numerics.studies.growth import _plots as P

    if name == "growth-vs-scratch":
        return P.plot_versus(result, path)
    if name == "agmax-depth":
        return P.plot_depth_profile(result, [("AG_max", "AG_max"), ("R", "population risk")], path)
    if name == "local-insertion":
        return P.plot_depth_profile(result, [("gain_bound", "bound along -G"),
                                             ("realised_gain_population", "realised along -G (population)"),
                                             ("gain_bound_natural", "bound along -G Sigma^+"),
                                             ("realised_gain_natural_population", "realised along -G Sigma^+")], path)
    return P.plot_invariance(result, path)


def growth_vs_scratch(config: Mapping, *, grow_steps: int, base_steps: int, seed: int = 0) -> dict:
    """Paper B's comparison at one final architecture, THEORY §8.

    The final architecture is the depth-``D`` reference model with a ``full`` block inserted
    at the top (``u -> f_top(u + V relu(U u + b))``):

    * grown: train the depth-``D`` model for ``base_steps``, insert the zero-output block
      (function-preserving: checked bitwise), then train *every* parameter for
      ``grow_steps``;
    * scratch: the same architecture from the same initialisation (untrained base, the
      same inserted block), every parameter trained for ``base_steps + grow_steps``.

    Both see the same sample, optimiser and step budget, drawn from the run study's roles (the teacher
    of ``cfg["seed"]``, the rest of ``seed``); test risk: the exact-``y`` population risk (Monte Carlo).

    Returns:
        dict with train loss, population risk (and stderr) of both,
        ``relative_test_gain = (R_scratch - R_grown) / R_scratch``, and the checks
        ``function_preserving_at_insertion``, ``same_architecture``, ``steps``.
    """
    from numerics.data import population_risk
    from numerics.builders import build_model, make_task, reference_seeds, train_reference
    from numerics.seeding import Streams
    from numerics.studies.run import validate_config
    from numerics.insertion import insert_block
    from numerics.training import train

    cfg = validate_config(config)
    task = make_task(cfg["task"], Streams(cfg["seed"], cfg["data_seed"]).seed_for("teacher"))
    streams = Streams(seed, cfg["data_seed"])
    init, sample, _ = reference_seeds(streams)
    r, width, ins = cfg["reference"], cfg["model"]["width"], streams.seed_for("insertion") % 2**31
    x, y = task.sample(r["n"], seed=sample)   # the reference's own training sample
    kw = dict(optimizer=r["optimizer"], lr=r["lr"], batch_size=r["batch_size"], loss=task.loss,
              seed=streams.seed_for("block_training"))
    base, _ = train_reference(merge_config(cfg, {"reference": {"steps": base_steps}}), task, streams=streams)
    grown = insert_block(base, base.depth, "full", width=width, seed=ins)
    with torch.no_grad():
        preserved = torch.equal(grown(x[:256]), base(x[:256]))
    res_grown = train(grown, _all_trainable(grown), x, y, steps=grow_steps, **kw)
    scratch = insert_block(build_model(cfg, init), cfg["model"]["depth"], "full", width=width, seed=ins)
    res_scratch = train(scratch, _all_trainable(scratch), x, y, steps=base_steps + grow_steps, **kw)
    shapes = [[tuple(p.shape) for p in m.parameters()] for m in (grown, scratch)]
    R_g, R_s = (population_risk(m, task, cfg["sizes"]["population"], streams.seed_for("population"))
                for m in (grown, scratch))
    return {"train_loss_grown": res_grown.final_loss, "train_loss_scratch": res_scratch.final_loss,
            "R_grown": R_g[0], "R_grown_stderr": R_g[1], "R_scratch": R_s[0], "R_scratch_stderr": R_s[1],
            "relative_test_gain": (R_s[0] - R_g[0]) / R_s[0],
            "function_preserving_at_insertion": preserved, "same_architecture": shapes[0] == shapes[1],
            "steps": {"grown": base_steps + grow_steps, "scratch": base_steps + grow_steps}}


def _all_trainable(model) -> dict:
    return {n: p.requires_grad_(True) for n, p in model.named_parameters()}
