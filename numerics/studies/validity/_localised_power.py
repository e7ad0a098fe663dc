"""Power of the validity test for the localised certificates (THEORY §6b): weakened ``U_S`` against the exact ``E_U``.

A weakened variant is a *test instrument*, never a certificate: it restates the event ``E_U``
of one localised route -- ``sup_{||V||_F <= nu} (D - D_S)(V) <= U_S`` at the stated level --
with a threshold ``U_S'`` that is too small, computed from the per-draw values the record
stores (``nu_V``, ``b_xi``, ``sigma2_ub``, ``M``, ``delta_G``, ``n_grid``, ``U_S``), and checks it
against the *exact* supremum of the difference quadratic over the ball (case (c)'s class:
``deviations.E_U.upper``, population moments of the exact teacher). Weakenings of ``e_G`` (the
bound on ``||G_S - G||_F``, :func:`bounds.localised.e_G`):

* ``weakened_e_G_x0.1``: ``U_S' = U_S - 0.9 nu e_G`` (``e_G`` ten times too small);
* ``weakened_e_G_no_sqrt``: ``U_S' = U_S - nu sqrt(2 sigma^2 L / M)`` (the variance term of the
  Hilbert-space Bernstein bound dropped, ``L = ln(2 n_grid / delta_G)``);
* ``weakened_U_S_x0.1``: ``U_S' = 0.1 U_S`` (every term ten times too small: the quadratic term
  of (c) with the sure ``||Sigma_phi|| <= rho_phi^2`` is loose too, and on a converged setup it
  alone exceeds the realised supremum at most draws, so weakening ``e_G`` alone is hidden there).

The remaining parts of ``U_S`` (the quadratic term of (c), the remainder of (b)) are kept, so a
variant is flagged only where ``e_G`` carries ``U_S``: the realised supremum then exceeds
``U_S'`` far more often than ``P(E_U)``. A weakened failure counts only beyond the truth's own
Monte-Carlo error on the ball (``deviations.E_U.truth_error``: the half-sample disagreement of
the difference quadratic; absent, the bound ``moment_error (rho + 2 rho^2)``, ``rho = nu / nu_cap``,
from the paper cap's error: the linear part of a quadratic ``q`` obeys ``nu_cap ||g|| <= sup |q|``
and its quadratic part ``|Q| <= 2 sup |q|``); the true counterpart (``U_S`` itself) fails at its
threshold (over-counts: conservative). Flagged means rejected by Holm over the whole power table
(``summary.power_family_wise``).
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np

from bounds import localised as loc
from bounds._statement import evaluate
from numerics.studies.validity._power import Variant
from numerics.studies.validity._routes import LOCALISED_ROUTE_SPECS

__all__ = ["AT_FUNCTION_FACTORS", "AT_FUNCTION_TERMS", "POWER_ROUTES", "WEAKENINGS", "at_function_variants",
           "localised_variants", "weakened_U_S"]

#: The routes whose ``E_U`` the weakened variants restate ((c) and (b): ``e_G`` is part of ``U_S``).
POWER_ROUTES = ("localised_train_exact_bernstein", "localised_train_linearised_bernstein")
#: ``name -> description`` of each weakening of ``e_G``.
WEAKENINGS = {"weakened_e_G_x0.1": "e_G x 0.1 (U_S - 0.9 nu e_G)",
              "weakened_e_G_no_sqrt": "e_G without its sqrt(2 sigma^2 L/M) term",
              "weakened_U_S_x0.1": "U_S x 0.1 (every term)"}


def _values(rec: Mapping, route: str) -> dict:
    return {k: np.float64(v) for k, v in rec["routes"][route]["values"].items() if isinstance(v, (int, float))}


def weakened_U_S(weakening: str, values: Mapping) -> float:
    """``U_S'`` of ``weakening`` (:data:`WEAKENINGS`) from a route's values (docstring of ``numerics.studies.validity._localised_power``).

    Raises:
        ValueError: an unknown weakening.
    """
    if weakening not in WEAKENINGS:
        raise ValueError(f"weakening == {weakening!r}, must be one of {list(WEAKENINGS)}.")
    nu, U = float(values["nu_V"]), float(values["U_S"])
    if weakening == "weakened_U_S_x0.1":
        return 0.1 * U
    if weakening == "weakened_e_G_x0.1":
        return U - 0.9 * nu * float(evaluate(loc.e_G(loc.delta_G, loc.s.n_grid), values))
    L = math.log(2 * float(values["n_grid"]) / float(values["delta_G"]))
    return U - nu * math.sqrt(2 * float(values["sigma2_ub"]) * L / float(values["M"]))


def truth_margin(rec: Mapping) -> float:
    """The truth's Monte-Carlo error on the localised ball (docstring of ``numerics.studies.validity._localised_power``); ``inf`` when unknown."""
    dev = rec["deviations"]["E_U"]
    if dev.get("truth_error") is not None:
        return float(dev["truth_error"])
    err = (rec.get("truth") or {}).get("moment_error")
    rho = float(dev["nu"]) / float(rec["values"]["nu_V"])
    return float(err) * (rho + 2 * rho**2) if err is not None and rho <= 1 else math.inf


