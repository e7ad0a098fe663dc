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
* ``sigma^2`` (an upper bound on the centred ``E||m phi^T - G||_F^2``, the variance of Pinelis'
  inequality in ``e_G``), ``||Sigma_phi||``'s upper confidence bound (at ``delta_Sn``, used by (c)),
  from one streamed pass over the signal sample's ``x`` with labels from its noise sub-stream
  (:mod:`numerics.studies.run._localised_signal`; ``[localised] variance = "centred"`` or
  ``"uncentred"``, default ``"uncentred"``, both at ``delta_sigma``).
* ``cap = "predicted"`` and the grid of caps (``cap_grid``, ``cap_ratio``):
  :mod:`numerics.studies.run._localised_cap`.

Keys of ``[localised]`` (all optional; :data:`LOCALISED_DEFAULTS`): ``cap`` (``"jumpboard"``,
``"predicted"`` or a number), ``cap_grid``, ``cap_ratio``, ``use``, ``variance`` (``"uncentred"`` or
``"centred"``), the levels ``delta_U``, ``delta_T_d``, ``delta_S_pop``, ``delta_sigma`` (``sigma^2``),
``delta_tr`` (``E||phi||^2``, (b)), ``delta_Sn`` (``||Sigma_phi||``, (c)), ``delta_R_failure``.

The route fixed before the data (``use``) defaults to ``localised_train_exact_bernstein``
where THEORY §6b (c) applies (readout block at the top, squared loss), else
``localised_train_linearised_bernstein`` for a readout block at the top, else
``localised_train_sure_bernstein``.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Mapping


from bounds.families import RESIDUAL_FAMILIES
from bounds.localised import LOCALISED_SPECS
from plumbing.validation import InputError
from numerics.studies.run._config import RunConfig, as_run_config
from numerics.studies.run._schema import LOCALISED_SCHEMA, CapRule

__all__ = ["CapRule", "LOCALISED_DEFAULTS", "LOCALISED_SCHEMA", "LocalisedClass", "default_use", "localised_class",
           "localised_options"]

#: Defaults: the jumpboard cap, no grid, ``sigma^2``'s (uncentred) and ``||Sigma_phi||``'s bounds at 1e-3,
#: ``Delta_R``'s at the run's 5e-4.
LOCALISED_DEFAULTS = {"cap": "jumpboard", "delta_sigma": 1e-3, "delta_R_failure": 5e-4, "delta_Sn": 1e-3, "delta_tr": 1e-3,
                      "variance": "uncentred", "cap_grid": 1, "cap_ratio": 2.0}


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
    keys += ([] if uniform == "sure" else ["delta_sigma"]) + {"exact": ["delta_Sn"], "linearised": ["delta_tr"]}.get(
        uniform, [])
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
        nu: the cap of the ball (the grid's largest); nu_source: how it was fixed; clipped: ``nu`` was lowered to ``nu_V``.
        at_top: a readout block at the top (linear head on ``u + h``); exact_applies: and squared loss.
        b_xi, kappa, A_norm: constants (``kappa``/``A_norm`` ``None`` below the top).
        sigma2_ub, delta_sigma: ``sigma^2``'s bound (``variance``: centred or uncentred) and its level
            (``None``: not at the top); sigma2_uncentred, sigma2_centred: both bounds at ``delta_sigma``.
        sigma2_mean, sigma2_n: the signal sample's mean of ``||m phi^T||^2`` and its size; G_n_norm: ``||mean m phi^T||``.
        Sigma_ub, delta_Sn, Sigma_top: ``||Sigma_phi||``'s bound, its level, ``lambda_max(Sigma_n)``.
        tr_ub, delta_tr, phi2_mean: ``E||phi||^2``'s bound ((b)'s remainder), its level, the sample's mean.
        dir_var: the signal sample's variance of ``<xi, G^>/||G^||`` (the ``"predicted"`` rule's predictor only).
        caps: the grid of caps fixed before ``S`` (``nu`` first; one cap: no grid).
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
    variance: str = "uncentred"
    sigma2_uncentred: float | None = None
    sigma2_centred: float | None = None
    G_n_norm: float | None = None
    Sigma_ub: float | None = None
    delta_Sn: float | None = None
    Sigma_top: float | None = None
    dir_var: float | None = None
    caps: tuple = ()
    tr_ub: float | None = None
    delta_tr: float | None = None
    phi2_mean: float | None = None


