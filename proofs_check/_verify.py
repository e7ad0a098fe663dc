"""Verification of one theorem object: entailment two ways, necessity, consistency, ledger.

Reads the :class:`bounds.Theorem` objects themselves (never a re-typed copy):
``premises`` (with their events), ``conclusion``, ``side_conditions``,
``failure_probability``. The assumptions of the sympy symbols (``positive``,
``nonnegative``) are added as explicit sign constraints for both engines.
"""
from __future__ import annotations

import time

import sympy as sp

from proofs_check import _smt
from proofs_check._farkas import farkas_check
from proofs_check._ledger import check_ledger
from proofs_check._results import Check, TheoremResult

DEFAULT_TIMEOUT_S = 5.0


def _side(theorem) -> list:
    return [c for c in theorem.side_conditions if c is not sp.true]


def _outcome_check(subject: str, name: str, out: _smt.SmtOutcome, seconds: float, timeout_s: float,
                   negative_status: str = "FAIL") -> Check:
    if out.status == "unsat":
        return Check(subject, name, "PASS", "z3", "premises and not(conclusion) is unsat over the reals",
                     seconds=seconds)
    if out.status == "unknown":
        return Check(subject, name, "UNKNOWN", "z3", out.detail or f"z3 unknown (timeout {timeout_s} s)",
                     seconds=seconds)
    return Check(subject, name, negative_status, "z3",
                 "countermodel: premises hold, conclusion fails (confirmed in exact arithmetic)",
                 countermodel=out.countermodel, seconds=seconds)


def z3_check(subject: str, name: str, relations: list, conclusion, timeout_s: float,
             negative_status: str = "FAIL") -> Check:
    """``relations and not(conclusion)`` unsat -> PASS; a confirmed countermodel -> ``negative_status``;
    a model that cannot be confirmed in exact arithmetic -> UNKNOWN."""
    t0 = time.perf_counter()
    try:
        out = _smt.entails(relations, conclusion, timeout_s)
    except _smt.Untranslatable as exc:
        return Check(subject, name, "UNKNOWN", "z3", str(exc), seconds=time.perf_counter() - t0)
    return _outcome_check(subject, name, out, time.perf_counter() - t0, timeout_s, negative_status)


def consistency_check(subject: str, relations: list, timeout_s: float) -> Check:
    """The premises and side conditions have a real model (else entailment is vacuous)."""
    hyps = [_smt.Hypothesis(f"relations[{i}]", r) for i, r in enumerate(relations)]
    return problem_consistency(subject, _smt.Problem(hyps, timeout_s=timeout_s))[0]


def problem_consistency(subject: str, problem: _smt.Problem) -> tuple[Check, tuple]:
    """Consistency on the shared solver: ``(check, minimal inconsistent subset)``.

    FAIL names a minimal inconsistent subset (z3's unsat core, then minimised by deletion);
    PASS needs a model confirmed in exact arithmetic; else UNKNOWN.
    """
    t0 = time.perf_counter()
    out = problem.check(goal=False)
    if out.status == "unsat":
        core = problem.minimal_core(out.core)
        return Check(subject, "consistency", "FAIL", "z3",
                     f"premises contradict each other (every conclusion would follow vacuously); minimal "
                     f"inconsistent subset: {', '.join(core)}", seconds=time.perf_counter() - t0), core
    if out.status == "sat":
        return Check(subject, "consistency", "PASS", "z3", "premises and side conditions are satisfiable "
                     "(a model confirmed in exact arithmetic)", seconds=time.perf_counter() - t0), ()
    return Check(subject, "consistency", "UNKNOWN", "z3", f"consistency not decided: {out.detail}",
                 seconds=time.perf_counter() - t0), ()


def problem_entailment(subject: str, problem: _smt.Problem) -> tuple[Check, _smt.SmtOutcome]:
    """The z3 entailment check on the shared solver, with its outcome (core, countermodel)."""
    t0 = time.perf_counter()
    out = problem.check(goal=True)
    return _outcome_check(subject, "entailment/z3", out, time.perf_counter() - t0, problem.timeout_s), out


