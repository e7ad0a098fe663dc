"""Routes as data for the validity study: a route is a theorem object plus how its symbols bind.

The study never re-types a bound: each route's conclusion, premises and failure events are
read from its :class:`bounds.Theorem`, evaluated at a draw's measured values. A
:class:`RouteSpec` says which measured value each symbol of the chain stands for (``R_jump``
is ``R(f~_pop)`` for the population route and ``R(f~_S)`` for the direct one). A new
route or variant (e.g. a tighter certificate) plugs in by registering a :class:`bounds.routes.Route`
(:func:`bounds.routes.register_route`) whose name is a route of the draw records: :data:`ROUTE_SPECS` is a
live view of the route registry.

Exact checks of events (:attr:`RouteSpec.exact`): where the record holds the supremum of the
deviation over the whole class (exact class, THEORY §4), an event ``E_S``/``E_T`` fails iff
that supremum (two-sided, or ``sup (R - R_S)`` for a one-sided event) exceeds its threshold;
otherwise it fails iff one of the premises living on it is violated at the functions the
chains use -- a necessary condition only.

This project's THEORY §6 variants (:data:`VARIANT_ROUTE_SPECS`, appended to
:data:`ROUTE_SPECS`) are routes of their own: each variant's events are keyed
``<variant>/<event>`` and checked at the variant's own levels; a variant's symbol values (its
tails, levels, uniform term) are read from ``record["routes"][<variant>]["values"]``
(:func:`spec_values`). Population variants are checked in their estimated-``Delta_R`` form
(the confidence premise on ``E_R``), as the run evaluates them.
"""
from __future__ import annotations

from typing import Mapping

import sympy as sp

from bounds._statement import evaluate
from bounds.routes import EXACT_EVENTS, Route, RouteView

__all__ = ["EXACT_EVENTS", "LOCALISED_ROUTE_SPECS", "PAPER_ROUTE_SPECS", "ROUTE_SPECS", "UNIFORM_EVENTS", "VARIANT_ROUTE_SPECS", "RouteSpec",
           "applies", "base_event", "conclusion_holds", "event_failures", "event_testability", "premise_allowances", "premise_slacks",
           "spec_values", "stated_event_probabilities", "symbol_values", "tolerance"]

#: A route of the validity study is a :class:`bounds.routes.Route` (the two former ``RouteSpec`` classes are one:
#: this name is an alias, its fields and their order kept).
RouteSpec = Route

#: Paper A's routes (the registry's ``paper`` group: ``population``, ``direct``, ``population_risk``).
PAPER_ROUTE_SPECS: RouteView = RouteView(lambda r: r.validity and r.group == "paper")
#: This project's THEORY §6 variants, one route each (the run stores them under their names).
VARIANT_ROUTE_SPECS: RouteView = RouteView(lambda r: r.validity and r.group == "variants")
#: This project's THEORY §6b localised certificates, one route each (:mod:`numerics.studies.validity._localised`).
LOCALISED_ROUTE_SPECS: RouteView = RouteView(lambda r: r.validity and r.group == "localised")
#: Every route of the study: a live view of the route registry :data:`bounds.routes.REGISTRY` (Paper A's, then
#: the variants, then the localised routes, then any registered route; :func:`bounds.routes.register_route` adds one).
ROUTE_SPECS: RouteView = RouteView(lambda r: r.validity)

#: Events about a supremum over the class (``E_U``: over the localised ball); every other event is about
#: one function fixed before its sample (a one-function tail, the Delta_R confidence bound), so its premise is the event.
UNIFORM_EVENTS = ("E_S", "E_T", "E_U")


def base_event(name: str) -> str:
    """``"E_S"`` for ``"population_tight_bernstein/E_S"`` (the event without its route prefix)."""
    return name.rsplit("/", 1)[-1]


def spec_values(spec: RouteSpec, record: Mapping) -> dict:
    """The measured values of a draw for ``spec``: the record's, and the variant's own chain values."""
    own = (record.get("routes", {}).get(spec.name) or {}).get("values")
    return {**record["values"], **own} if own else dict(record["values"])


#: Relative tolerance of "violated": float64 rounding of risks near 1 is ~1e-15.
TOL = 1e-12


def symbol_values(spec: RouteSpec, values: Mapping[str, float]) -> dict:
    """Symbol name -> value of a draw for ``spec``'s chain (``values`` from :func:`spec_values`)."""
    out = dict(values)
    out.update({sym: values[name] for sym, name in spec.binding.items()})
    return out


