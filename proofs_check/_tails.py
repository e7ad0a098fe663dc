"""Ledger checks of events that carry a :class:`bounds._statement.Tail` (THEORY §4, §6).

For the tighter variants (this project's **Choice**) each event records its kind (a
one-function Hoeffding or Bernstein tail, a uniform deviation over the capped class, or
the Monte-Carlo error of an empirical Rademacher value), its sample, the function(s) it
is about and the formula of its deviation.

* ``ledger/tail/<event>`` -- the deviation is the right one for its kind, sample size and
  level, re-derived here independently of :mod:`bounds.variants`: Hoeffding
  ``copies exp(-2 n t^2/B^2) = P``; Maurer--Pontil's Thm 4 for values in ``[0, 1]``,
  rescaled to ``[0, B]``; McDiarmid for the uniform term (``sides`` directions, and the
  Bartlett--Mendelson ``3 B`` term as two McDiarmid events when empirical). The Rademacher
  value is one of :data:`bounds.dependence.RADEMACHER` of the right kind (closed form for
  ``uniform``, empirical on the event's sample otherwise); the Monte-Carlo event replaces
  the exact empirical value by one of :func:`bounds.dependence.monte_carlo_estimates` at
  the event's own probability (the estimate plus its McDiarmid error, or its minimum with
  Jensen's sure bound) and nothing else.
* THEORY §6b's localised records (differences in ``[-r_d, r_d]``, the uniform terms (b), (c)):
  :mod:`proofs_check._localised_tails`; every range is read from :data:`bounds.dependence.RANGES`.
* ``ledger/dependence/<event>`` and ``ledger/declared_data`` -- :mod:`proofs_check._dependence`.

A failure comes with a witness point where the stated probability (or deviation) differs
from the derived one.
"""
from __future__ import annotations

import time

import sympy as sp

from bounds import _symbols as s
from bounds import dependence as dep
from proofs_check._dependence import dependence_checks
from proofs_check._localised_tails import LOCALISED_KINDS, localised_derived, localised_problems
from proofs_check._results import Check
from proofs_check._symbolic import symbolic_equal, witness

_UNIFORM = ("uniform", "uniform_empirical")
#: The Rademacher kind each tail kind needs (:data:`bounds.dependence.RADEMACHER`).
_RAD_KIND = {"uniform": "closed", "uniform_empirical": "empirical", "monte_carlo": "empirical"}
# (b)'s "uniform_linearised" carries no Rademacher symbol: its whole deviation is re-derived (proofs_check._localised_tails)


def maurer_pontil_unit(variance: sp.Expr, n: sp.Expr, level: sp.Expr) -> sp.Expr:
    """Maurer--Pontil (2009) Thm 4 for i.i.d. values in ``[0, 1]``, one-sided at ``level``.

    ``sqrt(2 V ln(2/level) / n) + 7 ln(2/level) / (3 (n - 1))``.
    """
    return sp.sqrt(2 * variance * sp.log(2 / level) / n) + 7 * sp.log(2 / level) / (3 * (n - 1))


def _contraction(rademacher: sp.Expr) -> sp.Expr:
    """Symmetrisation (factor 2) and Maurer's vector contraction (``sqrt(2) L_loss L_top``), THEORY §4."""
    return 2 * sp.sqrt(2) * s.L_loss * s.L_top * rademacher


def _derived(theorem, ev):
    """``(stated, derived, what)`` for the event's tail; equal iff the deviation is right.

    The range is the one of the event's function in :data:`bounds.dependence.RANGES` (``B``
    for a loss, ``2 r_d`` for a THEORY §6b difference), never the record's own.
    """
    t, n, R = ev.tail, dep.SAMPLE_SIZES.get(ev.sample, ev.tail.n), dep.value_range(ev.functions)
    if t.kind in LOCALISED_KINDS:
        return localised_derived(ev, n, R)
    if t.kind == "hoeffding":
        return ev.probability, t.copies * sp.exp(-2 * n * t.deviation**2 / R**2), "probability"
    if t.kind == "bernstein":
        w = sp.Symbol("range_w", positive=True)   # the range is positive: sqrt(V/w^2) w = sqrt(V)
        ref = (w * maurer_pontil_unit(t.variance / w**2, n, ev.probability / t.copies)).subs(w, R)
        return t.deviation, ref, "deviation"
    if t.kind in _UNIFORM:
        conf = sp.expand(t.deviation - _contraction(t.rademacher))
        if t.kind == "uniform":
            return ev.probability, t.sides * t.copies * sp.exp(-2 * n * conf**2 / R**2), "probability"
        return ev.probability, 2 * t.sides * t.copies * sp.exp(-2 * n * (conf / 3) ** 2 / R**2), "probability"
    uniform = _uniform_of(theorem, t)
    if uniform is None:
        return t.deviation, sp.nan, "deviation"
    return t.deviation, uniform.tail.deviation.subs(t.rademacher, t.estimate), "deviation"


def _uniform_of(theorem, t):
    """The empirical uniform event whose Rademacher value the Monte-Carlo record ``t`` replaces."""
    return next((e for e in theorem.events if e.tail is not None and e.tail.kind == "uniform_empirical"
                 and e.tail.rademacher == t.rademacher), None)


