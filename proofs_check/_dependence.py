"""Who each premise is about, checked against :mod:`bounds.dependence` (THEORY §4, §6).

Whether a function depends on a sample (or on the cap) is read from the tables of
:mod:`bounds.dependence`, never from the theorem's own data; a theorem's declared
``functions``/``risk_terms`` are only cross-checked. Two checks:

* ``ledger/declared_data`` -- the theorem's declared data are not weaker than the tables:
  no function declared independent of a sample it depends on, no risk symbol declared
  about another function or sample.
* ``ledger/dependence/<event>`` -- for every event with a one-function or uniform
  :class:`~bounds._statement.Tail`, and every Hoeffding record: each premise on the event
  reads ``A <= B + t`` with ``A``, ``B`` one function on the event's sample and on the
  population; a one-function tail is about a single function that does not depend on that
  sample; an event about a function that depends on the cap pays for the cap grid
  (``copies == n_grid``); a Bernstein tail uses the sample variance of its own function on
  its own sample; a one-sided event is used in one direction only.

The Monte-Carlo event of an empirical Rademacher value needs no grid: the readout's
empirical value, its estimate and its error are all linear in the cap ``nu_V`` (the
features ``phi`` do not depend on it), so one event covers every cap.

A failure comes with a witness point where the stated probability (or deviation) differs
from the derived one: for a one-function tail on a data-dependent function the derived
probability is the trivial 1; for an unpaid grid, ``n_grid`` times the level; for a
one-sided event used both ways, twice the level.
"""
from __future__ import annotations

import time

import sympy as sp

from bounds import _symbols as s
from bounds import dependence as dep
from bounds._statement import ONE_FUNCTION_KINDS
from proofs_check._results import Check
from proofs_check._symbolic import slack_matches, symbolic_equal, witness

_UNIFORM = ("uniform", "uniform_empirical", "uniform_linearised", "uniform_exact")


def _samples(theorem, function: str) -> set[str]:
    """The samples ``function`` depends on: the table's, and any more the theorem declares."""
    return set(dep.role(function).samples) | set(theorem.depends_on.get(function, ()))


# ---------------------------------------------------------------- declared data
def _declared_problems(theorem, jump: str) -> tuple[list[str], set[str], set[str]]:
    """Declarations weaker than the tables: messages, mis-declared functions and risk symbols."""
    problems, functions, risks = [], set(), set()
    for f, samples in theorem.functions:
        missing = sorted(set(dep.role(f).samples) - set(samples))
        if missing:
            problems.append(f"{f} declared independent of {missing}; bounds.dependence: it depends on "
                            f"{list(dep.role(f).samples)}")
            functions.add(f)
    for name, declared in theorem.risk_terms:
        canon = dep.risk_term(name, jump)
        if canon is None or tuple(declared) != canon:
            problems.append(f"{name} declared about {tuple(declared)}; bounds.dependence: {canon}")
            risks.add(name)
    return problems, functions, risks


def _affected_witness(theorem, functions: set[str], risks: set[str]) -> dict | None:
    """``P`` vs 1 at the first one-function event whose premises touch a mis-declared datum."""
    jump = dep.jumpboard(theorem)
    about = lambda n: (dep.risk_term(n, jump) or ("",))[0]  # noqa: E731
    for ev in theorem.events:
        if _record(ev)[0] not in ONE_FUNCTION_KINDS:
            continue
        names = {x.name for p in theorem.premises if p.event == ev.name for x in p.relation.free_symbols}
        if any(n in risks or about(n) in functions for n in names):
            return witness(ev.probability, sp.Integer(1), theorem.side_conditions)
    return None