def _gap(rel, vals) -> float:
    """``rhs - lhs`` of ``lhs <= rhs`` (``lhs - rhs`` of ``>=``); for ``==`` minus ``|lhs - rhs|``."""
    if isinstance(rel, (sp.LessThan, sp.StrictLessThan)):
        return float(evaluate(rel.rhs - rel.lhs, vals))
    if isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        return float(evaluate(rel.lhs - rel.rhs, vals))
    return -abs(float(evaluate(rel.lhs - rel.rhs, vals)))


#: Symbols whose value is the truth's: for a sampled task (no exact teacher) a Monte-Carlo estimate whose
#: error ``truth_mc_tolerance`` (:func:`numerics.sampled_task.estimate_tolerance`) a violation must exceed.
_TRUTH_SYMBOLS = frozenset(("R_old", "R_new", "R_jump", "D_new", "D_pop"))


def tolerance(vals: Mapping, rel, binding: Mapping[str, str] | None = None) -> float:
    """How far below 0 the gap of ``rel`` must go to count as violated: float rounding, and on a sampled
    task the truth's Monte-Carlo error -- paired where the record holds ``truth_cov``
    (:func:`numerics.studies.validity._testable.relation_tolerance`), else ``truth_mc_tolerance``."""
    from numerics.studies.validity._testable import relation_tolerance

    scale = max([1.0] + [abs(float(vals[s.name])) for s in rel.free_symbols if s.name in vals])
    tol = TOL * scale
    if ("truth_mc_tolerance" in vals or "truth_cov" in vals) and any(s.name in _TRUTH_SYMBOLS for s in rel.free_symbols):
        tol = max(tol, relation_tolerance(rel, vals, binding))
    return tol


def _violated(gap: float, vals: Mapping, rel, binding: Mapping[str, str] | None = None) -> bool:
    return gap < -tolerance(vals, rel, binding)


def conclusion_holds(spec: RouteSpec, values: Mapping[str, float]) -> bool:
    """Whether the route's conclusion holds at a draw (its bound was not exceeded)."""
    vals = symbol_values(spec, values)
    return not _violated(_gap(spec.theorem.conclusion, vals), vals, spec.theorem.conclusion, spec.binding)


def premise_slacks(spec: RouteSpec, values: Mapping[str, float], overrides: Mapping | None = None) -> dict:
    """``{premise: (event, slack)}`` for the premises on an event (``slack < 0``: violated)."""
    vals = {**symbol_values(spec, values), **(overrides or {})}
    return {p.name: (p.event, _gap(p.relation, vals)) for p in spec.theorem.premises if p.event is not None}


#: The risk symbols of the chains: a premise's *allowance* is its slack with them set to 0 (the localised
#: chains' risk differences included: their premises' allowances are ``t_T_d`` and ``U_S``).
_RISK_NAMES = ("L_test_old", "L_test_new", "L_test_jump", "R_old", "R_new", "R_jump", "RS_new", "RS_jump",
               "D_new", "DT_new", "DS_new", "D_pop", "DS_pop")


def premise_allowances(spec: RouteSpec, values: Mapping[str, float]) -> dict:
    """``{premise: allowance}``: what a premise ``A <= B + t`` allows the deviation ``A - B`` (``t``).

    Read from the relation itself (its slack with every risk set to 0); ``None`` where
    that is not a positive deviation budget (e.g. the ``Delta_R`` confidence premise).
    """
    vals = {**symbol_values(spec, values), **{k: 0.0 for k in _RISK_NAMES}}
    out = {}
    for p in spec.theorem.premises:
        if p.event is None:
            continue
        a = _gap(p.relation, vals)
        out[p.name] = a if a > 0 else None
    return out


def applies(spec: RouteSpec, values: Mapping[str, float]) -> bool:
    """Whether the route's side conditions hold at a draw (e.g. ``Delta_R > 0`` for Theorem 2);
    where they do not, the theorem claims nothing and its events are stated with probability 1."""
    vals = symbol_values(spec, values)
    for cond in spec.theorem.side_conditions:
        if cond is sp.true or not {x.name for x in cond.free_symbols} <= set(vals):
            continue
        if not bool(cond.subs({x: vals[x.name] for x in cond.free_symbols})):
            return False
    return True


