"""The localised certificates of one draw (THEORY §6b, **Choice**): measured on the right samples, then evaluated.

Every sample has a role, and the result says which sample fixed what:

* the *signal sample* (role ``signal``, of ``seed``) fixed the ball ``||V||_F <= nu`` and the
  constants of ``U_S`` (:func:`~numerics.studies.run._localised.localised_class`), before ``S``;
* ``S`` (role ``S``): ``f_new`` of the localised class and its observed training gain
  ``delta_train = -D_S(V_new)``; the paired differences ``d_pop`` of ``f~_pop`` (mean and
  unbiased variance, the paper chain's ``t_S(d_pop)``);
* ``T`` (role ``T``): the paired differences ``d_new = l(f_new) - l(f_old)`` (mean, unbiased
  variance ``V_n`` of the Bernstein tail) and ``L_test(f_new)``;
* the Monte-Carlo population sample (role ``population``, its own role: not the signal
  sample that fixed ``V_pop``, not ``S``): the lower confidence bound on ``Delta_R`` from the
  paired conditional differences (:func:`bounds.localised_routes.paired_delta_R_lower`, range
  ``2 r_d``), read from the run's own pass.

**Choice** (``f_new`` of the localised class): the run trains inside its own cap ``nu_V``;
its ``V_new``, the train-set jumpboard ``V_S`` and ``V_pop`` are each projected radially onto
the localised ball (rescaled inwards by ``1 - 1e-12`` when outside, then checked in floating
point), and the one with the smallest ``R_S`` is ``f_new`` (ties: that order) -- a (C2)-style
choice on ``S`` inside a ball fixed before ``S``, which the uniform event ``E_U`` covers.
With a grid of caps (``[localised] cap_grid``), the candidates are projected onto every cap's
ball, the cap with the smallest ``D_S(V_new^k) + U_S(nu_k)`` is used (chosen on ``S``; every
event about a function depending on it pays the grid, ``n_grid`` copies; ``r_d`` at that cap),
and ``T`` is drawn for that cap's ``f_new`` only. When the projection moves ``V_pop`` (a numeric cap below ``||V_pop||``) the run's population
pass is not about the projected function: the paper chain is skipped (named in ``skipped``).

**Choice** (``routes.heldout_paired``, what a user would do without the theory): on ``T``,
``R(f_new) - R(f_old) <= mean_T(d_new) + t_T(d_new)``, ``t_T`` empirical Bernstein
(Maurer--Pontil) at the range ``2 r_d`` and the run's ``level``; the same ``f_new`` as the
localised routes. Its bound is on ``R(f_new) - R(f_old)``; it certifies when it is ``< 0``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import torch

__all__ = ["CANDIDATES", "LocalisedCertificate", "LocalisedMeasure", "certify_localised", "heldout_paired",
           "measure_localised", "project_to_ball"]

#: The localised candidates for ``f_new``, in tie-breaking order.
CANDIDATES = ("new", "jump_S", "jump_pop")
_CHUNK = 1 << 16


def project_to_ball(V: torch.Tensor, nu: float) -> torch.Tensor:
    """``V`` rescaled into ``||V||_F <= nu`` (inwards by ``1 - 1e-12``; ``V`` itself when inside).

    Raises:
        ArithmeticError: the float64 norm is still above ``nu`` (never expected).
    """
    norm = float(V.norm())
    out = V if norm <= nu else V * (nu / norm * (1 - 1e-12))
    if float(out.norm()) > nu:
        raise ArithmeticError(f"||V||_F == {float(out.norm())!r} after projection, must be <= nu == {nu!r}")
    return out


@dataclasses.dataclass(frozen=True)
class LocalisedMeasure:
    """What one draw measures for the localised routes (docstring of ``numerics.studies.run._localised_draw``); ``V`` is ``f_new``'s block."""

    V: torch.Tensor
    returned: str
    D_S: Mapping[str, float]        # mean on S of l(candidate) - l(f_old), per CANDIDATES
    var_S_dpop: float
    pop_in_ball: bool
    mean_T_dnew: float
    var_T_dnew: float
    L_test_new: float
    norms: Mapping[str, float]      # ||V|| of each candidate before projection
    nu: float = float("nan")        # the cap used (the grid's, chosen on S)
    train_bounds: tuple | None = None   # D_S + U_S at each grid cap (None: one cap)


@dataclasses.dataclass(frozen=True)
class LocalisedCertificate:
    """The localised routes of a draw: inputs (:class:`bounds.localised_routes.LocalisedSetup`), report, baseline."""

    cls: object                     # numerics.studies.run._localised.LocalisedClass
    options: Mapping
    measure: LocalisedMeasure | None
    setup: object
    report: object                  # bounds.localised_routes.LocalisedReport
    heldout: Mapping | None
    gap: Mapping | None = None      # M_needed per route, the scan's n_needed_improvable (run._gap)


