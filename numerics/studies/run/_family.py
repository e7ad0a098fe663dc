"""The run study's residual block families (``readout``, ``full``) as objects, and the post-hoc cap grid.

:class:`RunFamily` is a residual block family's behaviour in a run: its caps from the network, its
training and (C2) selection, the re-evaluation of a block that trains its own features, the
quantities it reports and the routes it can be certified by. It is the ``run`` part of the family's
entry in the one registry, :data:`bounds.families.RESIDUAL_FAMILIES` (the built-ins' parts are
attached here); :data:`RUN_FAMILIES` is a live view of the registered families that have one. A
family with frozen features can reuse :func:`frozen_caps` and :func:`select_readout`.

* Caps fixed before ``S`` (THEORY §4): ``readout`` -- ``||V||_F <= nu_V`` with
  ``nu_V = output_cap / (L_top rho_phi)``; ``full`` -- ``||[U b]||_F <= nu_U`` with
  ``nu_U = feature_cap ||[U0 b0]||_F`` (the initial features lie inside), and
  ``nu_V = output_cap / (L_top nu_U sqrt(rho^2 + 1))``, so in both cases the block's output
  is at most ``output_cap / L_top`` (``bounds.loss.block_output_bound``).
* ``full`` training (:func:`select_full`): ``U, b, V`` trained on ``S`` from
  ``(U0, b0, 0)``, each projected after every step (**Choice**: ``U`` and ``b`` on their
  shares ``nu_U ||U0|| / ||[U0 b0]||`` and ``nu_U ||b0|| / ||[U0 b0]||`` of the cap, which
  keeps ``||[U b]||_F <= nu_U``); the jumpboards keep ``(U0, b0)`` (for ``full`` the signal
  at ``V = 0`` is the readout's ``G``, THEORY §1); (C2) selection as for ``readout``.
* Cap grid (``insertion.cap_grid = n > 1``, ratio ``insertion.cap_ratio``): the caps
  ``nu_V r^{-k}``, ``k = 0..n-1``; the block is trained inside the largest, and *after*
  training the reported cap is the smallest grid cap holding ``f_new`` and both
  jumpboards; ``delta`` and ``delta'`` are split over the grid (``Setup.n_grid``, union
  bound, THEORY §4). ``B`` and ``L_loss`` use the largest cap (valid for all).
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Callable, Mapping

import numpy as np
import torch

from bounds.families import RESIDUAL_FAMILIES, FamilyNames, ResidualFamily, attach
from bounds.variants import VARIANT_SPECS
from plumbing.validation import InputError, Interval

__all__ = ["FAMILIES", "INSERTION_OPTIONS", "RUN_FAMILIES", "BlockCaps", "RunFamily", "block_caps", "chosen_cap",
           "complete_config", "frozen_caps", "on_states", "feature_norm", "reevaluate_new", "run_family",
           "select_full", "select_readout", "setup_block"]

#: The ``insertion.family`` values of the run study: the residual block families of :mod:`bounds.families`
#: (a live view, also the schema's rule).
FAMILIES = FamilyNames()
#: Optional ``[insertion]`` keys (defaults: feature_cap 1.5, cap_grid 1, cap_ratio 2).
INSERTION_OPTIONS = {"feature_cap": Interval(1), "cap_grid": Interval(1, 1000, integer=True),
                     "cap_ratio": Interval(1, closed_low=False)}
DEFAULTS = {"feature_cap": 1.5, "cap_grid": 1, "cap_ratio": 2.0}


def complete_config(raw: Mapping, cfg: dict) -> dict:
    """Dimensions fixed by a data task (digits: ``d_in = 64``, ``n_classes = 10``), checked.

    Raises:
        InputError: the user set a dimension the data fixes to another value.
    """
    from numerics.builders import DATA_TASK_DIMS

    dims = DATA_TASK_DIMS.get(cfg["task"]["kind"], {})
    given = raw.get("task", {}) if isinstance(raw.get("task"), Mapping) else {}
    for key, value in dims.items():
        if key in given and given[key] != value:
            raise InputError(f"task.{key}", f"{value} for task.kind = {cfg['task']['kind']!r}", given[key])
        cfg["task"][key] = value
    return cfg


def _option(cfg, key: str):
    value = getattr(cfg.insertion, key)
    return DEFAULTS[key] if value is None else value


@dataclasses.dataclass(frozen=True)
class BlockCaps:
    """The class ``H_new`` fixed before ``S``: its family, caps and feature bound."""

    family: str
    rho: float
    rho_phi: float              # sup ||phi(u)|| over the class and ||u|| <= rho
    nu_V: float                 # the largest V cap
    nu_U: float | None          # full: ||[U b]||_F cap
    n_grid: int
    cap_ratio: float

    def output_params(self) -> dict:
        """The family's ``[block]`` keys that bound its output (:attr:`bounds.families.ResidualFamily.output_keys`)."""
        return {k: getattr(self, k) for k in RESIDUAL_FAMILIES[self.family].output_keys}

    def grid(self) -> np.ndarray:
        """The caps on ``V``, increasing, the last one ``nu_V``."""
        return self.nu_V * self.cap_ratio ** -np.arange(self.n_grid - 1, -1, -1, dtype=np.float64)