def check_declared_data(theorem) -> list[Check]:
    """``ledger/declared_data``: the theorem's ``functions``/``risk_terms`` against :mod:`bounds.dependence`."""
    if not theorem.functions and not theorem.risk_terms:
        return []
    t0, jump = time.perf_counter(), dep.jumpboard(theorem)
    problems, functions, risks = _declared_problems(theorem, jump)
    if not problems:
        return [Check(theorem.name, "ledger/declared_data", "PASS", "ledger", f"declared data agree with "
                      f"bounds.dependence (jumpboard {jump})", seconds=time.perf_counter() - t0)]
    return [Check(theorem.name, "ledger/declared_data", "FAIL", "ledger", "; ".join(problems),
                  countermodel=_affected_witness(theorem, functions, risks), seconds=time.perf_counter() - t0)]


# ---------------------------------------------------------------- one event
def _record(ev) -> tuple[str | None, sp.Expr | None, str | None, int]:
    """``(kind, slack, sample, sides)`` of an event's tail record or Hoeffding record."""
    if ev.tail is not None:
        return ev.tail.kind, ev.tail.symbol, ev.sample, ev.tail.sides
    if ev.hoeffding is not None:   # the sample is the one whose size the tail uses
        by_size = [k for k, n in dep.SAMPLE_SIZES.items() if symbolic_equal(ev.hoeffding.n, n)]
        return "hoeffding", ev.hoeffding.t, (by_size[0] if by_size else ev.sample), 1
    return None, None, ev.sample, 1


def _premise_sides(theorem, premise, slack, sample):
    """``(function, direction)`` of ``premise``, or a string saying what is wrong."""
    if not slack_matches(premise, slack):
        return f"premise {premise.name} does not read A <= B + {slack}"
    rel = premise.relation
    lhs, rhs = (rel.lhs, rel.rhs) if isinstance(rel, (sp.LessThan, sp.StrictLessThan)) else (rel.rhs, rel.lhs)
    low = [x for x in sp.Add.make_args(sp.expand(rhs - slack)) if isinstance(x, sp.Symbol)]
    jump = dep.jumpboard(theorem)
    a = dep.risk_term(lhs.name, jump) if isinstance(lhs, sp.Symbol) else None
    b = dep.risk_term(low[0].name, jump) if len(low) == 1 else None
    if a is None or b is None:
        return f"premise {premise.name}: risk symbols not in bounds.dependence.RISK_TERMS"
    (f_a, w_a), (f_b, w_b) = a, b
    if f_a != f_b or {w_a, w_b} != {sample, "population"}:
        return (f"premise {premise.name} compares {f_a} on {w_a} with {f_b} on {w_b}, not one function on "
                f"{sample} and on the population")
    return f_a, ("mean_minus_risk" if w_a == sample else "risk_minus_mean")


def _one_function_problem(theorem, ev, funcs, sample):
    dependent = sorted(f for f in funcs | set(ev.functions) if sample in _samples(theorem, f))
    if not dependent and len(ev.functions) == 1:
        return None
    why = (f"{dependent} depend(s) on {sample} (bounds.dependence): a one-function tail does not bound a "
           "function chosen with the sample; only the trivial P <= 1 holds" if dependent
           else f"a one-function tail covers {list(ev.functions)}")
    return why, witness(ev.probability, sp.Integer(1), theorem.side_conditions)


def _grid_problem(theorem, ev, funcs):
    """An event about a cap-dependent function (or the capped class) must pay the grid."""
    capped = sorted(f for f in funcs | set(ev.functions) if dep.role(f).cap)
    if ev.tail is None or not (capped or ev.tail.kind in _UNIFORM) or symbolic_equal(ev.tail.copies, s.n_grid):
        return None
    why = (f"copies == {ev.tail.copies}, but {capped or 'the capped class'} depend(s) on the cap: a cap chosen "
           "after seeing the data is paid over the n_grid caps (copies == n_grid)")
    return why, witness(ev.probability, s.n_grid * ev.probability / ev.tail.copies, theorem.side_conditions)


