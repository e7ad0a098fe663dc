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
relative error is ``eps (1 - v) / (2 v) + O(eps^2)`` (``v`` the variance of ``u`` over the group;
``test_handover_error_at_positive_eps``: sympy and a GroupNorm). So every norm of all three arms
has ``eps =`` :data:`NORM_EPS` (1e-12: exact to ``1e-12 / v``, far below float32 rounding,
and no 0/0 on a constant group). :func:`insertion_deviation` checks each insertion on the
held-out ``T`` inputs to :data:`IDENTITY_TOL` of the logits' scale.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from numerics.studies.reproduce._own_block_cell import (NORM_EPS, BudgetCounter, insert_own_block,
                                                        insertion_deviation, own_block_cell, schedules,
                                                        set_norm_eps, validated)

__all__ = ["BUDGET_TOL", "CLAIM_ID", "COMPARABLE_MARGIN", "IDENTITY_TOL", "NORM_EPS", "SEED_WORDS", "BudgetCounter",
           "check_cells", "growth_own_block", "insert_own_block", "insertion_deviation", "measure",
           "own_block_cell", "pilot", "schedules", "set_norm_eps", "summarise", "validated"]

CLAIM_ID = "growth_own_block"
#: Seed 001 (Paper B), "Experimental results", item 2, in English (the seed is in Dutch).
SEED_WORDS = (
    "seed 001 (Paper B's summary, 001_5b33c3cac680ff24.txt), 'Function-preserving growth versus training from "
    "scratch': 'The authors compared models grown by function-preserving insertion (starting from a converged "
    "shallower network) with models of the same final architecture trained from a random initialisation. "
    "Convergence quality: function-preserving growth reached training losses comparable to (and often lower "
    "than) training from scratch. Generalisation: the grown models consistently achieved lower test losses "
    "(mean reduction of ~11.8%) compared with models trained from scratch.'")
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


def _conventions(cells, n: int, sds: Mapping) -> list[dict]:
    """Per scratch schedule and loss: the paired gain's interval, its interval rule (above 0 for test loss,
    above the Choice margin for train loss; the claim's ``decide`` applies it) and MDE (from its own pilot sd)."""
    from numerics.studies.reproduce import _power as pw

    out = []
    for arm, text in _SCRATCH.items():
        for key, what, thr in (("L_test", "test", 0.0), ("L_train", "train", -COMPARABLE_MARGIN)):
            m, lo, hi = pw.t_interval(_gains(cells, arm, key))
            rule = "above 0 (lower)" if thr == 0 else (f"above -{COMPARABLE_MARGIN:g} (comparable or lower, Choice; "
                                                       f"reproduced for any margin above {max(-lo, 0):.2%})")
            out.append({"convention": f"{what} loss; {text}; equal steps and sample-gradients (counted)",
                        "statistic": f"mean relative {what}-loss gain (L_scratch - L_grown) / L_scratch = {m:.2%} "
                                     f"[{lo:.2%}, {hi:.2%}] (Student-t 95%), interval {rule}",
                        "arm": arm, "loss": what, "estimate": m, "interval": [lo, hi],
                        "rule": {"kind": "above", "threshold": thr},
                        "mde": pw.mde(sds[f"{arm}/{what}"], n) if f"{arm}/{what}" in sds else None})
    return out