def block_caps(cfg, block, rho: float, L_top: float) -> BlockCaps:
    """The caps of the block's family (docstring of ``numerics.studies.run._family``), from data-free constants."""
    return run_family(block.family).caps(cfg, block, rho, L_top)


def _grid(cfg) -> tuple[float, int, float]:
    return cfg.insertion.output_cap, int(_option(cfg, "cap_grid")), float(_option(cfg, "cap_ratio"))


def frozen_caps(cfg, block, rho: float, L_top: float) -> BlockCaps:
    """Frozen features (``readout``): ``||V||_F <= nu_V = output_cap / (L_top rho_phi)``, ``rho_phi`` the
    family's own bound (:func:`numerics.estimators.rho_phi`)."""
    from numerics.estimators import rho_phi

    cap, n, ratio = _grid(cfg)
    r_phi = rho_phi(block, rho)
    return BlockCaps(block.family, rho, r_phi, cap / (L_top * r_phi), None, n, ratio)


def _full_caps(cfg, block, rho: float, L_top: float) -> BlockCaps:
    """``||[U b]||_F <= nu_U = feature_cap ||[U0 b0]||_F``, ``nu_V = output_cap / (L_top nu_U sqrt(rho^2 + 1))``."""
    cap, n, ratio = _grid(cfg)
    nu_U = float(_option(cfg, "feature_cap")) * feature_norm(block)
    r_phi = nu_U * math.sqrt(rho * rho + 1.0)
    return BlockCaps(block.family, rho, r_phi, cap / (L_top * r_phi), nu_U, n, ratio)


def feature_norm(block) -> float:
    """``||[U b]||_F`` of a block's (current) features."""
    return float(torch.cat([block.U.detach().flatten(), block.b.detach()]).norm())


def chosen_cap(caps: BlockCaps, *norms: float) -> float:
    """The smallest grid cap holding every ``||V||`` in ``norms`` (the largest if none is smaller).

    Example:
        >>> c = BlockCaps("readout", 1.0, 1.0, 8.0, None, 4, 2.0)
        >>> c.grid().tolist(), chosen_cap(c, 1.5, 0.3), chosen_cap(c, 9.0)
        ([1.0, 2.0, 4.0, 8.0], 2.0, 8.0)
    """
    need = max(norms) * (1 - 1e-12)
    fits = [g for g in caps.grid() if g >= need]
    return float(fits[0]) if fits else float(caps.nu_V)


def setup_block(caps: BlockCaps, d: int, L_top: float, nu_V: float) -> tuple[str, dict]:
    """``(family, block)`` of :class:`bounds.routes.Setup` for the cap ``nu_V`` (keys from
    :data:`bounds.parameters.BLOCK_PARAMETERS`)."""
    return caps.family, {**caps.output_params(), "d": d, "L_top": L_top, "nu_V": nu_V}


# ----------------------------------------------------------------------------- full: training, selection
def on_states(expanded, block) -> torch.nn.Module:
    """``u -> f_top(u + h(u))`` for ``block`` on ``expanded``'s frozen base (a trained full block)."""
    return _OnStates(expanded, block)


class _OnStates(torch.nn.Module):
    """``u -> f_top(u + h(u))`` for a block of its own on the frozen base."""

    def __init__(self, expanded, block):
        super().__init__()
        from numerics.insertion import ExpandedModel

        self.model = ExpandedModel(expanded.base, expanded.at, block)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return self.model.top_from_u(u)


def _train_full(fixed, u: torch.Tensor, y: torch.Tensor, seed: int):
    from numerics.training import train

    block = copy.deepcopy(fixed.expanded.block)
    caps = fixed.const.caps
    n0 = feature_norm(block)
    limits = {"U": caps.nu_U * float(block.U.detach().norm()) / n0,
              "b": caps.nu_U * float(block.b.detach().norm()) / n0, "V": caps.nu_V}
    bt = fixed.cfg.block_training
    model = _OnStates(fixed.expanded, block)
    res = train(model, {"U": block.U, "b": block.b, "V": block.V}, u, y, optimizer=bt.optimizer, lr=bt.lr,
                steps=bt.steps, batch_size=bt.batch_size, seed=seed, loss=fixed.loss, caps=limits)
    return block, res