def _variance_problem(theorem, ev, funcs, sample):
    t = ev.tail
    if t is None or t.kind != "bernstein" or len(funcs) != 1:
        return None
    function, jump = next(iter(funcs)), dep.jumpboard(theorem)
    name = t.variance.name if isinstance(t.variance, sp.Symbol) else None
    if name is not None and dep.variance_of(name, jump) == (function, sample):
        return None
    right = [sp.Symbol(k, nonnegative=True) for k in dep.VARIANCES if dep.variance_of(k, jump) == (function, sample)]
    derived = t.deviation.subs(t.variance, right[0] if right else s.B**2 / 4)
    why = (f"variance {t.variance} is not the sample variance of {function}'s losses on {sample} "
           f"(bounds.dependence.VARIANCES: {right[0] if right else 'none'})")
    return why, witness(t.deviation, derived, theorem.side_conditions)


def _direction_problem(theorem, ev, directions, sides):
    if sides != 1 or len(directions) < 2:
        return None
    why = f"one-sided event used in both directions {sorted(directions)}: both sides must be paid (twice the level)"
    return why, witness(ev.probability, 2 * ev.probability, theorem.side_conditions)


def check_dependence(theorem, ev) -> Check:
    """``ledger/dependence/<event>``: who the premises are about, on which sample, in which direction."""
    t0, name = time.perf_counter(), f"ledger/dependence/{ev.name}"
    kind, slack, sample, sides = _record(ev)
    done = lambda status, detail, cm=None: Check(theorem.name, name, status, "ledger", detail,  # noqa: E731
                                                 countermodel=cm, seconds=time.perf_counter() - t0)
    if sample not in dep.SAMPLE_SIZES:
        return done("FAIL", f"event on sample {sample!r}, must be one of {list(dep.SAMPLE_SIZES)}")
    found = [_premise_sides(theorem, p, slack, sample) for p in theorem.premises if p.event == ev.name]
    wrong = [f for f in found if isinstance(f, str)]
    if wrong:
        return done("FAIL", "; ".join(wrong))
    funcs, directions = {f for f, _ in found}, {d for _, d in found}
    outside = sorted(funcs - set(ev.functions))
    if outside:
        return done("FAIL", f"premises about {outside}, the event covers {list(ev.functions)}")
    problems = [_one_function_problem(theorem, ev, funcs, sample) if kind in ONE_FUNCTION_KINDS else None,
                _grid_problem(theorem, ev, funcs), _variance_problem(theorem, ev, funcs, sample),
                _direction_problem(theorem, ev, directions, sides)]
    problems = [p for p in problems if p is not None]
    if problems:
        return done("FAIL", "; ".join(why for why, _ in problems), problems[0][1])
    detail = f"{kind} on {sample} for {sorted(funcs)}, directions {sorted(directions)}"
    if kind in _UNIFORM and sides == 2 and len(directions) == 1:
        return done("FINDING", detail + ": paid two-sided, one side used")
    capped = _unpaid_cap(ev, funcs)
    if capped:
        return done("FINDING", detail + f": no cap grid paid though {capped} depend(s) on the cap -- valid only when "
                    f"the cap is chosen before {sample} is drawn (after training, with S), never with {sample}")
    return done("PASS", detail)


def _unpaid_cap(ev, funcs) -> list[str]:
    """A paper Hoeffding record (no ``copies``) about a cap-dependent function, or at a threshold
    that depends on one (``t = Delta_R/4``: ``f~_pop``'s step depends on the cap)."""
    if ev.tail is not None or ev.hoeffding is None:
        return []
    margins = {dep.MARGINS[x.name] for x in ev.hoeffding.t.free_symbols if x.name in dep.MARGINS}
    return sorted(f for f in funcs | set(ev.functions) | margins if dep.role(f).cap)


def dependence_checks(theorem) -> list[Check]:
    """``ledger/declared_data`` and one ``ledger/dependence/<event>`` per tail or Hoeffding record."""
    out = check_declared_data(theorem)
    for ev in theorem.events:
        kind = _record(ev)[0]
        if kind is not None and kind != "monte_carlo":
            out.append(check_dependence(theorem, ev))
    return out
