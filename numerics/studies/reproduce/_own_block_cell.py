"""The cells of the claim ``growth_own_block``: insertion of the ResCNN1d's own block, counted budgets, three arms.

What each arm does, why the insertion hands the trained norm up and why every norm has
``eps =`` :data:`NORM_EPS`: :mod:`numerics.studies.reproduce._growth_own_block` (the claim).
"""
from __future__ import annotations

import copy
import time
from typing import Mapping

import numpy as np
import torch

__all__ = ["NORM_EPS", "BudgetCounter", "insert_own_block", "insertion_deviation", "own_block_cell", "schedules",
           "set_norm_eps", "validated"]

#: **Choice**: the norms' eps in every arm (module docstring: exact insertion needs eps -> 0).
NORM_EPS = 1e-12
_ARMS = ("grown", "scratch_phases", "scratch_pooled")


def set_norm_eps(net: torch.nn.Module, eps: float = NORM_EPS) -> torch.nn.Module:
    """``net`` with the ``eps`` of every group / channel norm set to ``eps`` (in place; returned)."""
    from numerics.zoo_cnn1d import ChannelNorm

    for m in net.modules():
        if isinstance(m, (torch.nn.GroupNorm, ChannelNorm)):
            m.eps = float(eps)
    return net


def _reset_norm(norm: torch.nn.Module) -> None:
    with torch.no_grad():
        norm.weight.fill_(1.0)
        if getattr(norm, "bias", None) is not None:
            norm.bias.zero_()


def insert_own_block(net, seed: int, at: int | None = None):
    """A copy of the ResCNN1d ``net`` with one new block of its own type inserted before block ``at``.

    The new :class:`~numerics.zoo_cnn1d.ResBlock1d` (``conv1`` drawn from ``seed``, ``conv2``
    zero: the output projection) takes over the trained norm of the block below (the stem's
    for ``at = 0``), which gets a fresh one (weight 1, bias 0): the network's function is
    unchanged when its norms' ``eps`` is 0 (module docstring). ``at`` defaults to the top.
    """
    from numerics.zoo_cnn1d import ResBlock1d

    g = copy.deepcopy(net)
    at = g.depth if at is None else int(at)
    if not 0 <= at <= g.depth:
        raise ValueError(f"at == {at}, must be in [0, {g.depth}].")
    below = g.stem_norm if at == 0 else g.blocks[at - 1].norm
    p = next(g.parameters())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        block = ResBlock1d(g.width, g.stem.kernel_size[0], g.norm_kind, getattr(below, "num_groups", 1))
    block.to(device=p.device, dtype=p.dtype)
    with torch.no_grad():
        block.conv2.weight.zero_()
        block.conv2.bias.zero_()
    block.norm = copy.deepcopy(below)   # the trained norm moves up ...
    _reset_norm(below)                  # ... and the block below gets a fresh one
    g.blocks.insert(at, block)
    g.depth += 1
    return g


@torch.no_grad()
def insertion_deviation(old, new, x: torch.Tensor) -> dict:
    """``max |new(x) - old(x)|`` and its ratio to ``max(1, max |old(x)|)`` (:data:`IDENTITY_TOL`)."""
    f0 = torch.cat([old(x[i:i + 4096]) for i in range(0, x.shape[0], 4096)])
    f1 = torch.cat([new(x[i:i + 4096]) for i in range(0, x.shape[0], 4096)])
    dev = float((f1 - f0).abs().max())
    return {"max_abs_dev": dev, "rel_dev": dev / max(1.0, float(f0.abs().max())), "n_inputs": int(x.shape[0])}


class BudgetCounter:
    """Counts optimiser steps and rows passed through backward while active (a context manager).

    Steps: a global optimiser step post-hook (every ``torch.optim`` step). Rows: each
    :meth:`attach`-ed network's output, when it requires grad, gets a tensor hook adding its
    number of rows when backward reaches it (one sample-gradient per row per backward).
    """

    def __init__(self):
        self.steps, self.sample_gradients, self.backward_passes = 0, 0, 0
        self._handles = []

    def _rows(self, grad: torch.Tensor) -> None:
        self.sample_gradients += int(grad.shape[0])
        self.backward_passes += 1

    def _on_forward(self, module, args, out) -> None:
        if torch.is_grad_enabled() and out.requires_grad:
            out.register_hook(self._rows)

    def attach(self, net: torch.nn.Module) -> None:
        """Count the backward passes through ``net``'s output."""
        self._handles.append(net.register_forward_hook(self._on_forward))

    def _step(self, opt, args, kwargs) -> None:
        self.steps += 1

    def __enter__(self) -> "BudgetCounter":
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._handles.append(register_optimizer_step_post_hook(self._step))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()

    def to_dict(self) -> dict:
        return {"steps": self.steps, "sample_gradients": self.sample_gradients,
                "backward_passes": self.backward_passes}


