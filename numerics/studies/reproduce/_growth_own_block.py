"""Growth vs scratch as Paper B ran it: a converged shallower ResCNN1d grown by its own residual block.

The claim ``growth_own_block`` of the MNIST-1D suites (seed 001, :data:`SEED_WORDS`). One sweep
cell per seed (:func:`own_block_cell`, cell kind ``"own_block"`` of
:mod:`numerics.studies.reproduce._mnist1d_cells`) trains three arms on the same training
sample, from the same initial seed and with the same mini-batch order per phase:

* ``grown``: a :class:`~numerics.zoo_cnn1d.ResCNN1d` of depth ``model.depth`` trained with the
  ``[reference]`` recipe (main phase, then the two annealing phases at 8x and 16x batch:
  :func:`numerics.builders.train_phases`), i.e. converged; then, up to ``growth.max_depth``, one
  block at a time: :func:`insert_own_block` (function-preserving), then the recipe again with
  ``growth.steps_per_growth`` main steps (each phase restarts the optimiser: zero state).
* ``scratch_phases``: the final architecture from a random initialisation, trained with the
  grown arm's phase list (same learning rates, batch sizes and restarts).
* ``scratch_pooled``: the final architecture trained with one recipe run of the pooled budget
  (all main steps at batch ``B``, then all annealing steps at ``8B`` and ``16B``).

All three get the same optimiser steps and sample-gradients by construction (the schedules,
a list of ``(phase, steps, batch size)`` per arm, are in every cell); the cell also *counts*
both while training (:class:`BudgetCounter`: optimiser steps by a global step hook, rows
through backward by a hook on the network output), and :func:`check_cells` refuses cells
whose counts differ by more than 1%. The two scratch schedules are the convention the seed
leaves open (it fixes the final architecture, not the budget).

**Choice** (the insertion): the blocks are post-norm, ``N(z + conv2(relu(conv1 z)))``, so a
block with ``conv2 = 0`` computes ``N(z)``, not ``z``. The inserted block takes over the
trained norm ``N`` of the block below (or of the stem), which gets a fresh norm (weight 1,
bias 0): the network becomes ``N(F(u))`` in place of ``N(u)``, ``F`` the fresh norm. A group,
layer or RMS norm with ``eps = 0`` is invariant to the positive per-group (per-position)
scale ``F`` applies and to the shift it removes, so ``N(F(u)) = N(u)``; with ``eps > 0`` the
relative error is ``eps (1 - v) / (2 v)`` (``v`` the variance of ``u`` over the group: 7e-6
of the logits' scale measured at PyTorch's ``eps = 1e-5``). So every norm of all three arms
has ``eps =`` :data:`NORM_EPS` (1e-12: exact to ``1e-12 / v``, far below float32 rounding,
and no 0/0 on a constant group). :func:`insertion_deviation` checks each insertion on the
held-out ``T`` inputs to :data:`IDENTITY_TOL` of the logits' scale.
"""
from __future__ import annotations

import copy
import time
from typing import Mapping

import numpy as np
import torch

__all__ = ["CLAIM_ID", "COMPARABLE_MARGIN", "IDENTITY_TOL", "NORM_EPS", "SEED_WORDS", "BudgetCounter",
           "check_cells", "growth_own_block", "insert_own_block", "insertion_deviation", "measure",
           "own_block_cell", "schedules", "set_norm_eps", "summarise"]

CLAIM_ID = "growth_own_block"
#: Seed 001 (Paper B), "Experimental results", item 2, in English (the seed is in Dutch).
SEED_WORDS = (
    "seed 001 (../shared/seeds/001_5b33c3cac680ff24.txt), 'Function-preserving growth versus training from "
    "scratch': 'The authors compared models grown by function-preserving insertion (starting from a converged "
    "shallower network) with models of the same final architecture trained from a random initialisation. "
    "Convergence quality: function-preserving growth reached training losses comparable to (and often lower "
    "than) training from scratch. Generalisation: the grown models consistently achieved lower test losses "
    "(mean reduction of ~11.8%) compared with models trained from scratch.'")
