"""Ledger checks of events that carry a :class:`bounds._statement.Tail` (THEORY §4, §6).

For the tighter variants (this project's **Choice**) each event records its kind (a
one-function Hoeffding or Bernstein tail, a uniform deviation over the capped class, or
the Monte-Carlo error of an empirical Rademacher value), its sample, the function(s) it
is about and the formula of its deviation. Two checks per event:

* ``ledger/tail/<event>`` -- the deviation is the right one for its kind, sample size and
  level, re-derived here independently of :mod:`bounds.variants`: Hoeffding
  ``copies exp(-2 n t^2/B^2) = P``; Maurer--Pontil's Thm 4 for values in ``[0, 1]``,
  rescaled to ``[0, B]``; McDiarmid for the uniform term (``sides`` directions, and the
  Bartlett--Mendelson ``3 B`` term as two McDiarmid events when empirical); the
  Monte-Carlo event replaces the exact Rademacher value by its estimate plus error and
  nothing else.
* ``ledger/dependence/<event>`` -- every premise on the event reads ``A <= B + t`` with ``A``,
  ``B`` the same function on the event's sample and on the population; a one-function
  tail must be about a single function that does NOT depend on that sample (the
  theorem's ``functions`` data); a one-sided event must be used in one direction only.

A failure comes with a witness point where the stated probability (or deviation)
differs from the derived one: for a one-function tail on a data-dependent function the
derived probability is the trivial 1; for a one-sided event used both ways, twice the
level (the union of the two one-sided events).
"""
from __future__ import annotations

import time

import sympy as sp

from bounds import _symbols as s
from bounds._statement import ONE_FUNCTION_KINDS
from proofs_check._ledger import _equal, _premise_slack_matches, witness
from proofs_check._results import Check

_SAMPLE_SIZE = {"S": s.M, "T": s.K}
_UNIFORM = ("uniform", "uniform_empirical")


def maurer_pontil_unit(variance: sp.Expr, n: sp.Expr, level: sp.Expr) -> sp.Expr:
    """Maurer--Pontil (2009) Thm 4 for i.i.d. values in ``[0, 1]``, one-sided at ``level``.

    ``sqrt(2 V ln(2/level) / n) + 7 ln(2/level) / (3 (n - 1))``.
    """
    return sp.sqrt(2 * variance * sp.log(2 / level) / n) + 7 * sp.log(2 / level) / (3 * (n - 1))


def _contraction(rademacher: sp.Expr) -> sp.Expr:
    """Symmetrisation (factor 2) and Maurer's vector contraction (``sqrt(2) L_loss L_top``), THEORY §4."""
    return 2 * sp.sqrt(2) * s.L_loss * s.L_top * rademacher


def _derived(theorem, ev):
    """``(stated, derived, what)`` for the event's tail; equal iff the deviation is right."""
    t, n = ev.tail, _SAMPLE_SIZE.get(ev.sample, ev.tail.n)
    if t.kind == "hoeffding":
        return ev.probability, t.copies * sp.exp(-2 * n * t.deviation**2 / s.B**2), "probability"
    if t.kind == "bernstein":
        ref = s.B * maurer_pontil_unit(t.variance / s.B**2, n, ev.probability / t.copies)
        return t.deviation, ref, "deviation"
    if t.kind in _UNIFORM:
        conf = sp.expand(t.deviation - _contraction(t.rademacher))
        if t.kind == "uniform":
            return ev.probability, t.sides * t.copies * sp.exp(-2 * n * conf**2 / s.B**2), "probability"
        return ev.probability, 2 * t.sides * t.copies * sp.exp(-2 * n * (conf / 3) ** 2 / s.B**2), "probability"
    uniform = [e for e in theorem.events if e.tail is not None and e.tail.kind == "uniform_empirical"
               and e.tail.rademacher == t.rademacher]
    if not uniform:
        return t.deviation, sp.nan, "deviation"
    return t.deviation, uniform[0].tail.deviation.subs(t.rademacher, t.estimate), "deviation"


def check_tail(theorem, ev) -> Check:
    """``ledger/tail/<event>``: the recorded deviation, sample size, range and level agree."""
    t0, name, t = time.perf_counter(), f"ledger/tail/{ev.name}", ev.tail
    problems = []
    if ev.sample in _SAMPLE_SIZE and sp.simplify(t.n - _SAMPLE_SIZE[ev.sample]) != 0:
        problems.append(f"sample size {t.n} is not the size {_SAMPLE_SIZE[ev.sample]} of {ev.sample}")
    if sp.simplify(t.range - s.B) != 0:
        problems.append(f"range {t.range} is not the loss bound B")
    if not _equal(t.level, ev.probability):
        problems.append(f"tail level {t.level} != event probability {ev.probability}")
    stated, derived, what = _derived(theorem, ev)
    if t.kind == "monte_carlo":
        problems += _mc_premises(theorem, ev)
    if derived is sp.nan:
        problems.append("no empirical uniform event with the same Rademacher symbol")
    elif not _equal(stated, derived):
        problems.append(f"stated {what} {stated} != derived {derived}")
    seconds = time.perf_counter() - t0
    if not problems:
        return Check(theorem.name, name, "PASS", "sympy", f"{t.kind} on {ev.sample}: {what} re-derived ({derived})",
                     seconds=seconds)
    w = None if derived is sp.nan else witness(stated, derived, theorem.side_conditions)
    return Check(theorem.name, name, "FAIL", "sympy", f"{t.kind}: " + "; ".join(problems), countermodel=w,
                 seconds=time.perf_counter() - t0)