def _stated(values: Mapping, route: str) -> float:
    return min(1.0, float(evaluate(loc.UNIFORM_LEVELS[loc.LOCALISED_SPECS[route][1]], values)))


def _check(route: str, weakening: str | None) -> Callable:
    def check(rec):
        v, sup = _values(rec, route), rec["deviations"]["E_U"]["upper"]     # KeyError: no exact E_U at this draw
        if weakening is None:
            return bool(sup > float(v["U_S"])), _stated(v, route)
        return bool(sup > weakened_U_S(weakening, v) + truth_margin(rec)), _stated(v, route)
    return check


def _testable_exact(route: str, weakening: str | None) -> Callable:
    def testable(rec):
        v = _values(rec, route)
        if weakening is None:
            return 0.0, float(v["U_S"])
        return truth_margin(rec), weakened_U_S(weakening, v)
    return testable


def localised_variants(routes=POWER_ROUTES) -> list[Variant]:
    """Each weakening of each route's ``E_U``, and its true counterpart (``U_S`` itself: must not be flagged)."""
    out = []
    for route in routes:
        for w, desc in WEAKENINGS.items():
            out.append(Variant(f"{w} ({route}/E_U)", "E_U", True, f"{desc}; exact supremum over the ball",
                               _check(route, w), "beyond the truth's Monte-Carlo error on the localised ball",
                               _testable_exact(route, w)))
        out.append(Variant(f"{route}/E_U (true U_S)", "E_U", False, "U_S itself; exact supremum over the ball",
                           _check(route, None), testable=_testable_exact(route, None)))
    return out


#: At-function power (a sampled task, no exact supremum: MNIST-1D): the bound term of each localised premise
#: (the premise's event, its term) weakened by each factor (1: the true counterpart, must not be flagged).
AT_FUNCTION_TERMS = {"uniform_S": ("E_U", "U_S"), "tail_T_diff": ("H_T_diff", "t_T_d")}
AT_FUNCTION_FACTORS = (1.0, 0.5, 0.1)


def _at_function(route: str, premise: str, term: str, factor: float) -> tuple[Callable, Callable]:
    """``check`` and ``testable`` of the premise ``premise`` of ``route`` with ``term`` x ``factor``, at the
    localised ``f_new`` (``D_new`` by the paired truth), counted beyond the truth's paired tolerance."""
    from numerics.studies.validity._routes import premise_slacks, spec_values, symbol_values, tolerance

    spec = next(sp_ for sp_ in LOCALISED_ROUTE_SPECS if sp_.name == route)
    rel = next(p.relation for p in spec.theorem.premises if p.name == premise)
    event = AT_FUNCTION_TERMS[premise][0]

    def parts(rec):
        if "E_U" in (rec.get("deviations") or {}):      # exact class: the exact variants above apply instead
            raise KeyError("E_U is checked exactly at this draw")
        values = spec_values(spec, rec)
        v = symbol_values(spec, values)
        t = float(v[term])
        gap = premise_slacks(spec, values, {term: factor * t})[premise][1]
        stated = min(1.0, float(evaluate(next(e.probability for e in spec.theorem.events if e.name == event), v)))
        return gap, tolerance(v, rel, spec.binding), factor * t, stated

    def check(rec):
        gap, tol, _, stated = parts(rec)
        return bool(gap < -tol), stated

    def testable(rec):
        _, tol, weakened, _ = parts(rec)
        return tol, weakened
    return check, testable


def at_function_variants(routes=None) -> list[Variant]:
    """For every localised route (default: all of THEORY §6b), its ``U_S`` and ``t_T_d`` weakened by
    :data:`AT_FUNCTION_FACTORS` and checked at the localised ``f_new`` (a necessary condition for the event, so
    a flag is a real failure of the weakened guarantee); records without the route, or with the exact ``E_U``
    (:func:`localised_variants` applies there), leave the variant out (KeyError)."""
    routes = [sp_.name for sp_ in LOCALISED_ROUTE_SPECS] if routes is None else routes
    out = []
    for route in routes:
        for premise, (event, term) in AT_FUNCTION_TERMS.items():
            for c in AT_FUNCTION_FACTORS:
                check, testable = _at_function(route, premise, term, c)
                out.append(Variant(f"{term} x {c:g} ({route}/{event} at f_new)", event, c < 1,
                                   f"{term} x {c:g}; the premise at the localised f_new (paired truth)", check,
                                   "beyond the paired truth's tolerance z se(D_new)", testable))
    return out