#: **Choice**: the norms' eps in every arm (module docstring: exact insertion needs eps -> 0).
NORM_EPS = 1e-12
#: The insertion check: ``max |f_grown - f_old| <= IDENTITY_TOL * max(1, max |f_old|)`` on held-out inputs.
IDENTITY_TOL = 1e-6
#: **Choice**: "comparable" train loss = the grown model's train loss at most 5% above scratch's
#: (a non-inferiority margin; the seed gives none).
COMPARABLE_MARGIN = 0.05
#: The budget check of :func:`check_cells`: counted steps and sample-gradients equal within 1%.
BUDGET_TOL = 0.01
_ARMS = ("grown", "scratch_phases", "scratch_pooled")
_SCRATCH = {"scratch_phases": "scratch trained with the grown arm's phase list (same learning rates, batch sizes "
                              "and optimiser restarts)",
            "scratch_pooled": "scratch trained with one recipe run of the pooled budget (all main steps at batch B, "
                              "then all annealing steps at 8B and 16B)"}


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


def check_cells(cells) -> dict:
    """The cells' budgets and insertions checked: counted steps and sample-gradients of every
    scratch arm within :data:`BUDGET_TOL` of the grown arm's, every insertion within
    :data:`IDENTITY_TOL`. Returns the extremes; raises ValueError naming the first failure."""
    worst = {"budget_rel_diff": 0.0, "rel_dev": 0.0, "insertions": 0}
    for c in cells:
        ref = c["arms"]["grown"]["counted"]
        for arm in _ARMS[1:]:
            got = c["arms"][arm]["counted"]
            for key in ("steps", "sample_gradients"):
                diff = abs(got[key] - ref[key]) / max(ref[key], 1)
                if diff > BUDGET_TOL:
                    raise ValueError(f"seed {c['config']['seed']}: {arm} counted {got[key]} {key}, the grown arm "
                                     f"{ref[key]} (must agree within {BUDGET_TOL:.0%})")
                worst["budget_rel_diff"] = max(worst["budget_rel_diff"], diff)
        want = c["depth_final"] - c["depth_base"]
        if len(c["insertions"]) != want:
            raise ValueError(f"seed {c['config']['seed']}: {len(c['insertions'])} insertions, expected {want}")
        for ins in c["insertions"]:
            if not ins["rel_dev"] <= IDENTITY_TOL:
                raise ValueError(f"seed {c['config']['seed']}: the insertion to depth {ins['depth_after']} changed "
                                 f"the network by {ins['rel_dev']:.3g} of its scale (tolerance {IDENTITY_TOL:g})")
            worst["rel_dev"] = max(worst["rel_dev"], ins["rel_dev"])
            worst["insertions"] += 1
    return worst


def _gains(cells, arm: str, key: str) -> np.ndarray:
    """Per seed ``(L_arm - L_grown) / L_arm`` (positive: the grown model is lower)."""
    return np.array([(c["arms"][arm][key] - c["arms"]["grown"][key]) / c["arms"][arm][key] for c in cells])


def _verdict(lo: float, hi: float, threshold: float) -> str:
    return "reproduced" if lo > threshold else "not reproduced" if hi < threshold else "inconclusive"


def _conventions(cells, mde) -> list[dict]:
    from numerics.studies.reproduce import _power as pw

    out = []
    for arm, text in _SCRATCH.items():
        for key, what, thr in (("L_test", "test", 0.0), ("L_train", "train", -COMPARABLE_MARGIN)):
            m, lo, hi = pw.t_interval(_gains(cells, arm, key))
            rule = "above 0 (lower)" if thr == 0 else f"above -{COMPARABLE_MARGIN:g} (comparable or lower, Choice)"
            out.append({"convention": f"{what} loss; {text}; equal steps and sample-gradients (counted)",
                        "statistic": f"mean relative {what}-loss gain (L_scratch - L_grown) / L_scratch = {m:.2%} "
                                     f"[{lo:.2%}, {hi:.2%}] (Student-t 95%), interval {rule}",
                        "estimate": m, "interval": [lo, hi], "verdict": _verdict(lo, hi, thr), "mde": mde})
    return out


