"""Routes as data for the validity study: a route is a theorem object plus how its symbols bind.

The study never re-types a bound: each route's conclusion, premises and failure events are
read from its :class:`bounds.Theorem`, evaluated at a draw's measured values. A
:class:`RouteSpec` says which measured value each symbol of the chain stands for (``R_jump``
is ``R(f~_pop)`` for the population route and ``R(f~_S)`` for the direct one). A new
route or variant (e.g. a tighter certificate) plugs in by appending a spec to
:data:`ROUTE_SPECS` whose name is a route of the draw records.

Exact checks of events (:data:`EXACT_EVENTS`): where the record holds the supremum of the
deviation over the whole class (exact class, THEORY §4), an event ``E_S``/``E_T`` fails iff
that supremum exceeds its threshold; otherwise it fails iff one of the premises living on
it is violated at the functions the chains use -- a necessary condition only.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import sympy as sp

from bounds import THEOREM_2_ESTIMATED, THEOREM_3, THEOREM_POPULATION_RISK, Theorem
from bounds._statement import evaluate

__all__ = ["EXACT_EVENTS", "ROUTE_SPECS", "UNIFORM_EVENTS", "RouteSpec", "applies", "conclusion_holds",
           "premise_allowances", "event_failures", "premise_slacks",
           "stated_event_probabilities", "symbol_values"]

#: Measured values that every chain reads under the symbol's own name.
_COMMON = ("L_test_old", "L_test_new", "R_old", "R_new", "delta_R", "delta_test_R", "eps_M", "eps_K", "B", "M", "K",
           "delta", "delta_prime", "delta_R_failure")


@dataclasses.dataclass(frozen=True)
class RouteSpec:
    """A route of the validity study.

    Attributes:
        name: the key of the route in the draw records (``record["routes"][name]``).
        theorem: its statement (conclusion, premises, events, failure probability).
        binding: symbol name -> measured value name, beyond the symbols read as themselves.
        kind: ``"test"`` (a bound on ``L_test(f_new)``, part of ``routes.any``) or
            ``"population"`` (a bound on ``R(f_new)``).
    """

    name: str
    theorem: Theorem
    binding: Mapping[str, str]
    kind: str = "test"


ROUTE_SPECS: list[RouteSpec] = [
    RouteSpec("population", THEOREM_2_ESTIMATED,
              {"R_jump": "R_jump_pop", "RS_jump": "R_S_jump_pop", "RS_new": "R_S_new", "delta_erm": "delta_erm_pop"}),
    RouteSpec("direct", THEOREM_3,
              {"R_jump": "R_jump_S", "RS_jump": "R_S_jump_S", "RS_new": "R_S_new", "L_test_jump": "L_test_jump_S",
               "delta_erm": "delta_erm_S"}),
    RouteSpec("population_risk", THEOREM_POPULATION_RISK,
              {"R_jump": "R_jump_pop", "RS_jump": "R_S_jump_pop", "RS_new": "R_S_new", "delta_erm": "delta_erm_pop"},
              kind="population"),
]

#: event -> (the record's deviation entry, the threshold symbol): exact checks over the class.
EXACT_EVENTS: Mapping[str, tuple[str, str]] = {"E_S": ("E_S", "eps_M"), "E_T": ("E_T", "eps_K")}
#: Events about a supremum over the class; every other event is about one function fixed
#: before its sample (a Hoeffding tail, the Delta_R confidence bound), so its premise is the event.
UNIFORM_EVENTS = ("E_S", "E_T")

#: Relative tolerance of "violated": float64 rounding of risks near 1 is ~1e-15.
TOL = 1e-12


def symbol_values(spec: RouteSpec, values: Mapping[str, float]) -> dict:
    """Symbol name -> value of a draw for ``spec``'s chain."""
    out = {k: values[k] for k in _COMMON if k in values}
    out.update({sym: values[name] for sym, name in spec.binding.items()})
    return out


def _gap(rel, vals) -> float:
    """``rhs - lhs`` of ``lhs <= rhs`` (``lhs - rhs`` of ``>=``); for ``==`` minus ``|lhs - rhs|``."""
    if isinstance(rel, (sp.LessThan, sp.StrictLessThan)):
        return float(evaluate(rel.rhs - rel.lhs, vals))
    if isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        return float(evaluate(rel.lhs - rel.rhs, vals))
    return -abs(float(evaluate(rel.lhs - rel.rhs, vals)))


def _violated(gap: float, vals: Mapping, rel) -> bool:
    scale = max([1.0] + [abs(float(vals[s.name])) for s in rel.free_symbols if s.name in vals])
    return gap < -TOL * scale


def conclusion_holds(spec: RouteSpec, values: Mapping[str, float]) -> bool:
    """Whether the route's conclusion holds at a draw (its bound was not exceeded)."""
    vals = symbol_values(spec, values)
    return not _violated(_gap(spec.theorem.conclusion, vals), vals, spec.theorem.conclusion)


def premise_slacks(spec: RouteSpec, values: Mapping[str, float], overrides: Mapping | None = None) -> dict:
    """``{premise: (event, slack)}`` for the premises on an event (``slack < 0``: violated)."""
    vals = {**symbol_values(spec, values), **(overrides or {})}
    return {p.name: (p.event, _gap(p.relation, vals)) for p in spec.theorem.premises if p.event is not None}


#: The risk symbols of the chains: a premise's *allowance* is its slack with them set to 0.
_RISK_NAMES = ("L_test_old", "L_test_new", "L_test_jump", "R_old", "R_new", "R_jump", "RS_new", "RS_jump")


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


def event_failures(record: Mapping, specs=ROUTE_SPECS) -> dict:
    """``{event: {"failed", "exact", "stated", "claimed"}}`` at one draw, over every route's chain.

    An event with an exact deviation in the record fails iff that supremum exceeds its
    threshold; otherwise iff some premise on it is violated (at the chains' functions).
    ``claimed`` is False when no route using the event applies at this draw (e.g.
    ``Delta_R <= 0`` for the Hoeffding events of Theorem 2): nothing is stated then, and
    the draw does not count for that event.
    """
    values, devs = record["values"], record.get("deviations") or {}
    out: dict[str, dict] = {}
    for spec in specs:
        vals = symbol_values(spec, values)
        stated = stated_event_probabilities(spec, values)
        rels = {p.name: p.relation for p in spec.theorem.premises}
        for name, (event, gap) in premise_slacks(spec, values).items():
            e = out.setdefault(event, {"failed": False, "exact": event not in UNIFORM_EVENTS,
                                       "stated": 1.0, "at_functions_failed": False, "claimed": False})
            if stated[event] is not None:      # the smallest probability any applicable route states
                e["stated"], e["claimed"] = min(e["stated"], stated[event]), True
            if _violated(gap, vals, rels[name]):
                e["at_functions_failed"] = e["failed"] = True
    for event, (key, threshold) in EXACT_EVENTS.items():
        if event in out and key in devs:
            out[event]["exact"] = True
            out[event]["failed"] = devs[key]["sup"] > values[threshold] * (1 + TOL)
    return out
