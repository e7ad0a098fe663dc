"""The growth study (Paper B, THEORY §8): function-preserving growth vs training from scratch.

* :func:`growth_vs_scratch` -- insert a zero-output block into a trained depth-``D``
  network and train the whole grown network, against the same depth-``D+1`` architecture
  trained from scratch with the same total step budget.
"""
from __future__ import annotations

from typing import Mapping

import torch

__all__ = ["growth_vs_scratch"]


def growth_vs_scratch(config: Mapping, *, grow_steps: int, base_steps: int, seed: int = 0) -> dict:
    """Paper B's comparison at one final architecture, THEORY §8.

    The final architecture is the depth-``D`` reference model with a ``full`` block inserted
    at the top (``u -> f_top(u + V relu(U u + b))``):

    * grown: train the depth-``D`` model for ``base_steps``, insert the zero-output block
      (function-preserving: checked bitwise), then train *every* parameter for
      ``grow_steps``;
    * scratch: the same architecture from the same initialisation (untrained base, the
      same inserted block), every parameter trained for ``base_steps + grow_steps``.

    Both see the same training sample, optimiser and step budget; test risk is the
    exact-``y`` population risk (Monte Carlo over ``x``, with standard errors).

    Returns:
        dict with train loss, population risk (and stderr) of both,
        ``relative_test_gain = (R_scratch - R_grown) / R_scratch``, and the checks
        ``function_preserving_at_insertion``, ``same_architecture``, ``steps``.
    """
    from numerics.data import population_risk
    from numerics._config import merge_config
    from numerics.builders import build_model, make_task, train_reference
    from numerics.studies.run import validate_config
    from numerics.insertion import insert_block
    from numerics.training import train

    cfg = validate_config(config)
    task = make_task(cfg["task"], cfg["seed"])
    r, width = cfg["reference"], cfg["model"]["width"]
    x, y = task.sample(r["n"], seed=seed + 1)   # the reference's own training sample
    kw = dict(optimizer=r["optimizer"], lr=r["lr"], batch_size=r["batch_size"], seed=seed, loss=task.loss)
    base, _ = train_reference(merge_config(cfg, {"reference": {"steps": base_steps}}), task, seed)
    grown = insert_block(base, base.depth, "full", width=width, seed=seed)
    with torch.no_grad():
        preserved = torch.equal(grown(x[:256]), base(x[:256]))
    res_grown = train(grown, _all_trainable(grown), x, y, steps=grow_steps, **kw)
    scratch = insert_block(build_model(cfg, seed), cfg["model"]["depth"], "full", width=width, seed=seed)
    res_scratch = train(scratch, _all_trainable(scratch), x, y, steps=base_steps + grow_steps, **kw)
    shapes = [[tuple(p.shape) for p in m.parameters()] for m in (grown, scratch)]
    n_pop = cfg["sizes"]["population"]
    R_g = population_risk(grown, task, n_pop, seed + 4)
    R_s = population_risk(scratch, task, n_pop, seed + 4)
    return {"train_loss_grown": res_grown.final_loss, "train_loss_scratch": res_scratch.final_loss,
            "R_grown": R_g[0], "R_grown_stderr": R_g[1], "R_scratch": R_s[0], "R_scratch_stderr": R_s[1],
            "relative_test_gain": (R_s[0] - R_g[0]) / R_s[0],
            "function_preserving_at_insertion": preserved, "same_architecture": shapes[0] == shapes[1],
            "steps": {"grown": base_steps + grow_steps, "scratch": base_steps + grow_steps}}


def _all_trainable(model) -> dict:
    return {n: p.requires_grad_(True) for n, p in model.named_parameters()}
