"""The localised ball's cap: the ``"predicted"`` rule and the grid of caps (THEORY §6b, **Choice**).

* ``[localised] cap = "predicted"`` -- the cap that maximises the margin of the route fixed
  before the data (``use``), *predicted* from the signal sample only: the bound of
  :func:`bounds.localised_routes.evaluate_localised` (every constant as the run uses it) at the
  predicted gain ``||G^|| nu - beta^ nu^2 / 2`` (Theorem 1's quadratic model along ``-G^``) and
  the predicted variance ``nu^2 Var(<xi, G^>)/||G^||^2`` of ``d_V`` on ``T`` (signal sample),
  maximised over 400 caps log-spaced in ``[1e-4 nu_max, nu_max]``, ``nu_max = min(||G^||/beta^, nu_V)``.
  A function of the signal sample (independent of ``S`` and ``T``) and of data-free constants:
  a cap fixed before ``S``, no union. The prediction need not be right; only the certificate
  evaluated afterwards on ``S`` and ``T`` counts.
* ``[localised] cap_grid = n`` (default 1), ``cap_ratio = c`` (default 2): the caps
  ``nu c^-k``, ``k = 0..n-1`` below the rule's ``nu``, fixed before ``S``; the cap is chosen
  *with S* (the smallest ``D_S(V_new^k) + U_S(nu_k)``, :func:`choose_on_S`) and every event about
  a function depending on it pays the grid (``copies = n``: ``ln(n/delta)`` for ``ln(1/delta)``,
  THEORY §6b); ``r_d`` is that of the cap used. The grid stays below the run's ``nu_V`` (where
  its ``B``, ``L_loss``, ``L_top`` are certified).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

__all__ = ["cap_grid", "choose_on_S", "predicted_cap", "predicted_setup"]

_N_PREDICT = 400


def cap_grid(nu: float, opts: Mapping) -> tuple[float, ...]:
    """``nu c^-k``, ``k = 0..n-1`` (``n = cap_grid``, ``c = cap_ratio``).

    Example:
        >>> cap_grid(8.0, {"cap_grid": 3, "cap_ratio": 2.0})
        (8.0, 4.0, 2.0)
    """
    n, c = int(opts.get("cap_grid", 1)), float(opts.get("cap_ratio", 2.0))
    return tuple(float(nu * c ** -k) for k in range(n))


def predicted_setup(fixed, cls_fields: Mapping, opts: Mapping, nu, n_grid: int = 1):
    """The :class:`~bounds.localised_routes.LocalisedSetup` of the prediction at caps ``nu`` (an array)."""
    from bounds.localised_routes import LocalisedSetup
    from numerics.studies.run._names import setup_values

    c, sig, sz, blk = fixed.const, fixed.signal, fixed.cfg.sizes, fixed.expanded.block
    G, beta = float(sig.G.norm()), float(sig.beta.beta)
    nu = np.asarray(nu, dtype=np.float64)
    gain = G * nu - beta * nu**2 / 2
    base = setup_values(c, ("B", "L_loss", "L_top", "rho_phi"))
    r_d = np.minimum(base["B"], base["L_loss"] * base["L_top"] * nu * base["rho_phi"])
    dir_var = cls_fields.get("dir_var")
    var = np.minimum(r_d**2, nu**2 * dir_var if dir_var is not None else r_d**2)
    top = {k: cls_fields[k] for k in ("kappa", "b_xi", "sigma2_ub", "delta_sigma", "tr_ub", "delta_tr")
           if cls_fields.get(k) is not None} if cls_fields.get("at_top") else {}
    if cls_fields.get("exact_applies"):
        top.update({k: cls_fields[k] for k in ("A_norm", "Sigma_ub", "delta_Sn")})
    levels = {k: float(opts[k]) for k in ("delta_U", "delta_T_d", "delta_S_pop") if k in opts}
    paper = {"delta_R": gain, "delta_R_failure": float(opts["delta_R_failure"]), "delta_erm_pop": 0.0 * nu,
             "var_S_dpop": var}
    return LocalisedSetup(M=sz.M, K=sz.K, L_test_old=0.0, **base, d=blk.d, r=blk.r, nu_V=nu, n_grid=n_grid,
                          delta_train=gain, var_T_dnew=var, **top, **levels, **paper,
                          exact_applies=bool(cls_fields.get("exact_applies")))


def predicted_cap(fixed, cls_fields: Mapping, opts: Mapping) -> float:
    """The ``"predicted"`` cap (docstring of ``numerics.studies.run._localised_cap``); ``nu_max`` when none has a margin."""
    from bounds.localised_routes import evaluate_localised

    c, sig = fixed.const, fixed.signal
    nu_max = min(float(sig.G.norm()) / float(sig.beta.beta), c.nu_V)
    nu = np.geomspace(1e-4 * nu_max, nu_max, _N_PREDICT)
    st = predicted_setup(fixed, cls_fields, opts, nu, int(opts.get("cap_grid", 1)))
    route = evaluate_localised(st, fixed.cfg.level).routes.get(opts["use"])
    if route is None:
        return nu_max
    margin = np.asarray(route.improvement, dtype=np.float64)    # L_test_old (0 here) cancels: -bound
    return float(nu[int(np.argmax(margin))])


@dataclasses.dataclass(frozen=True)
class Choice:
    """The grid cap chosen on ``S``: its index, cap, ``D_S + U_S`` per cap."""

    index: int
    nu: float
    train_bound: tuple[float, ...]


def choose_on_S(st_at, caps, D_S_best, use: str, level: float) -> Choice:
    """The cap with the smallest ``D_S(V_new^k) + U_S(nu_k)`` (``st_at(nu, D_S)``: the setup at caps ``nu``)."""
    from bounds.localised_routes import localised_values

    nu, D = np.asarray(caps, dtype=np.float64), np.asarray(D_S_best, dtype=np.float64)
    v = localised_values(st_at(nu, D), use, level)
    train = D + np.broadcast_to(np.asarray(v["U_S"], dtype=np.float64), nu.shape)
    k = int(np.argmin(train))
    return Choice(k, float(nu[k]), tuple(map(float, train)))