def problem_necessity(subject: str, problem: _smt.Problem, labels, core=None) -> list[Check]:
    """For each premise label: the chain without it does not entail the conclusion.

    One solver, one ``check(assumptions)`` per premise; a premise outside the unsat
    ``core`` of the entailment is superfluous without a query. A superfluous premise is
    a FINDING; a needed one PASSes with the confirmed countermodel.
    """
    out = []
    for label in labels:
        t0 = time.perf_counter()
        if core is not None and label not in core:
            out.append(Check(subject, f"necessity/{label}", "FINDING", "z3",
                             "superfluous: the unsat core of the entailment does not use it"))
            continue
        res = problem.check([a for a in problem.labels if a != label], goal=True)
        c = _outcome_check(subject, f"necessity/{label}", res, time.perf_counter() - t0, problem.timeout_s)
        if c.status == "PASS":  # still entailed without it
            c = Check(c.subject, c.name, "FINDING", "z3", "superfluous: entailed without this premise",
                      seconds=c.seconds)
        elif c.status == "FAIL":  # the countermodel shows it is needed
            c = Check(c.subject, c.name, "PASS", "z3", "needed: " + c.detail, countermodel=c.countermodel,
                      seconds=c.seconds)
        out.append(c)
    return out


def hypotheses(theorem) -> list:
    """Premises and side conditions of a theorem (or chain) as :class:`proofs_check._smt.Hypothesis`.

    Reads ``premises`` (``name``, ``relation``), ``side_conditions`` and, where the object
    has them, ``side_labels`` and ``domains`` (label -> domain as written; user chains).
    """
    domains = getattr(theorem, "domains", None) or {}
    out = [_smt.Hypothesis(p.name, p.relation, domains.get(p.name)) for p in theorem.premises]
    sides = _side(theorem)
    labels = getattr(theorem, "side_labels", None) or [f"side: {c}" for c in sides]
    out += [_smt.Hypothesis(label, c, domains.get(label)) for label, c in zip(labels, sides)]
    return out


def necessity_checks(theorem, timeout_s: float) -> list[Check]:
    """For each premise: the chain without it does not entail the conclusion (z3 countermodel).

    A premise whose removal keeps the entailment is reported as a FINDING (superfluous).
    """
    try:
        problem = _problem(theorem, timeout_s)
    except _smt.Untranslatable as exc:
        return [Check(theorem.name, f"necessity/{p.name}", "UNKNOWN", "z3", str(exc)) for p in theorem.premises]
    return problem_necessity(theorem.name, problem, [p.name for p in theorem.premises])


def _problem(theorem, timeout_s: float, deadline: float | None = None) -> _smt.Problem:
    domains = getattr(theorem, "domains", None) or {}
    return _smt.Problem(hypotheses(theorem), theorem.conclusion, domains.get("conclusion", ()), timeout_s, deadline)


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
    hyps = hypotheses(theorem)
    try:
        problem = _problem(theorem, timeout_s)
    except _smt.Untranslatable as exc:
        problem, reason = None, str(exc)
    farkas = farkas_check(theorem.name, [(h.label, h.relation) for h in hyps], theorem.conclusion,
                          goal_domain=problem.goal_domain if problem else (), hypotheses=hyps)
    if problem is None:
        checks = [Check(theorem.name, "consistency", "UNKNOWN", "z3", reason), farkas,
                  Check(theorem.name, "entailment/z3", "UNKNOWN", "z3", reason)]
        checks += [Check(theorem.name, f"necessity/{p.name}", "UNKNOWN", "z3", reason)
                   for p in theorem.premises] if necessity else []
        return TheoremResult(theorem.name, theorem.reference, tuple(checks + check_ledger(theorem)))
    consistency, _ = problem_consistency(theorem.name, problem)
    smt, outcome = problem_entailment(theorem.name, problem)
    checks = [consistency, farkas, smt] + _agreement(theorem.name, farkas, smt)
    if necessity:
        core = outcome.core if outcome.status == "unsat" else None
        checks += problem_necessity(theorem.name, problem, [p.name for p in theorem.premises], core)
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
