"""Verification of one theorem object: entailment two ways, necessity, consistency, ledger.

Reads the :class:`bounds.Theorem` objects themselves (never a re-typed copy):
``premises`` (with their events), ``conclusion``, ``side_conditions``,
``failure_probability``. The assumptions of the sympy symbols (``positive``,
``nonnegative``) are added as explicit sign constraints for both engines.
"""
from __future__ import annotations

import time

import sympy as sp

from proofs_check import _farkas, _linear, _smt
from proofs_check._ledger import check_ledger
from proofs_check._results import Check, TheoremResult

DEFAULT_TIMEOUT_S = 5.0


def _side(theorem) -> list:
    return [c for c in theorem.side_conditions if c is not sp.true]


def farkas_check(subject: str, premises: list[tuple[str, object]], conclusion) -> Check:
    """Entailment by an exact Farkas certificate over monomial atoms (THEORY §5, §6 chains).

    Args:
        subject: name shown in the report.
        premises: ``(label, relation)`` pairs, side conditions included.
        conclusion: the relation to entail.

    Returns:
        PASS with the multipliers (the conclusion, as ``lhs - rhs <= 0``, is the weighted
        sum of the premises); FAIL when no certificate exists and every atom is a plain
        symbol (then the chain is linear and truly not entailed); N/A when the chain has
        non-linear atoms and no certificate over them (z3 decides); UNKNOWN when the LP
        certificate does not verify exactly.
    """
    t0 = time.perf_counter()
    try:
        base = [c for label, rel in premises for c in _linear.to_constraints(rel, label)]
        alternatives = _linear.negate(conclusion)
    except _linear.TooLarge as exc:
        return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact", f"not applicable: {exc}; z3 decides",
                     seconds=time.perf_counter() - t0)
    atoms = {a for c in base for a in c.coeffs}
    for alt in alternatives:
        atoms |= {a for c in alt for a in c.coeffs}
    base += _linear.sign_constraints(atoms)
    nonlinear = sorted((str(a) for a in atoms if _linear.is_nonlinear_atom(a)))
    certificates = []
    for alt in alternatives:
        try:
            outcome = _farkas.farkas(base + alt)
        except ValueError as exc:   # e.g. a constant too large for the floating-point LP
            return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact",
                         f"not applicable: {exc}; z3 decides", seconds=time.perf_counter() - t0)
        if outcome.status != "certificate":
            return _farkas_negative(subject, outcome, nonlinear, time.perf_counter() - t0)
        certificates.append(outcome.multipliers)
    return _farkas_positive(subject, certificates, nonlinear, time.perf_counter() - t0)


def _farkas_negative(subject, outcome, nonlinear, seconds) -> Check:
    if outcome.status == "inexact":
        return Check(subject, "entailment/farkas", "UNKNOWN", "farkas-lp+exact", outcome.detail, seconds=seconds)
    if nonlinear:
        return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact",
                     f"not applicable (non-linear): no certificate over the atoms {nonlinear}; z3 decides",
                     seconds=seconds)
    return Check(subject, "entailment/farkas", "FAIL", "farkas-lp+exact",
                 "no Farkas certificate exists (linear chain): not entailed", seconds=seconds)


def _farkas_positive(subject, certificates, nonlinear, seconds) -> Check:
    shown: dict[str, str] = {}
    vacuous = False
    for i, mult in enumerate(certificates):
        mu = mult.pop("not(conclusion)", sp.Integer(0))
        vacuous |= mu == 0
        scale = 1 / mu if mu != 0 else sp.Integer(1)
        suffix = "" if len(certificates) == 1 else f"[{'<=' if i == 0 else '>='}]"
        shown.update({f"{k}{suffix}": str(v * scale) for k, v in mult.items()})
    atoms = f" over monomial atoms {nonlinear}" if nonlinear else ""
    if vacuous:
        return Check(subject, "entailment/farkas", "FINDING", "farkas-lp+exact",
                     "premises are inconsistent: the conclusion follows vacuously" + atoms,
                     certificate=shown, seconds=seconds)
    return Check(subject, "entailment/farkas", "PASS", "farkas-lp+exact",
                 "conclusion = sum of multiplier * premise (verified in exact arithmetic)" + atoms,
                 certificate=shown, seconds=seconds)