def select_full(fixed, group):
    """Stage 3 for ``full``: train ``U, b, V`` per draw, then (C2) over ``{trained, f~_S, f~_pop}`` on ``S``."""
    from numerics.block_training import BlockTrainResult, sample_risks
    from numerics.studies.run._selection import Selection

    B, V_pop = group.u.shape[0], fixed.signal.V_pop
    boards = torch.stack([torch.zeros_like(group.V_S), group.V_S, V_pop.expand_as(group.V_S)], dim=1)
    R = sample_risks(fixed.expanded, group.u, group.y, boards, fixed.loss).numpy()     # old, f~_S, f~_pop
    trained = [_train_full(fixed, group.u[b], group.y[b], st.seed_for("block_training"))
               for b, st in enumerate(group.streams)]
    r_trained = np.array([res.final_loss for _, res in trained])
    best = R[:, 1:].argmin(axis=1)                                  # ties: f~_S first
    wins = R[np.arange(B), 1 + best] < r_trained
    returned = tuple(f"jumpboard_{int(k)}" if w else "trained" for k, w in zip(best, wins))
    V_new = torch.stack([boards[b, 1 + int(best[b])] if wins[b] else trained[b][0].V.detach() for b in range(B)])
    blocks = tuple(None if wins[b] else trained[b][0] for b in range(B))
    bt = fixed.cfg.block_training
    train = BlockTrainResult(torch.stack([blk.V.detach() for blk, _ in trained]),
                             np.stack([res.losses for _, res in trained]),
                             np.array([res.projections for _, res in trained]), bt.optimizer, float(bt.lr),
                             int(bt.steps), int(trained[0][1].batch_size))
    r_new = np.where(wins, R[np.arange(B), 1 + best], r_trained)
    return Selection(V_new, returned, {"old": R[:, 0], "new": r_new, "jump_S": R[:, 1], "jump_pop": R[:, 2],
                                       "trained": r_trained}, train, None, blocks)


@torch.no_grad()
def reevaluate_new(fixed, group, sel, b: int, ev):
    """``L_test`` and ``R`` of a trained ``full`` block (its own ``U, b``), on the same ``T`` and
    Monte-Carlo sample as the other candidates."""
    from numerics._numerics import per_sample_loss
    from numerics.sampled_task import population_risk_chunks

    block = sel.blocks_new[b]
    if block is None:
        return ev
    model, sizes, st = _OnStates(fixed.expanded, block), fixed.cfg.sizes, group.streams[b]
    total = sum(float(per_sample_loss(model(fixed.net.bottom(x, fixed.at)), y, fixed.loss).sum())
                for x, y in fixed.task.sample_chunks(sizes.K, st.seed_for("T")))
    risks = torch.cat([risk(model(fixed.net.bottom(x, fixed.at)))
                       for x, risk in population_risk_chunks(fixed.task, sizes.population, st.seed_for("population"))])
    R = {**ev.R, "R_new": float(risks.mean()), "R_new_stderr": float(risks.std() / math.sqrt(risks.numel()))}
    return dataclasses.replace(ev, L_test={**ev.L_test, "new": total / sizes.K}, R=R)


# ----------------------------------------------------------------------------- readout: training, selection
def select_readout(fixed, group):
    """Stage 3 for ``readout``: every draw's ``V`` trained together, then (C2) over ``{trained, f~_S, f~_pop}`` on ``S``."""
    from numerics.block_training import sample_risks, train_readout_blocks
    from numerics.studies.run._moments import is_exact_class, risk, sample_moments
    from numerics.studies.run._selection import Selection

    bt, B = fixed.cfg.block_training, group.u.shape[0]
    res = train_readout_blocks(fixed.expanded, group.u, group.y, loss=fixed.loss, caps=fixed.const.nu_V,
                               seeds=[st.seed_for("block_training") for st in group.streams],
                               optimizer=bt.optimizer, lr=bt.lr, steps=bt.steps, batch_size=bt.batch_size)
    V_pop = fixed.signal.V_pop.expand(B, *fixed.signal.V_pop.shape)
    cands = torch.stack([torch.zeros_like(res.V), res.V, group.V_S, V_pop], dim=1)   # old, trained, f~_S, f~_pop
    moments = None
    if is_exact_class(fixed):   # R_S of every V from the moments of S (one pass; THEORY §4)
        moments = tuple(sample_moments(fixed, group.u[b], group.y[b]) for b in range(B))
        R = np.array([[risk(fixed, moments[b], V) for V in cands[b]] for b in range(B)])
    else:
        R = sample_risks(fixed.expanded, group.u, group.y, cands, fixed.loss).numpy()
    r_trained, r_boards = R[:, 1], R[:, 2:]
    best = r_boards.argmin(axis=1)                                  # ties: f~_S first, as train_block_with_fallback
    wins = r_boards[np.arange(B), best] < r_trained
    returned = tuple(f"jumpboard_{int(k)}" if w else "trained" for k, w in zip(best, wins))
    V_new = torch.stack([cands[b, 2 + int(best[b])] if wins[b] else res.V[b] for b in range(B)])
    r_new = np.where(wins, r_boards[np.arange(B), best], r_trained)
    return Selection(V_new, returned, {"old": R[:, 0], "new": r_new, "jump_S": R[:, 2], "jump_pop": R[:, 3],
                                       "trained": r_trained}, res, moments)


