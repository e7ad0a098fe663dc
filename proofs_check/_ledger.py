"""The probability ledger of a proof chain (THEORY §5, §6).

Each premise lives outside a failure event (``E_S``, ``E_T``, a Hoeffding tail) or none
(a definition). The ledger checks, with sympy:

* every event a premise names is declared, and every declared event is used;
* every Hoeffding event's probability is the tail ``exp(-2 n t^2 / range^2)`` of its
  recorded ``(n, t, range)``, and ``t`` is exactly the slack of the premises on it
  (``A <= B + t`` with risks ``A``, ``B``);
* the union bound over the events the premises use equals the stated failure probability
  (THEORY §5: ``delta + 2 exp(-K Delta_R^2 / (8 B^2))``; §6: ``delta + delta'``).

A mismatch comes with a witness point (symbol values, respecting the side conditions)
where the two probabilities differ, the most optimistic statement first.
"""
from __future__ import annotations

import time

import sympy as sp

from bounds import _symbols as sym
from proofs_check._results import Check
from proofs_check._symbolic import slack_matches as _premise_slack_matches
from proofs_check._symbolic import symbolic_equal as _equal
from proofs_check._symbolic import witness
from proofs_check._tails import check_tails

#: The risk quantities of THEORY's notation; a Hoeffding premise bounds a difference of two.
_RISKS = frozenset((sym.L_test_old, sym.L_test_new, sym.L_test_jump, sym.R_old, sym.R_new,
                    sym.R_jump, sym.RS_new, sym.RS_jump))


def check_events(theorem) -> list[Check]:
    """Every premise's event is declared; every declared event is used (else a FINDING)."""
    declared = theorem.event_map
    missing = sorted({p.event for p in theorem.premises if p.event is not None} - set(declared))
    used = {p.event for p in theorem.premises}
    unused = [e.name for e in theorem.events if e.name not in used]
    out = [Check(theorem.name, "ledger/events_declared", "FAIL" if missing else "PASS", "ledger",
                 f"undeclared events {missing}" if missing else f"events {sorted(declared)}")]
    if unused:
        out.append(Check(theorem.name, "ledger/unused_events", "FINDING", "ledger",
                         f"declared but used by no premise: {unused}"))
    return out


def _sample_mismatch(h, users):
    """``("", None)`` when the tail's range is the loss bound ``B`` (THEORY §1) and its ``n``
    is the size of the sample the premises average over (``K`` for a test loss
    ``L_test_*``); else the reason and the correctly specified :class:`Hoeffding` record."""
    from bounds import Hoeffding, _symbols as s

    if sp.simplify(h.range - s.B) != 0:
        return f"Hoeffding range {h.range} is not the loss bound B", Hoeffding(h.n, h.t, s.B)
    on_test = any(sym.name.startswith("L_test") for p in users for sym in p.relation.free_symbols)
    if on_test and sp.simplify(h.n - s.K) != 0:
        return (f"Hoeffding sample size {h.n} is not the test size K of the premises' L_test terms",
                Hoeffding(s.K, h.t, h.range))
    return "", None


def check_hoeffding(theorem) -> list[Check]:
    """Each Hoeffding event: probability == its tail, and its ``t`` is the premises' slack."""
    out = []
    for ev in theorem.events:
        if ev.hoeffding is None:
            continue
        t0, name = time.perf_counter(), f"ledger/hoeffding/{ev.name}"
        tail = ev.hoeffding.tail()
        if not _equal(ev.probability, tail):
            w = witness(ev.probability, tail, theorem.side_conditions)
            out.append(Check(theorem.name, name, "FAIL", "sympy",
                             f"P({ev.name}) = {ev.probability} but the tail at t = {ev.hoeffding.t} is {tail}",
                             countermodel=w, seconds=time.perf_counter() - t0))
            continue
        users = [p for p in theorem.premises if p.event == ev.name]
        wrong, right = _sample_mismatch(ev.hoeffding, users)
        if wrong:   # witness: a point where the stated tail differs from the one of the right sample
            w = witness(ev.probability, right.tail(), theorem.side_conditions)
            out.append(Check(theorem.name, name, "FAIL", "sympy", wrong, countermodel=w,
                             seconds=time.perf_counter() - t0))
            continue
        bad = [p.name for p in users if not _premise_slack_matches(p, ev.hoeffding.t)]
        status = "FAIL" if bad else "PASS"
        detail = (f"premises {bad} do not have slack t = {ev.hoeffding.t}" if bad
                  else f"P = exp(-2 n t^2/range^2) = {tail} with t = {ev.hoeffding.t}, slack of {[p.name for p in users]}")
        cm = _slack_witness(theorem, ev, bad) if bad else None
        out.append(Check(theorem.name, name, status, "sympy", detail, countermodel=cm,
                         seconds=time.perf_counter() - t0))
    return out


def _slack_witness(theorem, ev, bad) -> dict | None:
    """Values where the tail at the premise's slack exceeds the recorded probability."""
    p = next(p for p in theorem.premises if p.name == bad[0])
    rel = p.relation
    slack = (rel.rhs - rel.lhs) if isinstance(rel, (sp.LessThan, sp.StrictLessThan)) else (rel.lhs - rel.rhs)
    t_used = slack.subs({s: 0 for s in slack.free_symbols if s in _RISKS})
    h = ev.hoeffding
    return witness(ev.probability, sp.exp(-2 * h.n * t_used**2 / h.range**2), theorem.side_conditions)


def check_union_bound(theorem) -> Check:
    """Union bound over the used events == the stated failure probability."""
    t0 = time.perf_counter()
    try:
        derived = theorem.union_bound()
    except KeyError as exc:
        return Check(theorem.name, "ledger/union_bound", "FAIL", "sympy", f"undeclared event {exc}")
    stated = theorem.failure_probability
    if _equal(stated, derived):
        return Check(theorem.name, "ledger/union_bound", "PASS", "sympy",
                     f"union bound {derived} == stated {stated}", seconds=time.perf_counter() - t0)
    w = witness(stated, derived, theorem.side_conditions)
    status = "FAIL" if w is not None else "UNKNOWN"
    how = "" if w is None else (" (stated is optimistic there)" if w["stated"] < w["derived"]
                                else " (stated differs, looser there)")
    return Check(theorem.name, "ledger/union_bound", status, "sympy+numeric",
                 f"union bound {derived} != stated {stated}{how}", countermodel=w, seconds=time.perf_counter() - t0)


def check_ledger(theorem) -> list[Check]:
    """All ledger checks of one theorem (THEORY §5, §6), with the tail records of the variants."""
    return check_events(theorem) + check_hoeffding(theorem) + check_tails(theorem) + [check_union_bound(theorem)]
