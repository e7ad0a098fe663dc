"""Evaluate the localised certificates of THEORY §6b (**Choice**) from measured inputs, vectorised.

Every route ``localised_<chain>_<uniform>_<tail>`` is read from its theorem object of
:mod:`bounds.localised`: each event's :class:`~bounds._statement.Tail` gives the value of its
slack, the theorem's bound and failure probability the rest (no formula is written twice).
The results are :class:`~bounds.variant_routes.VariantResult` objects, the fields of the
other routes (``bound`` on ``L_test(f_new)``, ``failure_probability``, ``certified``, ...,
``terms``, ``levels``), with ``route`` the chain (``train``/``paper``).

Levels (**Choice**, fixed before the data): the given ones; else what ``level`` leaves after
``delta_R_failure`` and the levels of the ``sigma^2``/``||Sigma_phi||`` bounds (used by (b),
(c)) is split equally over the chain's other events (``E_U``, ``H_T_diff``, ``H_S_pop``);
inside ``E_U``, ``delta_G = delta_q`` ((b)) or ``delta_G = delta_Sigma`` ((c)) share
``delta_U``. The last level is lowered by a few ulps when the float sum would exceed ``level``.
Each route's ``certified`` holds for a route fixed before the data; reporting the best of
several pays the union of their levels (THEORY §6b).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from bounds import localised as loc
from bounds._localised_inputs import LOCALISED_PARAMETERS, LocalisedSetup
from bounds._route_terms import bound_terms
from bounds._statement import evaluate
from plumbing.validation import LEVEL, InputError
from bounds.confidence import empirical_bernstein_lower
from bounds.variant_routes import VariantResult

__all__ = ["LOCALISED_PARAMETERS", "LocalisedReport", "LocalisedSetup", "Sigma_norm_upper_value", "evaluate_localised",
           "localised_values", "paired_delta_R_lower"]

_SIZES = ("M", "K", "n_grid", "L_test_old", "B", "L_loss", "L_top", "d", "r", "rho_phi", "nu_V", "kappa", "b_xi",
          "A_norm", "delta_train", "delta_R", "delta_R_failure", "delta_erm_pop")


@dataclasses.dataclass(frozen=True)
class LocalisedReport:
    """Every localised route whose inputs are given, the skipped ones (with what they need), notes."""

    level: float
    routes: Mapping[str, VariantResult]
    skipped: Mapping[str, str]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"level": self.level, "routes": {k: r.to_dict() for k, r in self.routes.items()},
                "skipped": dict(self.skipped), "notes": list(self.notes)}


def paired_delta_R_lower(mean_gain, var_gain, n, setup: LocalisedSetup, level):
    """Lower confidence bound on ``Delta_R`` from the paired differences (range ``2 r_d``, not ``2B``).

    Empirical Bernstein (Maurer--Pontil Thm 4) on ``-d_pop`` measured on a sample of its own
    role (not the signal sample that fixed ``V_pop``, not ``S``): ``mean - sqrt(2 V ln(2/level)/n)
    - 14 r_d ln(2/level)/(3(n-1))``, valid at ``level`` (pass it as ``delta_R_failure``).

    Example:
        >>> st = LocalisedSetup(M=10, K=10, L_test_old=1, B=8, L_loss=1, L_top=1, d=1, rho_phi=1, nu_V=0.01)
        >>> round(float(paired_delta_R_lower(6.3e-5, 0.0, 10**6, st, 0.01)), 8)   # 14 r_d ln(200)/(3 (n-1)) = 2.47e-7
        6.275e-05
    """
    return empirical_bernstein_lower(mean_gain, var_gain, n, 2 * setup.r_d(), level)


def Sigma_norm_upper_value(n, top, level, rho_phi, r) -> float:
    """:func:`bounds.localised.Sigma_norm_upper_expression`'s value, its minimum with the sure ``rho_phi^2``
    (``rho_phi^2`` itself when ``a = 2 ln(r/level)/(3n) >= 1``: no bound from the sample).

    Example:
        >>> round(Sigma_norm_upper_value(10**6, 2.0, 1e-3, 3.0, 8), 4), Sigma_norm_upper_value(3, 2.0, 1e-3, 3.0, 8)
        (2.0181, 9.0)
    """
    import sympy as sp

    if not 2 * np.log(r / level) / (3 * n) < 1:
        return float(rho_phi) ** 2
    n_, t_, l_, rho_, r_ = sp.symbols("n_sn top_sn level_sn rho_sn r_sn", positive=True)
    val = evaluate(loc.Sigma_norm_upper_expression(n_, t_, l_, rho_, r_),
                   {"n_sn": n, "top_sn": max(float(top), 0.0), "level_sn": level, "rho_sn": rho_phi, "r_sn": r})
    return min(float(val), float(rho_phi) ** 2)


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _constants(setup: LocalisedSetup) -> dict:
    v = {k: _arr(getattr(setup, k)) for k in _SIZES if getattr(setup, k) is not None}
    v["rad_M"] = v["nu_V"] * np.sqrt(v["d"]) * v["rho_phi"] / np.sqrt(v["M"])
    b2 = v.get("b_xi", np.float64(np.inf)) ** 2
    # sure bounds (level 0), or the signal sample's bounds (their minimum with the sure one holds on the same event)
    v["sigma2_ub"] = b2 if setup.sigma2_ub is None else np.minimum(_arr(setup.sigma2_ub), b2)
    v["delta_sigma"] = np.float64(0.0) if setup.delta_sigma is None else _arr(setup.delta_sigma)
    rho2 = v["rho_phi"] ** 2
    v["Sigma_ub"] = rho2 if setup.Sigma_ub is None else np.minimum(_arr(setup.Sigma_ub), rho2)
    v["delta_Sn"] = np.float64(0.0) if setup.delta_Sn is None else _arr(setup.delta_Sn)
    v["tr_ub"] = rho2 if setup.tr_ub is None else np.minimum(_arr(setup.tr_ub), rho2)
    v["delta_tr"] = np.float64(0.0) if setup.delta_tr is None else _arr(setup.delta_tr)
    v["V_T_dnew"] = _arr(np.nan if setup.var_T_dnew is None else setup.var_T_dnew)
    v["V_S_dpop"] = _arr(np.nan if setup.var_S_dpop is None else setup.var_S_dpop)
    return v


def _levels(setup: LocalisedSetup, chain: str, uniform: str, level: float, v: dict) -> dict:
    """The levels of the chain's events (docstring of ``bounds.localised_routes``); raises if ``level`` leaves nothing."""
    fixed = (v["delta_R_failure"] if chain == "paper" else 0.0) + (
        0.0 if uniform == "sure" else v["delta_sigma"] + (v["delta_Sn"] if uniform == "exact" else v["delta_tr"]))
    keys = ["delta_U", "delta_T_d"] + (["delta_S_pop"] if chain == "paper" else [])
    given = {k: getattr(setup, k) for k in keys}
    free = [k for k in keys if given[k] is None]
    left = level - fixed - sum(_arr(x) for x in given.values() if x is not None)
    if free and np.any(left <= 0):
        raise InputError("level", f"above delta_R_failure, the sigma^2 / ||Sigma_phi|| levels and the given levels of "
                         f"{loc.localised_name(chain, uniform, '*')} (they sum to {float(np.max(level - left)):.6g})",
                         level)
    out = {k: _arr(given[k]) if given[k] is not None else left / len(free) for k in keys}
    if uniform != "sure":
        out.update({"delta_G": out["delta_U"] / 2, "delta_q" if uniform == "linearised" else "delta_Sigma":
                    out["delta_U"] / 2})
    return out


