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

On a sampled task (no exact supremum) :func:`at_function_variants` weakens ``U_S`` and ``t_T_d`` by
:data:`AT_FUNCTION_FACTORS` down to 0 (the term dropped) at the localised ``f_new``, and
:func:`at_function_power` says per route and term how loose the term is against the realised
deviation, the largest factor Holm flags, and -- where nothing is flagged because the realised
deviations are within the truth's tolerance -- the truth size at which each weakening would be flagged.
"""
from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np

from bounds import localised as loc
from bounds._statement import evaluate
from numerics.studies.validity._power import Variant
from numerics.studies.validity._routes import LOCALISED_ROUTE_SPECS

__all__ = ["AT_FUNCTION_FACTORS", "AT_FUNCTION_TERMS", "POWER_LOCALISED_IS", "POWER_ROUTES", "WEAKENINGS", "at_function_name",
           "at_function_power", "at_function_variants", "failures_needed", "localised_variants", "truth_size_to_fail",
           "weakened_U_S"]

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
#: (the premise's event, its term) weakened by each factor (1: the true counterpart, must not be flagged; 0: the
#: term dropped, the premise then says the deviation is <= 0).
AT_FUNCTION_TERMS = {"uniform_S": ("E_U", "U_S"), "tail_T_diff": ("H_T_diff", "t_T_d")}
AT_FUNCTION_FACTORS = (1.0, 0.5, 0.1, 0.01, 0.001, 0.0)


def at_function_name(route: str, premise: str, factor: float) -> str:
    """The power table's key of ``premise``'s term of ``route`` weakened by ``factor``."""
    event, term = AT_FUNCTION_TERMS[premise]
    return f"{term} x {factor:g} ({route}/{event} at f_new)"


def _at_function_parts(route: str, premise: str, factor: float, rec: Mapping) -> dict:
    """At one draw: the premise's term ``t``, its realised deviation ``dev`` (the premise's left side minus its
    right side without the term: ``D_new - DS_new`` for ``E_U``, ``DT_new - D_new`` for ``H_T_diff``), the gap
    ``factor t - dev``, the truth's tolerance, the stated probability and the truth size ``n``.

    Raises:
        KeyError: the record lacks the route, or holds the exact ``E_U`` (:func:`localised_variants` applies).
    """
    from numerics.studies.validity._routes import premise_slacks, spec_values, symbol_values, tolerance

    if "E_U" in (rec.get("deviations") or {}):      # exact class: the exact variants above apply instead
        raise KeyError("E_U is checked exactly at this draw")
    if route not in rec["routes"]:
        raise KeyError(route)
    spec = next(sp_ for sp_ in LOCALISED_ROUTE_SPECS if sp_.name == route)
    rel = next(p.relation for p in spec.theorem.premises if p.name == premise)
    event, term = AT_FUNCTION_TERMS[premise]
    values = spec_values(spec, rec)
    v = symbol_values(spec, values)
    t = float(v[term])
    gap = premise_slacks(spec, values, {term: factor * t})[premise][1]
    dev = -premise_slacks(spec, values, {term: 0.0})[premise][1]
    stated = min(1.0, float(evaluate(next(e.probability for e in spec.theorem.events if e.name == event), v)))
    n = v.get("truth_n", (rec.get("truth") or {}).get("n"))
    return {"term": t, "dev": dev, "gap": gap, "tolerance": tolerance(v, rel, spec.binding), "stated": stated,
            "n": None if n is None else float(n)}


def _at_function(route: str, premise: str, term: str, factor: float) -> tuple[Callable, Callable]:
    """``check`` and ``testable`` of the premise ``premise`` of ``route`` with ``term`` x ``factor``, at the
    localised ``f_new`` (``D_new`` by the paired truth), counted beyond the truth's paired tolerance."""
    def check(rec):
        p = _at_function_parts(route, premise, factor, rec)
        return bool(p["gap"] < -p["tolerance"]), p["stated"]

    def testable(rec):
        p = _at_function_parts(route, premise, factor, rec)
        return p["tolerance"], factor * p["term"]
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
                out.append(Variant(at_function_name(route, premise, c), event, c < 1,
                                   f"{term} x {c:g}; the premise at the localised f_new (paired truth)", check,
                                   "beyond the paired truth's tolerance z se(D_new)", testable))
    return out


#: What ``summary.power_localised`` reports (docstring of :func:`at_function_power`).
POWER_LOCALISED_IS = (
    "per localised route and term, over draws: looseness = realised deviation / term (deviation: D_new - DS_new "
    "for U_S, DT_new - D_new for t_T_d, the truth's paired estimate); looseness_upper = (deviation + tolerance) "
    "/ term (the truth's upper bound at its level); largest_flagged_factor = the largest factor < 1 whose weakened "
    "variant Holm rejects over the whole power table (power_family_wise; largest_flagged_factor_per_test: by its own "
    "one-sided test at the level, as the power table's 'flagged'); failures_needed = the fewest failures "
    "whose p-value is <= level / tests (enough for Holm, whatever the other tests); truth_size_to_flag[factor] = "
    "the truth size at which that many draws would fail, were each realised deviation the true one (the "
    "tolerance falls like 1/sqrt(n)); None: fewer draws than that deviate beyond factor x term at all")