def stated_event_probabilities(spec: RouteSpec, values: Mapping[str, float]) -> dict:
    """``{event: stated probability}`` of the route's events at a draw (``None``: the route does
    not apply there, so it states nothing)."""
    vals = symbol_values(spec, values)
    if not applies(spec, values):
        return {e.name: None for e in spec.theorem.events}
    return {e.name: min(1.0, float(evaluate(e.probability, vals))) for e in spec.theorem.events}


def _exact_failed(spec: RouteSpec, event: str, record: Mapping, vals: Mapping) -> bool | None:
    """The event checked over the class (``None``: the record has no exact entry for it)."""
    key, side, threshold = spec.exact[event]
    if side == "bracket":       # E_MC: failed unless the estimate used is >= the sure upper bound of rad_S
        if "rad_S_upper" not in vals:
            return None
        return vals["rad_S_upper"] > vals[threshold] * (1 + TOL)
    dev = (record.get("deviations") or {}).get(key)
    if dev is None or threshold not in vals:
        return None
    return dev[side] > vals[threshold] * (1 + TOL)


def event_failures(record: Mapping, specs=ROUTE_SPECS) -> dict:
    """``{event: {"failed", "exact", "stated", "claimed"}}`` at one draw, over every route's chain.

    An event with an exact deviation in the record fails iff that supremum exceeds its
    threshold; otherwise iff some premise on it is violated (at the chains' functions).
    ``claimed`` is False when no route using the event applies at this draw (e.g.
    ``Delta_R <= 0`` for the Hoeffding events of Theorem 2): nothing is stated then, and
    the draw does not count for that event. Variants' events are keyed ``<variant>/<event>``.
    """
    out: dict[str, dict] = {}
    for spec in specs:
        if spec.name not in record.get("routes", {}):
            continue
        values = spec_values(spec, record)
        vals = symbol_values(spec, values)
        stated = stated_event_probabilities(spec, values)
        rels = {p.name: p.relation for p in spec.theorem.premises}
        for name, (event, gap) in premise_slacks(spec, values).items():
            key = spec.prefix + event
            e = out.setdefault(key, {"failed": False, "exact": event not in UNIFORM_EVENTS,
                                     "stated": 1.0, "at_functions_failed": False, "claimed": False})
            if stated[event] is not None:      # the smallest probability any applicable route states
                e["stated"], e["claimed"] = min(e["stated"], stated[event]), True
            if _violated(gap, vals, rels[name], spec.binding):
                e["at_functions_failed"] = e["failed"] = True
        for event in spec.exact:
            key = spec.prefix + event
            failed = _exact_failed(spec, event, record, vals) if key in out else None
            if failed is not None:
                out[key]["exact"], out[key]["failed"] = True, failed
    return out


def event_testability(record: Mapping, specs=ROUTE_SPECS) -> dict:
    """``{event: (tolerance, term)}`` at one draw (keys as :func:`event_failures`): the largest truth tolerance of
    the premises on the event and the smallest bound term they test (their allowance; for ``E_R`` the confidence
    width ``delta_R_hat - delta_R``; ``None`` where there is none). An event checked exactly over the class has
    the float tolerance only, its threshold as term (:mod:`numerics.studies.validity._testable`)."""
    out: dict[str, list] = {}
    for spec in specs:
        if spec.name not in record.get("routes", {}):
            continue
        values = spec_values(spec, record)
        vals = symbol_values(spec, values)
        allow = premise_allowances(spec, values)
        for p in spec.theorem.premises:
            if p.event is None:
                continue
            key = spec.prefix + p.event
            term = allow[p.name]
            if term is None and p.event == "E_R" and "delta_R_hat" in vals and "delta_R" in vals:
                term = float(vals["delta_R_hat"]) - float(vals["delta_R"])
            tol, t0 = tolerance(vals, p.relation, spec.binding), out.get(key)
            if t0 is None:
                out[key] = [tol, term]
            else:
                t0[0] = max(t0[0], tol)
                t0[1] = term if t0[1] is None else (t0[1] if term is None else min(t0[1], term))
        for event in spec.exact:
            key = spec.prefix + event
            if key in out and _exact_failed(spec, event, record, vals) is not None:
                threshold = spec.exact[event][2]
                out[key] = [TOL * max(1.0, abs(float(vals[threshold]))), float(vals[threshold])]
    return {k: (float(v[0]), None if v[1] is None else float(v[1])) for k, v in out.items()}