def _mc_premises(theorem, ev) -> list[str]:
    """The Monte-Carlo event's premises read ``eps_star <= eps`` (exact cost below the computed one)."""
    stars = {e.tail.symbol for e in theorem.events if e.tail is not None and e.tail.kind == "uniform_empirical"}
    bad = [p.name for p in theorem.premises if p.event == ev.name and not (
        isinstance(p.relation, sp.LessThan) and p.relation.lhs in stars and p.relation.rhs == ev.tail.symbol)]
    return [f"premises {bad} do not read eps_star <= {ev.tail.symbol}"] if bad else []


def _premise_sides(theorem, ev, premise):
    """``(function, direction)`` of ``premise`` on ``ev``, or a string saying what is wrong."""
    if not _premise_slack_matches(premise, ev.tail.symbol):
        return f"premise {premise.name} does not read A <= B + {ev.tail.symbol}"
    rel = premise.relation
    lhs, rhs = (rel.lhs, rel.rhs) if isinstance(rel, (sp.LessThan, sp.StrictLessThan)) else (rel.rhs, rel.lhs)
    low = [x for x in sp.Add.make_args(sp.expand(rhs - ev.tail.symbol)) if isinstance(x, sp.Symbol)]
    risks = theorem.risk_map
    if not isinstance(lhs, sp.Symbol) or len(low) != 1 or lhs.name not in risks or low[0].name not in risks:
        return f"premise {premise.name}: risk symbols without function/sample data (risk_terms)"
    (f_a, w_a), (f_b, w_b) = risks[lhs.name], risks[low[0].name]
    if f_a != f_b or {w_a, w_b} != {ev.sample, "population"}:
        return (f"premise {premise.name} compares {f_a} on {w_a} with {f_b} on {w_b}, not one function on "
                f"{ev.sample} and on the population")
    return f_a, ("mean_minus_risk" if w_a == ev.sample else "risk_minus_mean")


def check_dependence(theorem, ev) -> Check:
    """``ledger/dependence/<event>``: who the premises are about, and in which direction."""
    t0, name, kind = time.perf_counter(), f"ledger/dependence/{ev.name}", ev.tail.kind
    users = [p for p in theorem.premises if p.event == ev.name]
    found = [_premise_sides(theorem, ev, p) for p in users]
    wrong = [f for f in found if isinstance(f, str)]
    if wrong:
        return Check(theorem.name, name, "FAIL", "ledger", "; ".join(wrong), seconds=time.perf_counter() - t0)
    funcs, directions = {f for f, _ in found}, {d for _, d in found}
    outside = sorted(funcs - set(ev.functions))
    if outside:
        return Check(theorem.name, name, "FAIL", "ledger", f"premises about {outside}, the event covers "
                     f"{list(ev.functions)}", seconds=time.perf_counter() - t0)
    depends = theorem.depends_on
    if kind in ONE_FUNCTION_KINDS:
        dependent = sorted(f for f in funcs | set(ev.functions) if ev.sample in depends.get(f, (ev.sample,)))
        if dependent or len(ev.functions) != 1:
            w = witness(ev.probability, sp.Integer(1), theorem.side_conditions)
            why = (f"{dependent} depend(s) on {ev.sample} (or have no dependence data): a one-function tail does "
                   "not bound a function chosen with the sample; only the trivial P <= 1 holds")
            return Check(theorem.name, name, "FAIL", "ledger", why if dependent else
                         f"a one-function tail covers {list(ev.functions)}", countermodel=w,
                         seconds=time.perf_counter() - t0)
    if ev.tail.sides == 1 and len(directions) > 1:
        w = witness(ev.probability, 2 * ev.probability, theorem.side_conditions)
        why = f"one-sided event used in both directions {sorted(directions)}: both sides must be paid (twice the level)"
        return Check(theorem.name, name, "FAIL", "ledger", why, countermodel=w, seconds=time.perf_counter() - t0)
    detail = f"{kind} on {ev.sample} for {sorted(funcs)}, directions {sorted(directions)}"
    if kind in _UNIFORM and ev.tail.sides == 2 and len(directions) == 1:
        return Check(theorem.name, name, "FINDING", "ledger", detail + ": paid two-sided, one side used",
                     seconds=time.perf_counter() - t0)
    return Check(theorem.name, name, "PASS", "ledger", detail, seconds=time.perf_counter() - t0)


def check_tails(theorem) -> list[Check]:
    """Both checks for every event that records a :class:`~bounds._statement.Tail`."""
    out = []
    for ev in theorem.events:
        if ev.tail is None:
            continue
        out.append(check_tail(theorem, ev))
        if ev.tail.kind != "monte_carlo":
            out.append(check_dependence(theorem, ev))
    return out
