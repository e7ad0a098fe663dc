"""A route's bound split into its terms: the reference loss, each gain, each cost and its event.

Read from the theorem objects: a cost ``c * x`` is attributed to the event(s) whose premises
use ``x`` as their slack -- the symbol of the event's :class:`~bounds._statement.Tail`, the
``t`` of a Hoeffding record, or the non-risk symbol of the premises' slack (``eps_M`` on
``E_S``). A slack paid once by two events jointly (the empirical uniform term, which holds
outside ``E_S`` and ``E_MC``) is one cost with both events and the sum of their levels; a
slack that two events pay separately (``t`` on ``H_new`` and on ``H_old`` in Theorem 2)
is split into one cost per event. The paper's population route is decomposed at
``t = Delta_R / 4`` from :data:`~bounds.theorems.THEOREM_2_GENERAL`, so that its two
Hoeffding costs ``Delta_R/4`` are visible next to the full gain ``Delta_R``.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds import dependence
from plumbing.io import to_plain
from bounds._statement import evaluate
from bounds.theorems import THEOREM_2_GENERAL, THEOREM_3

_ORDER = {"reference": 0, "gain": 1, "cost": 2}


def _premise_slacks(theorem, ev) -> set[sp.Symbol]:
    """Non-risk symbols of the slacks of the premises on ``ev`` (``eps_M`` for ``R <= R_S + eps_M``)."""
    out = set()
    for p in theorem.premises:
        if p.event == ev.name and isinstance(p.relation, (sp.LessThan, sp.GreaterThan)):
            out |= {x for x in (p.relation.lhs - p.relation.rhs).free_symbols if x.name not in dependence.RISK_TERMS}
    return out


def slack_events(theorem) -> dict[sp.Symbol, tuple[str, tuple]]:
    """Slack symbol -> ``("joint" | "split", events)``: who pays for each cost symbol of the bound."""
    out: dict[sp.Symbol, tuple[str, tuple]] = {}
    for ev in theorem.events:
        if ev.tail is not None and ev.tail.kind == "monte_carlo":
            uniform = [e for e in theorem.events if e.tail is not None and e.tail.kind == "uniform_empirical"
                       and e.tail.rademacher == ev.tail.rademacher]
            out[ev.tail.symbol] = ("joint", tuple(uniform) + (ev,))
            continue
        if ev.tail is not None and ev.tail.kind == "uniform_empirical":
            continue   # its slack (the exact cost) is bounded by the computed one on E_MC
        symbols = {ev.tail.symbol} if ev.tail is not None else (
            {ev.hoeffding.t} if ev.hoeffding is not None else _premise_slacks(theorem, ev))
        for x in symbols:
            kind, evs = out.get(x, ("split", ()))
            out[x] = (kind, evs + (ev,))
    return out


def _entry(term, role, value, events=(), values=None) -> dict:
    entry = {"term": str(term), "role": role, "value": value}
    if events:
        entry.update(event=events[0].name, events=[e.name for e in events],
                     level=sum(evaluate(e.probability, values) for e in events))
    return entry


def bound_terms(theorem, values: Mapping[str, object]) -> tuple[dict, ...]:
    """The bound of ``theorem`` split into ``L_test_old``, gains and costs, evaluated at ``values``.

    Each entry: ``term`` (its sympy text), ``role`` (reference / gain / cost), ``value``;
    a cost also names its ``event`` (the first), ``events`` (all that pay it) and their
    total ``level``.

    Example:
        >>> from bounds.theorems import THEOREM_3
        >>> vals = dict(L_test_old=1.0, delta_test_R=0.2, delta_erm=0.1, eps_M=0.01, eps_K=0.02, delta=0.05,
        ...             delta_prime=0.05)
        >>> for t in bound_terms(THEOREM_3, vals):
        ...     print(t["term"], t["role"], round(float(t["value"]), 6), t.get("event"))
        L_test_old reference 1.0 None
        -delta_erm gain -0.1 None
        -delta_test_R gain -0.2 None
        2*eps_K cost 0.04 E_T
        2*eps_M cost 0.02 E_S
    """
    payers = slack_events(theorem)
    out = []
    for term in sp.Add.make_args(sp.expand(theorem.bound)):
        coeff, rest = term.as_coeff_Mul()
        role = "reference" if term == s.L_test_old else ("gain" if coeff < 0 else "cost")
        kind, events = payers.get(rest, ("split", ())) if role == "cost" else ("split", ())
        if kind == "split" and len(events) > 1 and coeff == len(events):   # one slack per event
            out += [_entry(rest, role, evaluate(rest, values), (e,), values) for e in events]
        else:
            out.append(_entry(term, role, evaluate(term, values), events, values))
    return tuple(sorted(out, key=lambda t: (_ORDER[t["role"]], t["term"].lstrip("-"), t.get("event", ""))))


def paper_terms(setup, eps_M, eps_K) -> dict[str, tuple]:
    """Terms of the paper's two routes: Theorem 2 at ``t = Delta_R/4`` (its Hoeffding costs shown), Theorem 3."""
    v = {**setup.values(), "eps_M": eps_M, "eps_K": eps_K}
    v["t"] = v["delta_R"] / 4
    v_dir = dict(v)
    if setup.delta_erm_S is not None:
        v_dir["delta_erm"] = np.asarray(setup.delta_erm_S, dtype=np.float64)
    return {"population_route": bound_terms(THEOREM_2_GENERAL, v), "direct_route": bound_terms(THEOREM_3, v_dir)}


def terms_to_dicts(terms) -> list[dict]:
    """JSON-ready copies of :func:`bound_terms` entries (numbers as Python floats, NaN/inf as ``None``)."""
    return [to_plain(t) for t in terms]
