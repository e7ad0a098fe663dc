"""The run study's ``[localised]`` section and the localised class fixed before ``S`` (THEORY §6b, **Choice**).

The localised certificates (:mod:`bounds.localised`) work over the ball
``F_nu = {f_V : ||V||_F <= nu}`` of the run's readout block, which must be fixed before ``S``
is drawn. Everything here comes from the roles of ``seed`` only (the run's stage 1,
:class:`~numerics.studies.run._stages.Fixed`), so it holds for every draw of a validity study:

* ``nu``: ``[localised] cap = "jumpboard"`` (default) is ``||G^|| / beta^``, the jumpboard's
  step measured on the *signal sample* (the sample ``f~_pop`` is built from, independent of
  ``S`` and ``T``); a number is a cap written in the config (fixed before any data).
  **Choice**: the ball is clipped at the run's cap ``nu_V`` (``nu <= nu_V``) so that the
  run's ``B``, ``L_loss`` and ``L_top`` (certified for ``||V|| <= nu_V``) hold on it; with
  ``cap = "jumpboard"`` it is then raised to the float norm of ``V_pop`` if that is larger
  (``||V_pop|| = min(||G^||/beta^, nu_V)`` in exact arithmetic: ``f~_pop`` lies in the ball
  without rounding, so the run's population pass is about it).
* ``b_xi = L_loss L_top rho_phi`` (the sure bound on ``||m phi^T||_F``, as the run's probe),
  ``kappa`` (block at the top: ``2 ||A||_2^2`` squared loss, ``||A||_2^2 / 2`` cross-entropy)
  and ``||A||_2``;
* ``sigma^2``: the Maurer--Pontil upper confidence bound on ``E ||m phi^T||_F^2`` at level
  ``delta_sigma`` from the signal sample's ``x`` with labels from its noise sub-stream (values
  in ``[0, b_xi^2]``, :func:`bounds.localised.sigma2_upper_expression`), one streamed pass.
  **Choice**: ``||Sigma_phi||`` keeps its sure bound ``rho_phi^2`` (no level).

The route fixed before the data (``use``) defaults to ``localised_train_exact_bernstein``
where THEORY §6b (c) applies (readout block at the top, squared loss), else
``localised_train_linearised_bernstein`` for a readout block at the top, else
``localised_train_sure_bernstein``.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Mapping

import torch

from bounds.families import RESIDUAL_FAMILIES
from bounds.localised import LOCALISED_SPECS
from plumbing.validation import InputError
from numerics.studies.run._config import RunConfig, as_run_config
from numerics.studies.run._schema import LOCALISED_SCHEMA, CapRule

__all__ = ["CapRule", "LOCALISED_DEFAULTS", "LOCALISED_SCHEMA", "LocalisedClass", "default_use", "localised_class",
           "localised_options"]

#: Defaults: the jumpboard cap, ``sigma^2``'s bound at 1e-3, ``Delta_R``'s at the run's 5e-4.
LOCALISED_DEFAULTS = {"cap": "jumpboard", "delta_sigma": 1e-3, "delta_R_failure": 5e-4}


def _static_shape(cfg: RunConfig) -> tuple[bool, bool]:
    """``(readout block at the top, and squared loss too)`` read from a validated run config."""
    ins = cfg.insertion
    top = ins.at in (-1, cfg.model.depth) and not RESIDUAL_FAMILIES[ins.family].trains_features
    return top, top and cfg.task.kind == "regression"


def default_use(cfg: Mapping) -> str:
    """The route fixed before the data when ``[localised] use`` is absent (docstring of ``numerics.studies.run._localised``)."""
    top, exact = _static_shape(as_run_config(cfg))
    return ("localised_train_exact_bernstein" if exact else
            "localised_train_linearised_bernstein" if top else "localised_train_sure_bernstein")


def localised_options(cfg: Mapping) -> dict:
    """``[localised]`` over ``LOCALISED_DEFAULTS``, with ``use`` resolved and the levels checked.

    Raises:
        InputError: ``localised.use`` names a route whose uniform term does not apply to this
            block, or the fixed levels leave nothing of ``level`` (``localised.<key>`` named).
    """
    cfg = as_run_config(cfg)
    given = cfg.localised.to_dict()
    opts = {**LOCALISED_DEFAULTS, **given}
    opts["use"] = given.get("use", default_use(cfg))
    chain, uniform, _ = LOCALISED_SPECS[opts["use"]]
    top, exact = _static_shape(cfg)
    if (uniform == "exact" and not exact) or (uniform == "linearised" and not top):
        raise InputError("localised.use", "a route whose uniform term applies: exact needs a readout block at the "
                         "top and squared loss, linearised a readout block at the top", opts["use"])
    keys = ["delta_U", "delta_T_d"] + (["delta_S_pop", "delta_R_failure"] if chain == "paper" else [])
    keys += [] if uniform == "sure" else ["delta_sigma"]
    fixed = sum(float(opts[k]) for k in keys if k in opts)
    if not fixed < cfg.level:
        key = next(k for k in reversed(keys) if k in given) if any(k in given for k in keys) else keys[-1]
        raise InputError(f"localised.{key}", f"levels of {opts['use']} summing below level = {cfg.level:g} "
                         f"(they sum to {fixed:.6g})", opts.get(key))
    return opts


@dataclasses.dataclass(frozen=True)
class LocalisedClass:
    """The localised ball and its constants, fixed before ``S`` (docstring of ``numerics.studies.run._localised``).

    Attributes:
        nu: the cap of the ball; nu_source: how it was fixed; clipped: ``nu`` was lowered to ``nu_V``.
        at_top: a readout block at the top (linear head on ``u + h``); exact_applies: and squared loss.
        b_xi, kappa, A_norm: constants (``kappa``/``A_norm`` ``None`` below the top).
        sigma2_ub, delta_sigma: ``sigma^2``'s bound and its level (``None``: not at the top).
        sigma2_mean, sigma2_n: the signal sample's mean of ``||m phi^T||^2`` and its size.
        applies: the localised class is the run's (``False`` for the ``full`` family: it trains features).
    """

    nu: float
    nu_source: str
    clipped: bool
    at_top: bool
    exact_applies: bool
    b_xi: float
    kappa: float | None = None
    A_norm: float | None = None
    sigma2_ub: float | None = None
    delta_sigma: float | None = None
    sigma2_mean: float | None = None
    sigma2_n: int = 0
    applies: bool = True


_CACHE: dict[int, tuple[weakref.ref, LocalisedClass]] = {}


def localised_class(fixed) -> LocalisedClass:
    """The :class:`LocalisedClass` of a run's stage 1 (computed once per :class:`Fixed`)."""
    hit = _CACHE.get(id(fixed))
    if hit is not None and hit[0]() is fixed:
        return hit[1]
    cls = _compute(fixed)
    _CACHE[id(fixed)] = (weakref.ref(fixed), cls)
    return cls