@torch.no_grad()
def _S_pass(fixed, group, b: int, Vs: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Means and unbiased variances on ``S`` of ``l(V_c) - l(0)`` for the candidates ``Vs (C, d, r)``."""
    from numerics._numerics import MeanVar
    from numerics.block_training import candidate_losses

    u, y, mv = group.u[b], group.y[b], MeanVar()
    Vall = torch.cat([torch.zeros_like(Vs[:1]), Vs])[None]
    for i in range(0, u.shape[0], _CHUNK):
        losses = candidate_losses(fixed.expanded, u[i:i + _CHUNK][None], y[i:i + _CHUNK][None], Vall, fixed.loss)[0]
        mv.add((losses[1:] - losses[:1]).T.cpu())
    mean, _ = mv.result()
    return mean, mv.variance().numpy()


@torch.no_grad()
def _T_pass(fixed, stream, V: torch.Tensor) -> tuple[float, float]:
    """Mean and unbiased variance on ``T`` (its role stream, re-drawn) of ``d_new = l(V) - l(0)``."""
    from numerics._numerics import MeanVar
    from numerics.block_training import candidate_losses

    mv, Vs = MeanVar(), torch.stack([torch.zeros_like(V), V])[None]
    for x, y in fixed.task.sample_chunks(fixed.cfg.sizes.K, stream.seed_for("T")):
        u = fixed.net.bottom(x, fixed.at)
        losses = candidate_losses(fixed.expanded, u[None], y[None], Vs, fixed.loss)[0]
        mv.add((losses[1:] - losses[:1]).T.cpu())
    mean, _ = mv.result()
    return float(mean[0]), float(mv.variance()[0])


def measure_localised(fixed, group, sel, ev, b: int, nu, st_at=None) -> LocalisedMeasure:
    """``f_new`` of the localised class and its paired differences on ``S`` and ``T`` (docstring of
    ``numerics.studies.run._localised_draw``); ``nu`` a cap, or the grid's caps with ``st_at(nu, D_S)``
    the setups that choose one on ``S`` (:func:`numerics.studies.run._localised_cap.choose_on_S`)."""
    from numerics.studies.run._localised_cap import choose_on_S

    caps = (float(nu),) if np.ndim(nu) == 0 else tuple(map(float, nu))
    raw = {"new": sel.V_new[b], "jump_S": group.V_S[b], "jump_pop": fixed.signal.V_pop}
    Vs = torch.stack([project_to_ball(raw[k], c) for c in caps for k in CANDIDATES])
    means, var = _S_pass(fixed, group, b, Vs)
    means, var = means.reshape(len(caps), len(CANDIDATES)), var.reshape(len(caps), len(CANDIDATES))
    j, choice = 0, None
    if len(caps) > 1:
        choice = choose_on_S(st_at, caps, means.min(axis=1), fixed_use(fixed), fixed.cfg.level)
        j = choice.index
    k = int(np.argmin(means[j]))
    V = Vs[j * len(CANDIDATES) + k]
    mean_T, var_T = _T_pass(fixed, group.streams[b], V)
    pop = Vs[j * len(CANDIDATES) + 2]
    return LocalisedMeasure(V, CANDIDATES[k], dict(zip(CANDIDATES, map(float, means[j]))), float(var[j, 2]),
                            bool(torch.equal(pop, fixed.signal.V_pop)), mean_T, var_T,
                            float(ev.L_test["old"]) + mean_T, {c: float(raw[c].norm()) for c in CANDIDATES},
                            caps[j], None if choice is None else choice.train_bound)


def fixed_use(fixed) -> str:
    """The route fixed before the data (``[localised] use``, resolved)."""
    from numerics.studies.run._localised import localised_options

    return localised_options(fixed.cfg)["use"]


def _setup_at(fixed, ev, cls, opts: Mapping, nu, delta_train, var_T, n_grid: int):
    """The S- and T-side inputs at cap(s) ``nu`` (no ``Delta_R``: :func:`_setup` adds it)."""
    from bounds.localised_routes import LocalisedSetup
    from numerics.studies.run._names import setup_values

    c, sz, blk = fixed.const, fixed.cfg.sizes, fixed.expanded.block
    levels = {k: float(opts[k]) for k in ("delta_U", "delta_T_d", "delta_S_pop") if k in opts}
    top = {} if not cls.at_top else {"kappa": cls.kappa, "b_xi": cls.b_xi, "sigma2_ub": cls.sigma2_ub,
                                     "delta_sigma": cls.delta_sigma, "tr_ub": cls.tr_ub, "delta_tr": cls.delta_tr}
    if cls.exact_applies:
        top.update(A_norm=cls.A_norm, Sigma_ub=cls.Sigma_ub, delta_Sn=cls.delta_Sn)   # (c): ||Sigma_phi||'s bound
    return LocalisedSetup(M=sz.M, K=sz.K, L_test_old=float(ev.L_test["old"]),
                          **setup_values(c, ("B", "L_loss", "L_top", "rho_phi")), d=blk.d, r=blk.r, nu_V=nu,
                          n_grid=n_grid, delta_train=delta_train, var_T_dnew=var_T, **top, **levels,
                          exact_applies=bool(cls.exact_applies))


def _setup(fixed, ev, meas: LocalisedMeasure, cls, opts: Mapping):
    from bounds.localised_routes import paired_delta_R_lower

    st = _setup_at(fixed, ev, cls, opts, meas.nu, -meas.D_S[meas.returned], meas.var_T_dnew, len(cls.caps) or 1)
    if not meas.pop_in_ball:
        return st
    n, fail = ev.n_population, float(opts["delta_R_failure"])
    low = float(paired_delta_R_lower(ev.delta_R_hat, ev.delta_R_stderr ** 2 * n, n, st, fail))
    return dataclasses.replace(st, delta_R=low, delta_R_failure=fail, var_S_dpop=meas.var_S_dpop,
                               delta_erm_pop=meas.D_S["jump_pop"] - meas.D_S[meas.returned])


def heldout_paired(mean_T: float, var_T: float, K: int, r_d: float, level: float) -> dict:
    """``routes.heldout_paired`` (docstring of ``numerics.studies.run._localised_draw``): the held-out
    paired test on ``T`` (**Choice**, not Paper A's)."""
    from bounds.confidence import empirical_bernstein_lower

    from bounds.route_roles import explicit_roles

    bound = -float(empirical_bernstein_lower(-mean_T, var_T, K, 2.0 * r_d, level))
    roles = explicit_roles({"signal": ["the ball of V (r_d at its cap)"], "S": ["f_new (the localised (C2) choice)"],
                            "T": ["d_new's mean and variance (Bernstein tail H_T_heldout)"]}, ["mean_T(d_new)", "V_T_dnew"])
    return {"route": "heldout_paired", "theorem": "heldout_paired", "bound": bound, **roles,
            "bound_on": "R(f_new) - R(f_old) (population risk difference)", "failure_probability": level,
            "certified": bool(bound < 0), "improvement": -bound, "margin_shortfall": max(0.0, bound),
            "terms": [{"name": "mean_T(d_new)", "value": mean_T, "role": "estimate", "sample": "T"},
                      {"name": "t_T(d_new)", "value": bound - mean_T, "role": "cost", "sample": "T"}],
            "levels": {"H_T_heldout": level},
            "origin": "Choice: the held-out paired test a user would run without the theory (THEORY §6b); it "
                      "certifies only after T is spent, not Paper A's",
            "observed": None, "observed_minus_bound": None,
            "observed_is": "not measured by run (the validity study checks the bound against the population truth)"}


def _skipped_all(why: str):
    from bounds.localised import LOCALISED_SPECS
    from bounds.localised_routes import LocalisedReport

    return LocalisedReport(0.0, {}, {name: why for name in LOCALISED_SPECS}, ())


def certify_localised(fixed, group, sel, ev, b: int, *, terms: bool = True) -> LocalisedCertificate:
    """Every localised route of draw ``b``, the held-out paired baseline and the gap (``terms``: each
    route's terms' dependence on ``M``) (docstring of ``numerics.studies.run._localised_draw``)."""
    from bounds.localised_routes import evaluate_localised
    from numerics.studies.run._localised import localised_class, localised_options

    opts, cls = localised_options(fixed.cfg), localised_class(fixed)
    if not cls.applies or sel.blocks_new is not None:
        why = "the full family trains the block's features: f_new leaves the localised class (THEORY §6b)"
        return LocalisedCertificate(cls, opts, None, None, _skipped_all(why), None)
    caps = cls.caps or (cls.nu,)
    st_at = lambda nu, D: _setup_at(fixed, ev, cls, opts, nu, -D, 0.0 * nu, len(caps))  # noqa: E731
    meas = measure_localised(fixed, group, sel, ev, b, caps if len(caps) > 1 else caps[0], st_at)
    st = _setup(fixed, ev, meas, cls, opts)
    report = evaluate_localised(st, fixed.cfg.level)
    if not meas.pop_in_ball:
        why = "V_pop lies outside the localised ball (localised.cap < ||V_pop||): no population pass of its projection"
        report = dataclasses.replace(report, skipped={k: why if k.startswith("localised_paper") else v
                                                      for k, v in report.skipped.items()})
    held = heldout_paired(meas.mean_T_dnew, meas.var_T_dnew, fixed.cfg.sizes.K, float(st.r_d()), fixed.cfg.level)
    from numerics.studies.run._gap import localised_gap

    return LocalisedCertificate(cls, opts, meas, st, report, held, localised_gap(fixed, st, report, terms=terms))