def once_per_fixed(compute):
    """``compute(fixed)`` memoised per stage-1 object (by identity, held weakly: a new ``Fixed`` computes again)."""
    cache: dict[int, tuple[weakref.ref, object]] = {}

    def cached(fixed):
        hit = cache.get(id(fixed))
        if hit is not None and hit[0]() is fixed:
            return hit[1]
        out = compute(fixed)
        cache[id(fixed)] = (weakref.ref(fixed), out)
        return out
    cached.__doc__, cached.__name__ = compute.__doc__, compute.__name__
    return cached


@once_per_fixed
def localised_class(fixed) -> LocalisedClass:
    """The :class:`LocalisedClass` of a run's stage 1 (computed once per :class:`Fixed`)."""
    return _compute(fixed)


def _cap(fixed, opts: Mapping, fields: Mapping) -> tuple[float, str, bool]:
    from numerics.studies.run._localised_cap import predicted_cap

    c, sig = fixed.const, fixed.signal
    if opts["cap"] == CapRule.WORD:     # V_pop = -eta G, ||V_pop|| = min(||G||/beta, nu_V): in the ball, no rounding
        nu, src = float(sig.G.norm()) / sig.beta.beta, "jumpboard: ||G^||/beta^ on the signal sample"
        return max(min(nu, c.nu_V), float(sig.V_pop.norm())), src, nu > c.nu_V
    if opts["cap"] == CapRule.PREDICTED:
        nu = predicted_cap(fixed, fields, opts)
        return nu, f"predicted: the margin of {opts['use']} maximised on the signal sample", False
    nu = float(opts["cap"])
    return min(nu, c.nu_V), "localised.cap (a number fixed before S)", nu > c.nu_V


def _compute(fixed) -> LocalisedClass:
    from numerics._numerics import spectral_norm
    from numerics.studies.run._localised_cap import cap_grid
    from numerics.studies.run._localised_signal import Sigma_norm_upper, sigma2_bounds, signal_moments, trace_upper
    from numerics.studies.run._stages import is_exact_class

    opts, c = localised_options(fixed.cfg), fixed.const
    b_xi = c.L_loss * c.L_top_certified * c.rho_phi
    ex = fixed.expanded
    applies = not RESIDUAL_FAMILIES[ex.block.family].trains_features     # f_new stays in a ball in V alone
    at_top = applies and fixed.at == fixed.net.depth and ex.post_norm is None
    fields = {"at_top": at_top, "exact_applies": False, "b_xi": b_xi}
    if at_top:
        A_norm = spectral_norm(fixed.net.head.weight)
        mom = signal_moments(fixed, b_xi)
        unc, cen = sigma2_bounds(mom, float(opts["delta_sigma"]), b_xi)
        fields.update(exact_applies=is_exact_class(fixed), A_norm=A_norm, variance=opts["variance"],
                      kappa=2 * A_norm**2 if fixed.loss == "squared" else A_norm**2 / 2,   # THEORY §6b (b)
                      sigma2_ub=cen if opts["variance"] == "centred" else unc, delta_sigma=float(opts["delta_sigma"]),
                      sigma2_mean=mom.mean_xi2, sigma2_n=mom.n, sigma2_uncentred=unc, sigma2_centred=cen,
                      G_n_norm=mom.G_n_norm, Sigma_top=mom.Sigma_top, dir_var=mom.dir_var,
                      Sigma_ub=Sigma_norm_upper(mom, float(opts["delta_Sn"]), c.rho_phi, ex.block.r),
                      delta_Sn=float(opts["delta_Sn"]), tr_ub=trace_upper(mom, float(opts["delta_tr"]), c.rho_phi),
                      delta_tr=float(opts["delta_tr"]), phi2_mean=mom.mean_phi2)
    nu, src, clipped = _cap(fixed, opts, fields)
    return LocalisedClass(nu, src, clipped, applies=applies, caps=cap_grid(nu, opts), **fields)
