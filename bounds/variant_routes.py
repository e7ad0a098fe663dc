"""Evaluate this project's tighter variants next to Paper A's routes (THEORY §6, **Choice**).

Everything is read from the theorem objects of :mod:`bounds.variants`: each event's
:class:`~bounds._statement.Tail` gives the numeric value of its slack (the formula is
written once), the theorem's bound and failure probability give the rest. The paper's
routes (:func:`bounds.routes.evaluate_routes`) are not touched; their bounds are only
decomposed into terms here, for the figure (:mod:`bounds._route_terms`).

Levels: :mod:`bounds._variant_inputs` (by default every variant's failure probability is
``delta + delta'``, the paper's direct route's, with the float sum at most that).

Each route's ``certified`` is the statement of that route alone, valid for a route fixed
before the data. Two results pay for the choice (:mod:`bounds.route_choice`):

* ``any_route`` -- "some route certifies" over the ``N`` routes evaluated (the paper's two
  and every variant whose inputs are given), by the one union mechanism of
  :mod:`bounds.route_choice` (:func:`any_with_variants`): every level each route spends is
  multiplied by one factor ``c`` fixed before the data so that the union of their distinct
  failure events is at most ``level`` (``c >= 1/N``: an event shared by several routes is
  paid once), so whichever is picked after seeing the data, the claim holds at ``level``;
* ``use`` -- ``[variants] use = "<route>"``, a route fixed before the data: the
  certificate is that route's, at the full level.

``min_M``/``min_K`` of a variant: the ``M`` (``K``) at which its margin is 0 when every
cost on ``S`` (on ``T``) scales as ``1/sqrt(n)`` from its value here, the others fixed
(exact for Hoeffding tails and the closed-form term; for Bernstein tails and the
empirical term an approximation, with the variances and ``rad_hat sqrt(M)`` held fixed;
this project's **Choice**, stated in the notes).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds import variants as var
from bounds._route_terms import bound_terms, paper_terms
from bounds._statement import evaluate
from plumbing.validation import InputError, LEVEL
from bounds._variant_inputs import ERM_SUBSTITUTION_NOTE, VARIANT_PARAMETERS, VariantInputs
from bounds.routes._union import ANY_OF
from bounds.route_choice import AnyRouteResult, RouteCandidate, event_key, level_scale, union_of_routes
from bounds.routes._paper import RouteResult, Setup, evaluate_routes
from bounds._variant_chain import (PAPER_ROUTES, VariantResult, VariantsReport, _evaluate_all, _fit,  # noqa: F401
                                   evaluate_chain, variant_values)
from bounds.theorems import THEOREM_2

__all__ = ["ERM_SUBSTITUTION_NOTE", "PAPER_ROUTES", "VARIANT_PARAMETERS", "VariantInputs", "VariantResult", "VariantsReport",
           "any_with_variants", "bonferroni_levels", "bound_terms", "evaluate_chain", "evaluate_variants", "variant_values"]

def bonferroni_levels(setup: Setup, level: float, n_routes: int) -> tuple[Setup, float]:
    """``setup`` with ``delta``, ``delta'`` scaled by ``1/n_routes``, and the share ``level / n_routes``.

    ``delta'`` is then lowered by what rounding needs (a few ulps) so that the float sum
    ``delta + delta'`` stays at most the share. (Phase 1's "best of N"; "some route
    certifies" is now :func:`any_with_variants`, whose common factor is at least ``1/N``.)

    Example:
        >>> st = Setup(L_test_old=1, delta_R=0.1, delta_erm=0, delta_test_R=0.1, M=10, K=10, delta=0.05,
        ...            delta_prime=0.05, B=1, L_loss=1, block=dict(d=1, L_top=1, rho_phi=1, nu_V=1))
        >>> scaled, share = bonferroni_levels(st, 0.1, 10)
        >>> share, bool(scaled.delta + scaled.delta_prime <= share)
        (0.01, True)
    """
    share = level / n_routes
    delta = np.asarray(setup.delta, dtype=np.float64) / n_routes
    v = {"delta": delta, "delta_prime": np.asarray(setup.delta_prime, dtype=np.float64) / n_routes}
    _fit(v, "delta_prime", s.delta + s.delta_prime, np.float64(share))
    return dataclasses.replace(setup, delta=delta, delta_prime=v["delta_prime"]), share


# ---------------------------------------------------------------------------- "some route certifies"
#: Levels: an event whose probability is one of these symbols scales with the common factor.
_LEVELS = frozenset({"delta", "delta_prime", "delta_S_jump", "delta_T_new", "delta_T_old", "delta_T_jump", "delta_mc"})


def _paper_events(setup: Setup, v: Mapping, route: str) -> dict[str, tuple[np.ndarray, bool]]:
    """Event key -> (probability, scales with the levels) of a paper route (:mod:`bounds.route_choice`)."""
    theorem = ANY_OF[route] if setup.delta_R_failure is not None or route == "direct" else THEOREM_2
    out = {}
    for e in theorem.events:
        if e.name in ("E_S", "E_T"):   # THEORY §4's eps at the route's level: the variants' two-sided E_S
            overridden = (setup.eps_M if e.name == "E_S" else setup.eps_K) is not None
            key = f"paper/{e.name}" if overridden or e.name == "E_T" else "S/uniform/two-sided/rad_M"
            out[key] = (evaluate(e.probability, v), not overridden)
        else:
            with np.errstate(over="ignore"):   # its Hoeffding tails (at t = Delta_R/4, no cap grid) and E_R
                out[e.name if e.name == "E_R" else f"paper/{e.name}"] = (evaluate(e.probability, v), False)
    return out


def _candidates(setup: Setup, level: float, inputs: VariantInputs, scale) -> tuple[list, dict]:
    """Every route at levels times ``scale``, with its events: ``(candidates, event -> scales?)``.

    The paper's routes are re-levelled only when their costs are computed (no measured
    ``eps_M``/``eps_K`` given: a measured cost holds at its own level only).
    """
    fixed_paper = setup.eps_M is not None or setup.eps_K is not None
    scaled = dataclasses.replace(setup, delta=np.asarray(setup.delta, dtype=np.float64) * scale,
                                 delta_prime=np.asarray(setup.delta_prime, dtype=np.float64) * scale)
    paper = evaluate_routes(setup if fixed_paper else scaled, level, validate=False)
    v = {**(setup if fixed_paper else scaled).values(), "eps_M": paper.eps_M, "eps_K": paper.eps_K}
    candidates, linear = [], {}
    for name, (route, _) in PAPER_ROUTES.items():
        events = _paper_events(setup if fixed_paper else scaled, v, route)
        linear.update({k: lin for k, (_, lin) in events.items()})
        candidates.append(RouteCandidate(name, getattr(paper, route), {k: p for k, (p, _) in events.items()}))
    results, _ = _evaluate_all(scaled, level, inputs.scaled(scale))
    for name, r in results.items():
        events = {}
        for e in var.VARIANTS[name].events:
            key = event_key(e)
            events[key] = r.levels[e.name]
            linear[key] = isinstance(e.probability, sp.Symbol) and e.probability.name in _LEVELS
        if r.route == "population" and setup.delta_R_failure is not None:
            events["E_R"], linear["E_R"] = np.asarray(setup.delta_R_failure, dtype=np.float64), False
        candidates.append(RouteCandidate(name, r, events))
    return candidates, linear


def _split(candidates, linear) -> tuple[dict, dict]:
    """``(parts, route_fixed)`` of :func:`bounds.route_choice.level_scale` at scale 1."""
    parts, route_fixed = {}, {}
    for c in candidates:
        own, levels = 0.0, 0.0
        for key, p in c.events.items():
            p = np.asarray(p, dtype=np.float64)
            parts.setdefault(key, []).append((c.name, 0.0, p) if linear[key] else (c.name, p, 0.0))
            own, levels = (own, levels + p) if linear[key] else (own + p, levels)
        # a route's own failure beyond its events' (Theorem 2's "delta + 2" when Delta_R <= 0) is fixed too
        route_fixed[c.name] = np.maximum(own, np.asarray(c.result.failure_probability, dtype=np.float64) - levels)
    return parts, route_fixed


def any_with_variants(setup: Setup, level: float, inputs: VariantInputs | None = None) -> AnyRouteResult:
    """"Some route certifies", over the paper's two routes and every variant whose inputs are given.

    The one union mechanism (:func:`bounds.route_choice.union_of_routes`): every level a
    route spends (``delta``, ``delta'``, the tails' levels, ``delta_mc``) is multiplied by
    one factor ``c`` in ``(0, 1]`` fixed before the data (:func:`bounds.route_choice.level_scale`:
    from the levels, ``Delta_R``, ``K``, ``B``, ``n_grid`` and ``delta_R_failure`` only), so
    that the union of the distinct failure events of the routes taking part -- the same
    event shared by several routes (the two-sided ``E_S`` of the paper and of the direct
    variants, the tails of one function at one level, ``E_MC``, ``E_R``) counted once -- is
    at most ``level``; whichever route is picked after seeing the data, the claim "some
    route certifies" then fails with at most that probability.

    Example:
        >>> st = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085,
        ...            M=2e5, K=1e5, delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5,
        ...            family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
        >>> a = any_with_variants(st, 0.1)
        >>> a.method, len(a.included), bool(float(a.failure_probability) <= 0.1)
        ('scaled_union', 4, True)
    """
    inputs = VariantInputs() if inputs is None else inputs
    candidates, linear = _candidates(setup, level, inputs, 1.0)
    scale, included = level_scale(*_split(candidates, linear), level)
    for _ in range(4):   # the float union may round above the level: lower c by a few ulps there
        candidates, _ = _candidates(setup, level, inputs, scale)
        out = union_of_routes(candidates, level, method="scaled_union", included=included, scale=scale)
        over = np.asarray(out.failure_probability) > level
        if not np.any(over):
            return out
        scale = np.where(over, scale * (1 - 4 * np.finfo(float).eps), scale)
    return out


def _chosen(inputs: VariantInputs, results: Mapping, paper) -> RouteResult | None:
    if inputs.use is None:
        return None
    if inputs.use in PAPER_ROUTES:
        return getattr(paper, PAPER_ROUTES[inputs.use][0])
    if inputs.use not in results:
        raise InputError("variants.use", f"a route whose inputs are given, one of {list(PAPER_ROUTES) + list(results)}",
                         inputs.use)
    return results[inputs.use]


def evaluate_variants(setup: Setup, level: float = 0.05, inputs: VariantInputs | None = None, *,
                      validate: bool = True, any_route: bool = True) -> VariantsReport:
    """Every THEORY §6 variant whose inputs are given, on ``setup`` at failure ``level``.

    Args:
        setup: a :class:`~bounds.routes.Setup` (fields may be numpy arrays).
        level: the largest acceptable failure probability, in (0, 1].
        inputs: variances, empirical Rademacher value, levels, ``use`` (:class:`VariantInputs`).
        validate: check every value first.
        any_route: also evaluate "some route certifies" (:func:`any_with_variants`).

    Returns:
        A :class:`VariantsReport`: ``variants`` keyed by name (e.g.
        ``population_tight_hoeffding``), each a :class:`VariantResult`; ``any_route``;
        ``chosen`` (the result of ``inputs.use``).

    Raises:
        InputError: a value is outside its allowed range (the key is named).

    Example:
        >>> st = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085,
        ...            M=2e5, K=1e5, delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5,
        ...            family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
        >>> rep = evaluate_variants(st, level=0.1)
        >>> sorted(rep.variants), round(float(rep.variants["direct_tight_hoeffding"].bound), 6)
        (['direct_tight_hoeffding', 'population_tight_hoeffding'], 0.744374)
    """
    level = LEVEL.check("level", level)
    inputs = VariantInputs() if inputs is None else inputs
    if validate:
        setup.validate()
        inputs.validate(setup)
    results, skipped = _evaluate_all(setup, level, inputs)
    paper = evaluate_routes(setup, level, validate=False)
    chosen = _chosen(inputs, results, paper)
    choice = any_with_variants(setup, level, inputs) if any_route else None
    return VariantsReport(level, results, skipped, paper_terms(setup, paper.eps_M, paper.eps_K),
                          _notes(setup, skipped, choice), any_route=choice, use=inputs.use, chosen=chosen)


def _notes(setup: Setup, skipped: Mapping[str, str], choice: AnyRouteResult | None) -> tuple[str, ...]:
    notes = ["variants (THEORY §6) are this project's Choice, not Paper A's statements: one-function tails for "
             "premises about a function independent of the sample (f~_pop on S; f_new, f_old, f~_S on T), a "
             "supremum only for f_new / f~_S on S.",
             "assumption of the population variants: f_old and f~_pop are fixed before S is drawn (reference trained "
             "on its own sample; G and beta estimated on an independent sample); otherwise use a direct variant.",
             "each route's 'certified' is that route's own statement, valid only for a route fixed before the data "
             "([variants] use = \"<route>\"); picking whichever certifies after seeing the data is the 'any route' "
             "claim: every route's levels times one factor fixed before the data, so that the union of the distinct "
             "events of all routes (an event shared by several routes counted once) is at most the level.",
             "variants' min_M/min_K scale every cost on S (on T) as 1/sqrt(n) from its value here (exact for "
             "Hoeffding and closed-form terms, approximate for Bernstein and the empirical Rademacher term)."]
    if np.any(np.asarray(setup.n_grid) > 1):
        notes.append("cap grid: every event about a function that depends on the cap (the uniform term; f~_pop on "
                     "S; f_new and f~_S on T) is paid over the n_grid caps.")
    notes += [ERM_SUBSTITUTION_NOTE] if setup.delta_erm_S is None else []   # stated, as bounds.routes does
    if skipped:
        notes.append("skipped variants: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    return tuple(notes)