def _cap(fixed, opts: Mapping) -> tuple[float, str, bool]:
    c, sig = fixed.const, fixed.signal
    if opts["cap"] == CapRule.WORD:     # V_pop = -eta G, ||V_pop|| = min(||G||/beta, nu_V): in the ball, no rounding
        nu, src = float(sig.G.norm()) / sig.beta.beta, "jumpboard: ||G^||/beta^ on the signal sample"
        return max(min(nu, c.nu_V), float(sig.V_pop.norm())), src, nu > c.nu_V
    nu = float(opts["cap"])
    return min(nu, c.nu_V), "localised.cap (a number fixed before S)", nu > c.nu_V


def _compute(fixed) -> LocalisedClass:
    from numerics._numerics import spectral_norm
    from numerics.studies.run._stages import is_exact_class

    opts, c = localised_options(fixed.cfg), fixed.const
    nu, src, clipped = _cap(fixed, opts)
    b_xi = c.L_loss * c.L_top_certified * c.rho_phi
    ex = fixed.expanded
    applies = not RESIDUAL_FAMILIES[ex.block.family].trains_features     # f_new stays in a ball in V alone
    at_top = applies and fixed.at == fixed.net.depth and ex.post_norm is None
    if not at_top:
        return LocalisedClass(nu, src, clipped, False, False, b_xi, applies=applies)
    A_norm = spectral_norm(fixed.net.head.weight)
    kappa = 2 * A_norm**2 if fixed.loss == "squared" else A_norm**2 / 2
    mean, var, n = _xi_moments(fixed, b_xi)
    ub = _sigma2_upper(n, mean, var, float(opts["delta_sigma"]), b_xi)
    return LocalisedClass(nu, src, clipped, True, is_exact_class(fixed), b_xi, kappa, A_norm, min(ub, b_xi**2),
                          float(opts["delta_sigma"]), mean, n)


def _xi_moments(fixed, b_xi: float) -> tuple[float, float, int]:
    """Mean and unbiased variance of ``||m_i||^2 ||phi_i||^2`` on the signal sample (streamed, with labels).

    Raises:
        ArithmeticError: a value above the sure bound ``b_xi^2`` (the constants would be wrong).
    """
    from numerics._numerics import MeanVar
    from numerics.estimators import activation_gradients_on_states

    mv, top = MeanVar(), 0.0
    seed = fixed.streams.seed_for("signal")
    for x, y in fixed.task.sample_chunks(fixed.cfg.sizes.population, seed):
        with torch.no_grad():
            u = fixed.net.bottom(x, fixed.at)
        m = activation_gradients_on_states(fixed.expanded, u, y, fixed.loss)
        with torch.no_grad():
            phi = fixed.expanded.block.features(u.reshape(u.shape[0], -1))
            val = m.pow(2).sum(dim=1) * phi.pow(2).sum(dim=1)
        top = max(top, float(val.max()))
        mv.add(val[:, None])
    if top > b_xi**2 * (1 + 1e-9):
        raise ArithmeticError(f"||m phi^T||^2 == {top:.6g} on the signal sample exceeds b_xi^2 == {b_xi**2:.6g}")
    mean, _ = mv.result()
    return float(mean[0]), float(mv.variance()[0]), mv.n


def _sigma2_upper(n: int, mean: float, var: float, level: float, b_xi: float) -> float:
    from bounds._statement import evaluate
    from bounds.localised import sigma2_upper_expression

    import sympy as sp

    n_, m_, v_, l_ = sp.symbols("n_sig mean_sig var_sig level_sig", positive=True)
    expr = sigma2_upper_expression(n_, m_, v_, l_)
    return float(evaluate(expr, {"n_sig": n, "mean_sig": mean, "var_sig": var, "level_sig": level, "b_xi": b_xi}))