def _measured(conv, checked, c0, n: int, mde, sd) -> str:
    from numerics.studies.reproduce._claims import convention_rule

    def part(what):
        return ", ".join(f"vs {c['arm']} {c['estimate']:.2%} [{c['interval'][0]:.2%}, {c['interval'][1]:.2%}] "
                         f"({convention_rule(c).decide(c)}" + ("" if c["mde"] is None else f", MDE {c['mde']:.3g}") + ")"
                         for c in conv if c["loss"] == what)

    counted = c0["arms"]["grown"]["counted"]
    sched = "; ".join(f"{arm}: " + ", ".join(f"({p}, {s}, {b})" for p, s, b in c0["arms"][arm]["schedule"])
                      for arm in ("grown", "scratch_pooled"))
    resolves = "MDE: no pilot estimate" if mde is None else (
        f"MDE at 80% power (pilot sd {sd:.3g} per seed, n = {n}): {mde:.3g}, so the paper's 11.8% is "
        f"{'' if mde <= 0.118 else 'NOT '}resolvable at these seeds")
    return (f"relative test-loss gain (L_scratch - L_grown) / L_scratch over {n} paired seeds: {part('test')}; "
            f"train-loss gain (comparable: above -{COMPARABLE_MARGIN:.0%}, Choice): {part('train')}; depth "
            f"{c0['depth_base']} grown to {c0['depth_final']} by {checked['insertions']} insertions of the network's "
            f"own block (max deviation {checked['rel_dev']:.2g} of the logits' scale on held-out T, tolerance "
            f"{IDENTITY_TOL:g}); counted per arm: {counted['steps']} optimiser steps, {counted['sample_gradients']} "
            f"sample-gradients (largest scratch/grown difference {checked['budget_rel_diff']:.2%}); schedules "
            f"(phase, steps, batch): {sched}; scratch_phases: the grown list at depth {c0['depth_final']}; {resolves}")


def summarise(cells, sd: float | None, sd_by_convention: Mapping | None = None) -> dict:
    """The claim's evidence from the cells (paired by seed) and the pilot's per-seed sd of the gain
    (``sd``: the test gain vs ``scratch_phases``; ``sd_by_convention``: ``"<arm>/<test|train>" -> sd``).

    The claim's interval is the hull of the two scratch conventions' test-gain intervals, so
    the rule (above 0) reproduces only when both do and rejects only when both do.
    """
    from numerics.studies.reproduce import _power as pw

    cells = sorted(cells, key=lambda c: c["config"]["seed"])
    checked = check_cells(cells)
    n, c0 = len(cells), cells[0]
    mde = pw.mde(sd, n) if sd is not None else None
    sds = dict(sd_by_convention or ({} if sd is None else {"scratch_phases/test": sd}))
    conv = _conventions(cells, n, sds)
    tests = [c for c in conv if c["loss"] == "test"]
    lo, hi = min(c["interval"][0] for c in tests), max(c["interval"][1] for c in tests)
    per_seed = [{"seed": c["config"]["seed"], **{a: {k: c["arms"][a][k] for k in ("L_train", "L_test")}
                                                 for a in _ARMS}} for c in cells]
    details = {"seed_words": SEED_WORDS, "conventions": conv, "mde": mde, "n_units": n, "checks": checked,
               "per_seed": per_seed, "schedules": {a: c0["arms"][a]["schedule"] for a in _ARMS},
               "counted": {a: c0["arms"][a]["counted"] for a in _ARMS}}
    return {"measured": _measured(conv, checked, c0, n, mde, sd), "estimate": tests[0]["estimate"],
            "interval": [lo, hi], "confidence": pw.CONFIDENCE, "figures": [], "details": details}


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
    return summarise(cells, p.get("sd"), p.get("sd_by_convention"))


def measure(base: Mapping, seeds, sd: float | None = None) -> dict:
    """The claim's measurement from a suite's sizes (an ``own_block`` cell config) and seeds, run here,
    one cell after another (``seed = data_seed``); returns ``{"evidence", "cells"}``."""
    cells = [own_block_cell(validated({**base, "seed": s, "data_seed": s})) for s in seeds]
    return {"evidence": summarise(cells, sd), "cells": cells}


def pilot(out_path: str, seeds=range(1000, 1004)) -> dict:
    """The pilot (seeds 1000+, never a suite's) at the ``mnist1d-quick`` sizes: per seed the cell, written
    to ``out_path`` (JSON) after each seed, and the per-seed sd of the primary test-loss gain."""
    from plumbing.io import atomic_write_text, dumps
    from numerics.studies.reproduce._suites import SUITES

    base = SUITES["mnist1d-quick"]["sweeps"]["own_block"]["base"]
    cells = []
    for s in seeds:
        cells.append(own_block_cell(validated({**base, "seed": s, "data_seed": s})))
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