def _quantiles(xs) -> dict | None:
    v = np.asarray([x for x in xs if x is not None and math.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return None
    q = np.quantile(v, (0.0, 0.25, 0.5, 0.75, 1.0))
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]), "q75": float(q[3]), "max": float(q[4]),
            "draws": int(v.size)}


def failures_needed(stated, level: float, tests: int) -> int | None:
    """The fewest failures ``k`` with ``P(X >= k) <= level / tests`` (``X`` Poisson-binomial of ``stated``): a
    p-value at Holm's first cut-off, so rejected family-wise whatever the other tests; ``None``: not even at
    every draw."""
    from numerics.studies.validity._stats import exceedance_p_value

    cut = level / max(int(tests), 1)
    return next((k for k in range(1, len(stated) + 1) if exceedance_p_value(k, stated) <= cut), None)


def truth_size_to_fail(part: Mapping, factor: float) -> float | None:
    """The truth size at which one draw's weakened premise (``factor`` x term) would fail, were its realised
    deviation the true one: ``n (tolerance / (dev - factor term))^2`` where ``dev > factor term``; ``None``
    otherwise (no truth size: the deviation does not exceed the weakened term) or when the size is unknown."""
    excess = part["dev"] - factor * part["term"]
    if not excess > 0 or part["n"] is None:
        return None
    return part["n"] * (part["tolerance"] / excess) ** 2


def at_function_power(records, power: Mapping, family: Mapping, level: float, routes=None) -> dict:
    """``summary.power_localised``: per localised route and term, how loose the term is against the realised
    deviation and the largest weakening factor the study flags (:data:`POWER_LOCALISED_IS`); routes whose
    at-function variants are not in ``power`` (exact class, older records) are left out."""
    routes = [sp_.name for sp_ in LOCALISED_ROUTE_SPECS] if routes is None else routes
    rejected, tests = set(family.get("rejected") or ()), int(family.get("tests") or 0)
    out: dict = {}
    for route in routes:
        for premise, (event, term) in AT_FUNCTION_TERMS.items():
            names = {c: at_function_name(route, premise, c) for c in AT_FUNCTION_FACTORS}
            if not all(n in power for n in names.values()):
                continue
            parts = [_at_function_parts(route, premise, 1.0, r) for r in records]
            need = failures_needed([p["stated"] for p in parts], level, tests)
            weak = [c for c in AT_FUNCTION_FACTORS if c < 1]
            flagged = [c for c in weak if names[c] in rejected]
            per_test = [c for c in weak if power[names[c]].get("flagged")]
            sizes = {}
            for c in weak:
                ns = sorted(x for x in (truth_size_to_fail(p, c) for p in parts) if x is not None)
                sizes[f"{c:g}"] = ns[need - 1] if need is not None and len(ns) >= need else None
            exceed = sum(1 for p in parts if p["dev"] > p["tolerance"])
            out.setdefault(route, {})[term] = {
                "event": event, "factors": [float(c) for c in weak],
                "largest_flagged_factor": max(flagged) if flagged else None,
                "flagged_factors": [float(c) for c in flagged],
                "largest_flagged_factor_per_test": max(per_test) if per_test else None,
                "true_term_flagged": names[1.0] in rejected,
                "failures": {f"{c:g}": power[names[c]]["failures"] for c in AT_FUNCTION_FACTORS},
                "draws": len(parts), "failures_needed": need, "holm_tests": tests,
                "looseness": _quantiles([p["dev"] / p["term"] if p["term"] > 0 else None for p in parts]),
                "looseness_upper": _quantiles([(p["dev"] + p["tolerance"]) / p["term"] if p["term"] > 0 else None
                                               for p in parts]),
                "deviation": _quantiles([p["dev"] for p in parts]),
                "tolerance": _quantiles([p["tolerance"] for p in parts]),
                "resolved_draws": sum(1 for p in parts if abs(p["dev"]) > p["tolerance"]),
                "deviation_beyond_tolerance_draws": exceed,
                "truth_n": parts[0]["n"] if parts else None,
                "truth_size_to_flag": sizes,
                "verdict": _verdict(flagged, need, exceed, names[1.0] in rejected),
            }
    return {"is": POWER_LOCALISED_IS, "routes": out} if out else {}


def _verdict(flagged, need, exceed, true_flagged) -> str:
    if true_flagged:
        return "the true term is flagged: the route's own guarantee failed more often than stated"
    if flagged and max(flagged) > 0:
        return f"flagged down to x {max(flagged):g}: the check sees a term {1 / max(flagged):g} times too small"
    if flagged:
        return ("flagged only at x 0 (term dropped): the deviation is positive beyond the truth's tolerance, but no "
                "weakened term is seen to fail")
    if need is None:
        return "no factor can be flagged: too few draws for Holm's cut-off even if every draw failed"
    if exceed < need:
        return (f"not flagged even at x 0 (term dropped): the realised deviation exceeds the truth's tolerance at "
                f"{exceed} draws ({need} needed for Holm); at the others it does not exceed it")
    return "not flagged"