def _rademacher_problem(ev):
    """The tail's Rademacher value is a :data:`bounds.dependence.RADEMACHER` symbol of the right kind."""
    t = ev.tail
    if t.kind not in _RAD_KIND:
        return None
    want = dep.Rademacher(_RAD_KIND[t.kind], ev.sample)
    name = t.rademacher.name if isinstance(t.rademacher, sp.Symbol) else None
    if name is not None and dep.RADEMACHER.get(name) == want:
        return None
    right = [k for k, r in dep.RADEMACHER.items() if r == want]
    why = f"Rademacher value {t.rademacher} is not a {want.kind} one on {ev.sample} (bounds.dependence: {right})"
    if not right or t.kind == "monte_carlo":
        return why, None, None
    canonical = t.deviation - _contraction(t.rademacher) + _contraction(sp.Symbol(right[0], nonnegative=True))
    return why, t.deviation, canonical


def _estimate_problem(theorem, ev):
    """The Monte-Carlo record's estimate is one of :func:`bounds.dependence.monte_carlo_estimates` at ``P(E_MC)``."""
    t = ev.tail
    if t.kind != "monte_carlo":
        return None
    allowed = dep.monte_carlo_estimates(ev.probability)
    given = dep.expand_definitions(t.estimate)
    if any(symbolic_equal(given, a) for a in allowed):
        return None
    why = (f"estimate {t.estimate} is not rad_S_mc + mc_error(P({ev.name})) (or its minimum with Jensen's bound): "
           f"{allowed[0]}")
    uniform = _uniform_of(theorem, t)
    if uniform is None:
        return why, None, None
    return why, t.deviation, uniform.tail.deviation.subs(t.rademacher, allowed[0])


def _record_problems(theorem, ev) -> list[tuple]:
    """``(why, stated, derived)`` for each thing wrong with the record (``stated``/``derived`` may be None)."""
    t, out = ev.tail, []
    if ev.sample not in dep.SAMPLE_SIZES:
        out.append((f"sample {ev.sample!r} is not one of {list(dep.SAMPLE_SIZES)}", None, None))
    elif not symbolic_equal(t.n, dep.SAMPLE_SIZES[ev.sample]):
        out.append((f"sample size {t.n} is not the size {dep.SAMPLE_SIZES[ev.sample]} of {ev.sample}", None, None))
    R = dep.value_range(ev.functions)
    if not symbolic_equal(t.range, R):
        out.append((f"range {t.range} is not the range {R} of {list(ev.functions)} (bounds.dependence.RANGES)",
                    None, None))
    if not symbolic_equal(t.level, ev.probability):
        out.append((f"tail level {t.level} != event probability {ev.probability}", None, None))
    if t.kind == "monte_carlo":
        out += [(why, None, None) for why in _mc_premises(theorem, ev)]
    out += [p for p in (_rademacher_problem(ev), _estimate_problem(theorem, ev)) if p is not None]
    if t.kind in LOCALISED_KINDS:
        out += localised_problems(ev)
    return out


def check_tail(theorem, ev) -> Check:
    """``ledger/tail/<event>``: the recorded deviation, sample size, range, level and inputs agree."""
    t0, name, t = time.perf_counter(), f"ledger/tail/{ev.name}", ev.tail
    stated, derived, what = _derived(theorem, ev)
    problems = _record_problems(theorem, ev)
    if derived is sp.nan:
        problems.append(("no empirical uniform event with the same Rademacher symbol", None, None))
    elif not symbolic_equal(stated, derived):
        problems.insert(0, (f"stated {what} {stated} != derived {derived}", stated, derived))
    if not problems:
        return Check(theorem.name, name, "PASS", "sympy", f"{t.kind} on {ev.sample}: {what} re-derived ({derived})",
                     seconds=time.perf_counter() - t0)
    pairs = [(a, b) for _, a, b in problems if a is not None] + [(stated, derived)]
    w = next((w for a, b in pairs if b is not sp.nan and (w := witness(a, b, theorem.side_conditions))), None)
    return Check(theorem.name, name, "FAIL", "sympy", f"{t.kind}: " + "; ".join(p[0] for p in problems),
                 countermodel=w, seconds=time.perf_counter() - t0)


def _mc_premises(theorem, ev) -> list[str]:
    """The Monte-Carlo event's premises read ``eps_star <= eps`` (exact cost below the computed one)."""
    stars = {e.tail.symbol for e in theorem.events if e.tail is not None and e.tail.kind == "uniform_empirical"}
    bad = [p.name for p in theorem.premises if p.event == ev.name and not (
        isinstance(p.relation, sp.LessThan) and p.relation.lhs in stars and p.relation.rhs == ev.tail.symbol)]
    return [f"premises {bad} do not read eps_star <= {ev.tail.symbol}"] if bad else []


def check_tails(theorem) -> list[Check]:
    """``ledger/tail/<event>`` for every tail record; the dependence checks of :mod:`proofs_check._dependence`."""
    return [check_tail(theorem, ev) for ev in theorem.events if ev.tail is not None] + dependence_checks(theorem)