def _full_cap_quantities(fixed, sel, b: int) -> dict:
    """``nu_U`` and ``f_new``'s ``||[U b]||_F``: its own trained features, or the jumpboards' initial ones."""
    trained = sel.blocks_new[b] if sel.blocks_new is not None else None
    return {"nu_U": fixed.const.caps.nu_U, "UB_norm": feature_norm(trained if trained is not None else fixed.expanded.block)}


# ----------------------------------------------------------------------------- the registry
@dataclasses.dataclass(frozen=True)
class RunFamily:
    """A residual block family's torch behaviour in the run study (docstring of ``numerics.studies.run._family``).

    Attributes:
        math: its mathematics (:class:`bounds.families.ResidualFamily`, the same name; None in the part a
            family carries, filled in by :data:`RUN_FAMILIES`).
        caps: ``(cfg, block, rho, L_top) -> BlockCaps``, fixed before ``S``.
        select: ``(fixed, group) -> Selection``: training and the (C2) selection (stage 3).
        reevaluate: ``(fixed, group, sel, b, ev) -> Evaluation``: ``f_new``'s own ``L_test``/``R``
            where the block trains its features (else ``ev`` as it is).
        cap_quantities: ``(fixed, sel, b) -> dict``: the family's caps reported beside ``nu_V``.
        default_use: the route fixed before the data when ``variants.use`` names one it cannot evaluate.
    """

    math: ResidualFamily | None
    caps: Callable
    select: Callable
    reevaluate: Callable
    cap_quantities: Callable
    default_use: str

    @property
    def name(self) -> str:
        return self.math.name

    @property
    def routes(self) -> tuple[str, ...]:
        """The routes a block of this family can be certified by in ``run``: a Bernstein tail needs the
        candidates' measured variances (not those of a block that trains its features), the empirical
        Rademacher term the family's own sign Monte Carlo (THEORY §4, §6)."""
        return ("population_route", "direct_route") + tuple(
            name for name, (_, tail, uniform) in VARIANT_SPECS.items()
            if (tail == "hoeffding" or not self.math.trains_features)
            and (uniform == "closed" or self.math.empirical_rademacher))


attach("readout", run=RunFamily(None, frozen_caps, select_readout, lambda fixed, group, sel, b, ev: ev,
                                 lambda fixed, sel, b: {}, "population_tight_bernstein"))
attach("full", run=RunFamily(None, _full_caps, select_full, reevaluate_new, _full_cap_quantities,
                              "population_tight_hoeffding"))


class _RunFamilies(Mapping):
    """``{name: RunFamily}`` of the registered families with a ``run`` part, ``math`` the registry's entry."""

    def __getitem__(self, name: str) -> RunFamily:
        fam = RESIDUAL_FAMILIES.get(name)
        if fam is None or fam.run is None:
            raise KeyError(name)
        return dataclasses.replace(fam.run, math=fam)

    def __iter__(self):
        return iter([n for n, f in RESIDUAL_FAMILIES.items() if f.run is not None])

    def __len__(self) -> int:
        return sum(f.run is not None for f in RESIDUAL_FAMILIES.values())


#: Every residual block family of the run study, under its :data:`bounds.families.RESIDUAL_FAMILIES` name
#: (a live view of the registry).
RUN_FAMILIES: Mapping[str, RunFamily] = _RunFamilies()


def run_family(name: str) -> RunFamily:
    """The run study's family named ``name``.

    Raises:
        InputError: an unknown name (``insertion.family`` named).
    """
    if name not in RUN_FAMILIES:
        raise InputError("insertion.family", f"one of {list(RUN_FAMILIES)}", name)
    return RUN_FAMILIES[name]