def localised_values(setup: LocalisedSetup, name: str, level: float) -> dict:
    """Every symbol value the route ``name`` needs, its tails' slacks included (for studies that re-check a chain)."""
    chain, uniform, _ = loc.LOCALISED_SPECS[name]
    theorem = loc.LOCALISED[name]
    v = _constants(setup)
    v.update(_levels(setup, chain, uniform, level, v))
    last = "delta_S_pop" if chain == "paper" else "delta_T_d"
    for j in range(16):   # the float sum of the levels at most `level`
        over = evaluate(theorem.failure_probability, v) > level
        if not np.any(over) or getattr(setup, last) is not None:
            break
        v[last] = np.where(over, v[last] - np.spacing(np.float64(level)) * (j + 1), v[last])
    with np.errstate(divide="ignore", invalid="ignore"):   # Bernstein at n = 1: an infinite tail
        for ev in theorem.events:
            if ev.tail is not None:
                v[ev.tail.symbol.name] = evaluate(ev.tail.deviation, v)
    return v


def _min_sizes(theorem, v, terms, improvement, ok):
    """``min_M``, ``min_K``: every cost on ``S`` (on ``T``) scaled as ``1/sqrt(n)``, the others fixed (approximate)."""
    sample = {e.name: e.sample for e in theorem.events}
    cost = {"S": 0.0, "T": 0.0}
    for t in terms:
        if t["role"] == "cost":
            cost[sample[t["event"]]] = cost[sample[t["event"]]] + t["value"]
    with np.errstate(divide="ignore", invalid="ignore"):
        avail = improvement + cost["S"] + cost["T"]
        min_M = np.where(ok & (avail - cost["T"] > 0), v["M"] * (cost["S"] / (avail - cost["T"])) ** 2, np.nan)
        min_K = np.where(ok & (avail - cost["S"] > 0), v["K"] * (cost["T"] / (avail - cost["S"])) ** 2, np.nan)
    return min_M, min_K


