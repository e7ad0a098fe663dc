"""The run study's measurements for this project's tighter variants (THEORY §6, **Choice**).

What the variants need beyond the paper's routes, measured on the draw's own samples, with
every level fixed in the config's ``[variants]`` table before any data is drawn:

* unbiased sample variances (``ddof = 1``) of the per-sample losses of ``f~_pop`` on ``S``
  (:func:`measure_S`) and of ``f_new``, ``f_old``, ``f~_S`` on ``T`` (accumulated in the
  streamed pass of :func:`numerics.studies.run._draw.evaluate_draw`);
* on ``S``'s block features, one streamed pass (:func:`measure_S`): the sign Monte Carlo
  of the empirical Rademacher value on its own role stream (``monte_carlo``), with its
  McDiarmid error at ``delta_mc``, ``sum_i ||phi_i||^2`` (Jensen's sure bound) and the
  moments of the sure bracket the validity study checks the empirical events with
  (:meth:`numerics.estimators.ReadoutRademacher.exact_bracket`).

:func:`evaluate_variants_of_draw` feeds them to :func:`bounds.variant_routes.evaluate_variants`
(the only place the variants are evaluated).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import torch

from bounds.families import RESIDUAL_FAMILIES
from numerics._numerics import MeanVar

__all__ = ["SStatistics", "T_VARIANCE_KEYS", "evaluate_variants_of_draw", "measure_S", "variant_inputs"]

#: ``[variants]`` variance key of each candidate's losses on ``T`` (candidate order of the run).
T_VARIANCE_KEYS = {"new": "var_T_new", "old": "var_T_old", "jump_S": "var_T_jump_S"}
_CHUNK = 1 << 16


@dataclasses.dataclass(frozen=True)
class SStatistics:
    """What the variants measure on ``S`` (docstring of ``numerics.studies.run._variants``).

    Attributes:
        var_S_jump_pop: unbiased sample variance of ``f~_pop``'s losses on ``S``.
        rademacher: the sign Monte Carlo and feature moments on ``S``
            (:class:`numerics.estimators.ReadoutRademacher`); ``None`` for a non-readout block.
    """

    var_S_jump_pop: float
    rademacher: object = None


@torch.no_grad()
def measure_S(fixed, group, b: int) -> SStatistics:
    """One streamed pass over draw ``b``'s ``S``: ``f~_pop``'s loss variance and the Rademacher stream."""
    from numerics.block_training import candidate_losses
    from numerics.estimators import rademacher_readout_stream

    u, y, block = group.u[b], group.y[b], fixed.expanded.block
    V_pop = fixed.signal.V_pop[None, None]
    mv = MeanVar()

    def features():
        for i in range(0, u.shape[0], _CHUNK):
            uc, yc = u[i:i + _CHUNK], y[i:i + _CHUNK]
            mv.add(candidate_losses(fixed.expanded, uc[None], yc[None], V_pop, fixed.loss)[0].T)
            yield block.features(uc.reshape(uc.shape[0], -1))

    rad = None
    v = fixed.cfg.variants
    if RESIDUAL_FAMILIES[block.family].empirical_rademacher:     # the readout's sign Monte Carlo (bounds.families)
        rad = rademacher_readout_stream(features(), block.d, fixed.const.nu_V, int(v.n_draws),
                                        group.streams[b].seed_for("monte_carlo"), delta_mc=float(v.delta_mc))
    else:
        for _ in features():
            pass
    return SStatistics(float(mv.variance()[0]), rad)


def variant_inputs(cfg, variances: Mapping[str, float], s_stats: SStatistics):
    """The :class:`bounds.variant_routes.VariantInputs` of a draw (levels from ``cfg.variants``, a
    :class:`~numerics.studies.run._config.RunConfig`)."""
    from bounds.variant_routes import VariantInputs

    v = cfg.variants
    levels = {k: getattr(v, k) for k in ("delta_S_jump_pop", "delta_T_new", "delta_T_old", "delta_T_jump_S")
              if getattr(v, k) is not None}
    rad = s_stats.rademacher
    mc = {} if rad is None else {"rad_hat": rad.value, "delta_mc": rad.delta_mc, "phi_sq_sum": rad.phi_sq_sum,
                                 "n_draws": rad.n_draws}
    return VariantInputs(var_S_jump_pop=s_stats.var_S_jump_pop, **dict(variances), **mc, **levels, use=v.use)


def evaluate_variants_of_draw(cfg, setup, variances: Mapping[str, float], s_stats: SStatistics):
    """Every variant of :mod:`bounds.variants` on the draw's setup (:func:`bounds.variant_routes.evaluate_variants`).

    ``setup`` was validated by :func:`bounds.routes.evaluate_routes` (stage 4): only the variants'
    own inputs are checked here (each value once per run)."""
    from bounds.variant_routes import evaluate_variants

    inputs = variant_inputs(cfg, variances, s_stats).validate(setup)
    return evaluate_variants(setup, cfg.level, inputs, validate=False)
