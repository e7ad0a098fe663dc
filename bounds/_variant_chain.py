"""Evaluating one THEORY §6 variant chain (**Choice**): its values, bound, terms and sample sizes.

The machinery under :mod:`bounds.variant_routes` (which chooses among routes and reports them):
:func:`variant_values` fills a variant's inputs, :func:`evaluate_chain` evaluates any chain
theorem into a :class:`VariantResult` (the fields of :class:`bounds.routes.RouteResult` plus
``terms``, ``levels``, ``origin``, ``values``).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds import variants as var
from bounds._route_terms import bound_terms, slack_events, terms_to_dicts
from bounds._statement import evaluate
from bounds._variant_inputs import VARIANCE_KEYS, VariantInputs, given_levels
from bounds.families import RESIDUAL_FAMILIES
from bounds.generalisation import jensen_readout_expression, rad_vec_closed_form
from bounds.route_choice import AnyRouteResult
from bounds.routes._paper import RouteResult, Setup
from bounds.routes._route import LiveMapping, paper_rows
from plumbing.io import to_plain

__all__ = ["PAPER_ROUTES", "VariantResult", "VariantsReport", "evaluate_chain", "variant_values"]

#: The paper's routes, as ``use`` and ``any_route`` name them: ``{row: (route, statement)}``, a live view of the
#: route registry's ``paper`` group (:func:`bounds.routes._route.paper_rows`).
PAPER_ROUTES = LiveMapping(paper_rows)


# ---------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True)
class VariantResult(RouteResult):
    """A :class:`~bounds.routes.RouteResult` of one variant, with its terms and event levels.

    ``terms``: the bound as ``L_test_old`` + gains (negative) + costs (positive), each a
    dict ``term, role, value`` (and ``event``, ``events``, ``level`` for a cost, see
    :func:`~bounds._route_terms.bound_terms`); ``levels``: every event's probability.
    """

    terms: tuple = ()
    levels: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    origin: str = var.ORIGIN
    #: every symbol value the chain was evaluated at (the tails' slacks included); not in
    #: :meth:`to_dict` -- studies that check the chain's premises read it (e.g. validity).
    values: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict:
        out = RouteResult.to_dict(self)
        out.update(origin=self.origin, terms=terms_to_dicts(self.terms), levels=to_plain(dict(self.levels)))
        return out


@dataclasses.dataclass(frozen=True)
class VariantsReport:
    """Every evaluable variant on one setup, the skipped ones, the paper routes' terms, and the choice.

    ``any_route``: "some route certifies" (:func:`any_with_variants`);
    ``use``/``chosen``: the route fixed before the data and its result (``None`` if not set).
    """

    level: float
    variants: Mapping[str, VariantResult]
    skipped: Mapping[str, str]
    paper_terms: Mapping[str, tuple]
    notes: tuple[str, ...] = ()
    any_route: AnyRouteResult | None = None
    use: str | None = None
    chosen: RouteResult | None = None

    def to_dict(self) -> dict:
        chosen = None if self.chosen is None else {"name": self.use, **self.chosen.to_dict()}
        paper = {k: terms_to_dicts(v) for k, v in self.paper_terms.items()}
        return {"level": self.level, "routes": {k: r.to_dict() for k, r in self.variants.items()},
                "skipped": dict(self.skipped), "paper_terms": paper,
                "notes": list(self.notes), "any_route": None if self.any_route is None else self.any_route.to_dict(),
                "use": chosen}


# ---------------------------------------------------------------------------- values
def _fit(v: dict, key: str, total: sp.Expr, target: np.ndarray, steps: int = 16) -> None:
    """Lower ``v[key]`` by ulps of ``target`` until the float value of ``total`` is at most ``target``."""
    for j in range(steps):
        over = evaluate(total, v) > target
        if not np.any(over):
            return
        v[key] = np.where(over, v[key] - np.spacing(target) * (j + 1), v[key])


def _empirical_values(v: dict, setup: Setup, inputs: VariantInputs) -> None:
    dmc = np.asarray(inputs.delta_mc, dtype=np.float64)
    v.update(delta_mc=dmc, delta=v["delta"] - dmc, rad_S_mc=np.asarray(inputs.rad_hat, dtype=np.float64),
             rad_S_mc_err=inputs.mc_error(setup, dmc))
    v["rad_S_jensen"] = (np.float64(np.inf) if inputs.phi_sq_sum is None
                         else evaluate(jensen_readout_expression(), {**v, "phi_sq_sum": inputs.phi_sq_sum}))
    _fit(v, "delta", s.delta + var.delta_mc, np.asarray(setup.delta, dtype=np.float64))


def variant_values(setup: Setup, inputs: VariantInputs, route: str, uniform: str, level: float) -> dict:
    """Every symbol value a variant of ``route`` needs (before its tails are evaluated).

    Levels follow :mod:`bounds._variant_inputs`; ``delta`` is ``delta - delta_mc`` when
    ``uniform`` is "empirical". With every tail level at its default, the float sum of the
    levels (the variant's failure probability, without ``delta_R_failure``) is at most
    ``delta + delta'``. Used by :func:`evaluate_variants` and by studies that evaluate a
    chain of their own (e.g. a deliberately wrong one, to show a test has power).
    """
    v = {**setup.values(), "level": np.float64(level)}
    v["rad_M"] = evaluate(rad_vec_closed_form(setup.family, s.M), v)
    levels = inputs.levels(route, setup)
    v.update(levels)
    last = None if any(x is not None for x in given_levels(inputs, route).values()) else list(levels)[-1]
    v.update({sym: np.asarray(inputs.get(key), dtype=np.float64)
              for key, (sym, _) in VARIANCE_KEYS.items() if inputs.get(key) is not None})
    if uniform == "empirical":
        _empirical_values(v, setup, inputs)
    if route == "direct" and setup.delta_erm_S is not None:   # else delta_erm stands in: ERM_SUBSTITUTION_NOTE
        v["delta_erm"] = np.asarray(setup.delta_erm_S, dtype=np.float64)
    if last is not None:
        target = np.asarray(setup.delta, dtype=np.float64) + np.asarray(setup.delta_prime, dtype=np.float64)
        theorem = var.VARIANTS[var.variant_name(route, "hoeffding", uniform)]
        _fit(v, last, theorem.failure_probability, target)
    return v


# ---------------------------------------------------------------------------- one chain
def _check_costs(theorem, v: dict) -> None:
    """Every cost of the bound is paid by an event, and is a tail slack or has a value."""
    payers, tails = slack_events(theorem), {e.tail.symbol for e in theorem.events if e.tail is not None}
    bad = []
    for term in sp.Add.make_args(sp.expand(theorem.bound)):
        coeff, rest = term.as_coeff_Mul()
        if term == s.L_test_old or coeff < 0:
            continue
        if rest not in payers or (rest not in tails and not {x.name for x in rest.free_symbols} <= set(v)):
            bad.append(str(term))
    if bad:
        raise ValueError(f"theorem {theorem.name!r}: costs {bad} are not the slack of an event with a Tail record "
                         "(evaluate_chain needs every cost to be one); use bounds.routes for the paper's chains.")


def evaluate_chain(theorem, route: str, v: dict) -> VariantResult:
    """Evaluate a chain whose costs are slacks of events with a :class:`~bounds._statement.Tail`.

    Args:
        theorem: a variant of :mod:`bounds.variants` (or a transformed one).
        route: "population" (adds ``delta_R_failure``) or "direct".
        v: symbol values (:func:`variant_values`), updated with the tails' values.

    Raises:
        ValueError: a cost of the bound is not the slack of an event with a tail record.
    """
    if route not in ("population", "direct"):
        raise ValueError(f"route == {route!r}, must be one of ['population', 'direct'].")
    _check_costs(theorem, v)
    needed = theorem.bound.free_symbols
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for ev in theorem.events:   # the slack values, from the tails' formulas
            if ev.tail is not None and ev.tail.symbol in needed:
                v[ev.tail.symbol.name] = evaluate(ev.tail.deviation, v)
        bound = evaluate(theorem.bound, v)
        fail = evaluate(theorem.failure_probability, v) + (v["delta_R_failure"] if route == "population" else 0.0)
    terms = bound_terms(theorem, v)
    shape = np.broadcast_shapes(*(np.shape(x) for x in v.values()))
    bound, fail = (np.broadcast_to(np.asarray(a, dtype=np.float64), shape) for a in (bound, fail))
    return _result(theorem, route, bound, fail, v, terms, shape)


def _sample_sizes(theorem, route, v, terms, ok, improvement):
    """``min_M``, ``min_K``: every cost on ``S`` (on ``T``) scaled as ``1/sqrt(n)``, the others fixed."""
    sample = {e.name: e.sample for e in theorem.events}
    cost = {"S": 0.0, "T": 0.0}
    for t in terms:   # every cost of a variant is the slack of an event on S or on T
        if t["role"] == "cost":
            cost[sample[t["event"]]] = cost[sample[t["event"]]] + t["value"]
    with np.errstate(divide="ignore", invalid="ignore"):   # Bernstein at n = 1: infinite costs
        avail = improvement + cost["S"] + cost["T"]
        min_M = np.where(ok & (avail - cost["T"] > 0), v["M"] * (cost["S"] / (avail - cost["T"])) ** 2, np.nan)
        min_K = np.where(ok & (avail - cost["S"] > 0), v["K"] * (cost["T"] / (avail - cost["S"])) ** 2, np.nan)
    return min_M, min_K


def _result(theorem, route, bound, fail, v, terms, shape) -> VariantResult:
    improvement = v["L_test_old"] - bound
    ok = fail <= v["level"]
    min_M, min_K = _sample_sizes(theorem, route, v, terms, ok, improvement)
    levels = {e.name: evaluate(e.probability, v) for e in theorem.events}
    return VariantResult(
        route=route, theorem=theorem.name, bound=bound, failure_probability=fail, improvement=improvement,
        certified=(improvement > 0) & ok, margin_shortfall=np.maximum(0.0, -improvement),
        failure_excess=np.maximum(0.0, fail - v["level"]), vacuous=fail >= 1.0,
        min_M=np.broadcast_to(min_M, shape), min_K=np.broadcast_to(min_K, shape), terms=terms, levels=levels,
        values=dict(v))


# ---------------------------------------------------------------------------- every route
def _evaluate_all(setup: Setup, level: float, inputs: VariantInputs) -> tuple[dict, dict]:
    results, skipped = {}, {}
    for name, (route, tail, uniform) in var.VARIANT_SPECS.items():
        missing = inputs.missing(route, tail, uniform)
        if uniform == "empirical" and not RESIDUAL_FAMILIES[setup.family].empirical_rademacher:
            ok = [n for n, f in RESIDUAL_FAMILIES.items() if f.empirical_rademacher]
            missing.append(f"block.family one of {ok} (the empirical term is their sign Monte Carlo's, THEORY §4)")
        if missing:
            skipped[name] = "needs " + ", ".join(missing)
            continue
        results[name] = evaluate_chain(var.VARIANTS[name], route, variant_values(setup, inputs, route, uniform, level))
    return results, skipped