def summarise(cells, sd: float | None) -> dict:
    """The claim's evidence from the cells (paired by seed) and the pilot's per-seed sd of the gain.

    The claim's interval is the hull of the two scratch conventions' test-gain intervals, so
    the rule (above 0) reproduces only when both do and rejects only when both do.
    """
    from numerics.studies.reproduce import _power as pw

    cells = sorted(cells, key=lambda c: c["config"]["seed"])
    checked = check_cells(cells)
    n = len(cells)
    mde = pw.mde(sd, n) if sd is not None else None
    conv = _conventions(cells, mde)
    tests = [c for c in conv if c["convention"].startswith("test")]
    lo, hi = min(c["interval"][0] for c in tests), max(c["interval"][1] for c in tests)
    c0 = cells[0]
    sched = "; ".join(f"{arm}: " + ", ".join(f"({p}, {s}, {b})" for p, s, b in c0["arms"][arm]["schedule"])
                      for arm in _ARMS)
    counted = c0["arms"]["grown"]["counted"]
    resolves = "no pilot estimate" if mde is None else (
        f"the paper's 11.8% is {'' if mde <= 0.118 else 'NOT '}resolvable at these seeds (MDE {mde:.3g} at 80% power, "
        f"pilot sd {sd:.3g} per seed, n = {n})")
    measured = ("; ".join(f"{c['convention'].split(';')[0]} vs {c['convention'].split(';')[1].strip()}: "
                          f"{c['statistic'].split(' = ')[1].split(' (')[0]} -> {c['verdict']}" for c in conv)
                + f"; over {n} paired seeds, depth {c0['depth_base']} grown to {c0['depth_final']} by "
                f"{checked['insertions']} function-preserving insertions of the network's own block (max deviation "
                f"{checked['rel_dev']:.2g} of the logits' scale on held-out inputs, tolerance {IDENTITY_TOL:g}); "
                f"budgets counted per arm: {counted['steps']} steps, {counted['sample_gradients']} sample-gradients "
                f"(largest scratch/grown difference {checked['budget_rel_diff']:.2%}); schedules (phase, steps, batch): "
                f"{sched}; {resolves}")
    return {"measured": measured, "estimate": tests[0]["estimate"], "interval": [lo, hi], "confidence": pw.CONFIDENCE,
            "figures": [], "details": {"seed_words": SEED_WORDS, "conventions": conv, "mde": mde, "n_units": n,
                                       "checks": checked, "per_seed": [{"seed": c["config"]["seed"], **{
                                           a: {k: c["arms"][a][k] for k in ("L_train", "L_test")} for a in _ARMS}}
                                           for c in cells],
                                       "schedules": {a: c0["arms"][a]["schedule"] for a in _ARMS},
                                       "counted": {a: c0["arms"][a]["counted"] for a in _ARMS}}}


def growth_own_block(ctx) -> dict:
    """The claim's study (``ctx`` a ReproduceContext): the ``own_block`` sweep's cells summarised."""
    from numerics.studies.reproduce._claims import NotRun
    from numerics.studies.sweeps import load_cells

    if "own_block" not in ctx.sweeps:
        raise NotRun("this suite has no own_block sweep")
    cells = load_cells(ctx.sweeps["own_block"])
    if len(cells) < 2:
        raise ValueError(f"growth vs scratch needs >= 2 seeds, got {len(cells)} cells")
    p = getattr(ctx.suite, "power", {}).get(CLAIM_ID) or {}
    return summarise(cells, p.get("sd"))


def measure(base: Mapping, seeds, sd: float | None = None) -> dict:
    """The claim's measurement from a suite's sizes (an ``own_block`` cell config) and seeds, run here,
    one cell after another (``seed = data_seed``); returns ``{"evidence", "cells"}``."""
    from numerics.studies.reproduce._mnist1d_cells import validate_cell

    cells = [own_block_cell(validate_cell({**base, "seed": s, "data_seed": s})) for s in seeds]
    return {"evidence": summarise(cells, sd), "cells": cells}


def pilot(out_path: str, seeds=range(1000, 1004)) -> dict:
    """The pilot (seeds 1000+, never a suite's) at the ``mnist1d-quick`` sizes: per seed the cell, written
    to ``out_path`` (JSON) after each seed, and the per-seed sd of the primary test-loss gain."""
    from plumbing.io import atomic_write_text, dumps
    from numerics.studies.reproduce._mnist1d_cells import validate_cell
    from numerics.studies.reproduce._suites import SUITES

    base = SUITES["mnist1d-quick"]["sweeps"]["own_block"]["base"]
    cells = []
    for s in seeds:
        cells.append(own_block_cell(validate_cell({**base, "seed": s, "data_seed": s})))
        gain = _gains(cells, "scratch_phases", "L_test")
        sd = float(np.std(gain, ddof=1)) if len(cells) > 1 else None
        out = {"sd": sd, "gains": gain.tolist(), "cells": cells,
               "seconds": [c["timings"]["total_s"] for c in cells]}
        atomic_write_text(out_path, dumps(out, indent=1) + "\n")
        print(f"seed {s}: gain {gain[-1]:.4f}, {cells[-1]['timings']['total_s']:.0f} s, sd {sd}", flush=True)
    return out


if __name__ == "__main__":   # python -m numerics.studies.reproduce._growth_own_block OUT.json [N_SEEDS]
    import sys

    pilot(sys.argv[1], range(1000, 1000 + (int(sys.argv[2]) if len(sys.argv) > 2 else 4)))