def _recipe(name: str, r: Mapping, steps: int, depth: int, n: int) -> list[dict]:
    """One recipe run (:func:`numerics.builders.train_phases`): main, then anneal at 8x and 16x batch."""
    a, b = int(r.get("anneal_steps", 0)), int(r["batch_size"])
    out = [(f"{name}/main", steps, r["lr"], b), (f"{name}/anneal_8x", a // 2, r["lr"] / 5, 8 * b),
           (f"{name}/anneal_16x", a - a // 2, r["lr"] / 25, 16 * b)]
    return [{"phase": p, "steps": int(s), "lr": float(lr), "batch_size": min(bs, n), "depth": depth}
            for p, s, lr, bs in out if s > 0]


def schedules(cfg: Mapping) -> dict[str, list[dict]]:
    """Per arm the phases ``{phase, steps, lr, batch_size, depth}`` (module docstring), from the
    cell config: ``model.depth`` (base), ``growth.max_depth`` (final), ``growth.steps_per_growth``,
    ``[reference]`` (recipe, training sample size ``n``)."""
    r, g = cfg["reference"], cfg["growth"]
    d0, d1, n = int(cfg["model"]["depth"]), int(g["max_depth"]), int(r["n"])
    if d1 <= d0:
        raise ValueError(f"growth.max_depth == {d1}, must exceed model.depth == {d0} (nothing to grow).")
    grown = _recipe("base", r, r["steps"], d0, n)
    for k, depth in enumerate(range(d0 + 1, d1 + 1), 1):
        grown += _recipe(f"grow{k}", r, g["steps_per_growth"], depth, n)
    pooled = {}
    for ph in grown:   # the same kinds of phase, their steps summed
        kind = ph["phase"].split("/")[1]
        pooled.setdefault(kind, {**ph, "phase": f"pooled/{kind}", "steps": 0, "depth": d1})["steps"] += ph["steps"]
    return {"grown": grown, "scratch_phases": [{**ph, "depth": d1} for ph in grown],
            "scratch_pooled": list(pooled.values())}


def _orders(seed: int, n: int) -> list[int]:
    gen = torch.Generator().manual_seed(int(seed) % 2**63)
    return [int(seed)] + [int(torch.randint(2**31, (1,), generator=gen)) for _ in range(n - 1)]


def _train_arm(net, phases, orders, w, r: Mapping, block_seeds=None) -> tuple:
    """Train ``net`` through ``phases`` (inserting a block before a phase of greater depth), counted."""
    from numerics.training import train
    from numerics.workloads import as_model_dtype

    x, y = w.train
    x = as_model_dtype(net, x)
    inserted = []
    with BudgetCounter() as count:
        count.attach(net)
        for ph, order in zip(phases, orders):
            if ph["depth"] > net.depth:
                new = insert_own_block(net.eval(), block_seeds[len(inserted)])
                dev = insertion_deviation(net, new, as_model_dtype(net, w.test[0]))
                inserted.append({"depth_after": new.depth, **dev})
                net = new
                count.attach(net)
            net.train()
            train(net, dict(net.named_parameters()), x, y, optimizer=r["optimizer"], lr=ph["lr"],
                  steps=ph["steps"], batch_size=ph["batch_size"], seed=order, loss=w.loss)
    return net.eval(), count.to_dict(), inserted


def _arm_record(net, w, phases, counted) -> dict:
    from numerics.workloads import risk

    return {"depth": net.depth, "L_train": risk(net, w, "train")[0], "L_test": risk(net, w, "test")[0],
            "phases": phases, "schedule": [[p["phase"], p["steps"], p["batch_size"]] for p in phases],
            "counted": counted}


def own_block_cell(cfg: Mapping) -> dict:
    """The three arms for the cell's seed (module docstring): losses, schedules, counts, insertion checks."""
    from numerics.seeding import Streams
    from numerics.studies.saturation import reference_seeds
    from numerics.workloads import build_network, make_workload

    t0 = time.perf_counter()
    plan = schedules(cfg)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg["seed"])
        streams = Streams(cfg["seed"], cfg["data_seed"])
        w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
        init, _, order = reference_seeds(streams)
        orders = _orders(order, len(plan["grown"]))
        d0, d1 = plan["grown"][0]["depth"], plan["scratch_pooled"][0]["depth"]
        block_seeds = [int(s) for s in np.random.SeedSequence([init, 1]).generate_state(d1 - d0)]
        arms, insertions = {}, []
        for arm in _ARMS:
            net = set_norm_eps(build_network(cfg, w, init, depth=d0 if arm == "grown" else d1))
            net, counted, ins = _train_arm(net, plan[arm], orders, w, cfg["reference"], block_seeds)
            arms[arm] = _arm_record(net, w, plan[arm], counted)
            insertions += ins
    return {"config": dict(cfg), "depth_base": d0, "depth_final": d1, "norm_eps": NORM_EPS, "arms": arms,
            "insertions": insertions, "timings": {"total_s": time.perf_counter() - t0}}


def validated(config: Mapping) -> dict:
    """An ``own_block`` cell config checked as the MNIST-1D cells' (the grow study's schema, a 1-D CNN).

    Raises:
        InputError: what :func:`numerics.studies.growth.validate_grow_config` refuses, or another model kind.
    """
    from plumbing.validation import InputError
    from numerics.studies.growth import validate_grow_config

    config = dict(config)
    cell = config.pop("cell", {"kind": "own_block"})
    cfg = validate_grow_config(config)
    if cfg["model"].get("kind") != "cnn1d":
        raise InputError("model.kind", "'cnn1d' (growth by the ResCNN1d's own block)", cfg["model"].get("kind"))
    return {**cfg, "cell": cell}