def _evaluate_route(setup: LocalisedSetup, name: str, level: float) -> VariantResult:
    theorem, chain = loc.LOCALISED[name], loc.LOCALISED_SPECS[name][0]
    v = localised_values(setup, name, level)
    v["level"] = np.float64(level)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bound = evaluate(theorem.bound, v)
        fail = evaluate(theorem.failure_probability, v)
        terms = bound_terms(theorem, v)
    shape = np.broadcast_shapes(*(np.shape(x) for x in v.values()))
    bound, fail = (np.broadcast_to(np.asarray(a, dtype=np.float64), shape) for a in (bound, fail))
    improvement = v["L_test_old"] - bound
    ok = fail <= level
    min_M, min_K = _min_sizes(theorem, v, terms, improvement, ok)
    return VariantResult(
        route=chain, theorem=name, bound=bound, failure_probability=fail, improvement=improvement,
        certified=(improvement > 0) & ok, margin_shortfall=np.maximum(0.0, -improvement),
        failure_excess=np.maximum(0.0, fail - level), vacuous=fail >= 1.0,
        min_M=np.broadcast_to(min_M, shape), min_K=np.broadcast_to(min_K, shape), terms=terms,
        levels={e.name: np.broadcast_to(evaluate(e.probability, v), shape) for e in theorem.events},
        origin=loc.ORIGIN, values=dict(v))


def evaluate_localised(setup: LocalisedSetup, level: float = 0.05, *, validate: bool = True) -> LocalisedReport:
    """Every THEORY §6b route whose inputs are given, on ``setup`` at failure ``level``.

    Args:
        setup: a :class:`LocalisedSetup` (fields may be numpy arrays, broadcast together).
        level: the largest acceptable failure probability of each route, in (0, 1].
        validate: check every value first.

    Returns:
        A :class:`LocalisedReport`; ``routes`` keyed ``localised_<chain>_<uniform>_<tail>``.

    Raises:
        InputError: a value outside its range (``localised.<key>``), or a ``level`` the fixed
            levels leave nothing of.

    Example:
        >>> st = LocalisedSetup(M=20000, K=20000, L_test_old=0.03, B=8.1, L_loss=1.0, L_top=1.0, d=8, r=8,
        ...                     rho_phi=3.0, nu_V=0.006, delta_train=6e-5, var_T_dnew=6.4e-7, kappa=2.0,
        ...                     b_xi=0.5, A_norm=1.0, exact_applies=True)
        >>> rep = evaluate_localised(st, 0.05)
        >>> r = rep.routes["localised_train_exact_bernstein"]
        >>> len(rep.routes), r.route, bool(float(r.failure_probability) <= 0.05), sorted(rep.skipped)[:1]
        (6, 'train', True, ['localised_paper_exact_bernstein'])
    """
    level = LEVEL.check("level", level)
    if validate:
        setup.validate()
    routes, skipped = {}, {}
    for name, spec in loc.LOCALISED_SPECS.items():
        missing = setup.missing(*spec)
        if missing:
            skipped[name] = "needs " + ", ".join(missing)
        else:
            routes[name] = _evaluate_route(setup, name, level)
    notes = ("localised certificates (THEORY §6b) are this project's Choice, not Paper A's: differences against "
             "f_old over a ball fixed before S; each route's 'certified' holds for a route fixed before the data.",
             "min_M/min_K scale every cost on S (on T) as 1/sqrt(n) (approximate: e_G and the Bernstein range terms "
             "scale as 1/n).")
    return LocalisedReport(level, routes, skipped, notes)