def z3_check(subject: str, name: str, relations: list, conclusion, timeout_s: float,
             negative_status: str = "FAIL") -> Check:
    """``relations and not(conclusion)`` unsat -> PASS; sat -> ``negative_status`` + countermodel."""
    t0 = time.perf_counter()
    try:
        out = _smt.entails(relations, conclusion, timeout_s)
    except _smt.Untranslatable as exc:
        return Check(subject, name, "UNKNOWN", "z3", str(exc), seconds=time.perf_counter() - t0)
    seconds = time.perf_counter() - t0
    if out.status == "unsat":
        return Check(subject, name, "PASS", "z3", "premises and not(conclusion) is unsat over the reals",
                     seconds=seconds)
    if out.status == "unknown":
        return Check(subject, name, "UNKNOWN", "z3", f"z3 unknown ({out.detail}, timeout {timeout_s} s)",
                     seconds=seconds)
    confirmed = _smt.confirm(out.countermodel, relations, conclusion)
    note = "confirmed in exact arithmetic" if confirmed else (
        "not confirmed (uses abstracted exp/log)" if out.abstracted else "not confirmed (irrational values rounded)")
    return Check(subject, name, negative_status, "z3", f"countermodel: premises hold, conclusion fails ({note})",
                 countermodel=out.countermodel, seconds=seconds)


def consistency_check(subject: str, relations: list, timeout_s: float) -> Check:
    """The premises and side conditions have a real model (else entailment is vacuous)."""
    t0 = time.perf_counter()
    out = _smt.satisfiable(relations, timeout_s)
    status = {"sat": "PASS", "unsat": "FAIL", "unknown": "UNKNOWN"}[out.status]
    detail = {"sat": "premises and side conditions are satisfiable",
              "unsat": "premises contradict each other: every conclusion would follow vacuously",
              "unknown": f"z3 unknown ({out.detail})"}[out.status]
    return Check(subject, "consistency", status, "z3", detail, seconds=time.perf_counter() - t0)


def necessity_checks(theorem, timeout_s: float) -> list[Check]:
    """For each premise: the chain without it does not entail the conclusion (z3 countermodel).

    A premise whose removal keeps the entailment is reported as a FINDING (superfluous).
    """
    out = []
    for p in theorem.premises:
        rest = [q.relation for q in theorem.premises if q.name != p.name] + _side(theorem)
        c = z3_check(theorem.name, f"necessity/{p.name}", rest, theorem.conclusion, timeout_s)
        if c.status == "PASS":  # still entailed without p
            c = Check(c.subject, c.name, "FINDING", "z3", "superfluous: entailed without this premise",
                      seconds=c.seconds)
        elif c.status == "FAIL":  # the countermodel shows p is needed
            c = Check(c.subject, c.name, "PASS", "z3", "needed: " + c.detail, countermodel=c.countermodel,
                      seconds=c.seconds)
        out.append(c)
    return out


def verify(theorem, timeout_s: float = DEFAULT_TIMEOUT_S, necessity: bool = True) -> TheoremResult:
    """Check one :class:`bounds.Theorem`: conclusion follows from premises, premises needed, ledger right.

    Args:
        theorem: a statement of :mod:`bounds` (or a mutant of one).
        timeout_s: z3 timeout per query, in seconds.
        necessity: also run one z3 query per dropped premise.

    Returns:
        :class:`TheoremResult` with checks ``consistency``, ``entailment/farkas``,
        ``entailment/z3``, ``necessity/<premise>``, ``ledger/...``.

    Example:
        >>> from bounds import THEOREM_3
        >>> r = verify(THEOREM_3)
        >>> r.ok, r.engines
        (True, {'farkas': 'PASS', 'z3': 'PASS'})
    """
    if timeout_s <= 0:
        raise ValueError(f"timeout_s == {timeout_s}, must be > 0.")
    relations = [p.relation for p in theorem.premises] + _side(theorem)
    labelled = [(p.name, p.relation) for p in theorem.premises]
    labelled += [(f"side: {c}", c) for c in _side(theorem)]
    checks = [consistency_check(theorem.name, relations, timeout_s),
              farkas_check(theorem.name, labelled, theorem.conclusion),
              z3_check(theorem.name, "entailment/z3", relations, theorem.conclusion, timeout_s)]
    checks += _agreement(theorem.name, checks[1], checks[2])
    if necessity:
        checks += necessity_checks(theorem, timeout_s)
    checks += check_ledger(theorem)
    return TheoremResult(theorem.name, theorem.reference, tuple(checks))


def _agreement(subject: str, farkas: Check, smt: Check) -> list[Check]:
    """Definite answers of the two engines must agree; a disagreement is a bug: FAIL.

    Farkas FAIL is definite only on a linear chain (it is N/A otherwise), where Farkas'
    lemma makes it complete; z3 PASS/FAIL are definite.
    """
    if farkas.status == "PASS" and smt.status == "FAIL":
        return [Check(subject, "entailment/agreement", "FAIL", "farkas+z3",
                      "Farkas certificate and z3 countermodel disagree", countermodel=smt.countermodel)]
    if farkas.status == "FAIL" and smt.status == "PASS":
        return [Check(subject, "entailment/agreement", "FAIL", "farkas+z3",
                      "no Farkas certificate for a linear chain, yet z3 reports entailment: engines disagree")]
    return []
