"""Exact Farkas certificates for linear entailment (found exactly, checked in rationals).

The premises ``C_j: a_j . x + b_j  op_j  0`` (``op`` in ``<=``, ``<``, ``==``) entail the
conclusion iff the system "premises and not(conclusion)" is infeasible. By Motzkin's
transposition theorem that holds iff there are multipliers ``lambda_j`` (``>= 0`` for
inequalities, free for equalities) with

    sum_j lambda_j a_j = 0,   sum_j lambda_j b_j >= 0,   and
    sum_j lambda_j b_j > 0  or  some strict constraint has lambda_j > 0.

**Rational coefficients** (every chain a user can type, and Theorems 1-3): the
multipliers solve an LP in *exact rational arithmetic* -- z3's simplex over the
rationals (``Optimize``, minimising ``sum |lambda_j|`` for a sparse, readable
certificate) with the normalisation ``sum lambda_j b_j + sum_{strict} lambda_j >= 1``. No
floating point is involved, so tiny or badly scaled coefficients (``1e-30``, ``1e-12``
next to ``1e12``) cannot lose a certificate, and "infeasible" is exact: no certificate
exists. **Irrational coefficients** (``sqrt(2)*y``): a floating-point LP (scipy HiGHS,
rows scaled to unit norm), rationalised or ``nsimplify``-ed; its "no" is not definite.

Either way the certificate is re-verified here in exact arithmetic (Fractions, or sympy
for irrational coefficients); only that check decides.
"""
from __future__ import annotations

import dataclasses
import time
from fractions import Fraction

import numpy as np
import sympy as sp
import z3
from scipy.optimize import linprog

from proofs_check import _linear, _rigorous
from proofs_check._numbers import TooLarge, fraction, z3_rational
from proofs_check._linear import Constraint
from proofs_check._results import Check

_DENOMINATORS = (10**3, 10**6, 10**9)
MAX_BITS = 20_000          # coefficients beyond this size are not handed to an LP
EXACT_TIMEOUT_S = 30.0     # the exact LP on the largest chains takes well under a second
WATCH = None               # the deadline of the running LP for a watcher (proofs_check._isolate), as in _smt


@dataclasses.dataclass(frozen=True)
class FarkasOutcome:
    """``status``: "certificate", "infeasible" (exact: no certificate exists), "none found"
    (the floating-point LP found none: not definite) or "inexact" (a candidate failed
    the exact check, or the exact LP timed out)."""

    status: str
    multipliers: dict  # label -> sympy Rational (summed per label), only for "certificate"
    detail: str = ""


def _fraction(v) -> Fraction | None:
    v = sp.sympify(v)
    return Fraction(int(v.p), int(v.q)) if v.is_Rational else None


def _rational_rows(constraints: list[Constraint]):
    """The constraints with Fraction coefficients, or ``None`` if one is irrational."""
    rows = []
    for c in constraints:
        coeffs = {a: _fraction(v) for a, v in c.coeffs.items()}
        const = _fraction(c.const)
        if const is None or any(v is None for v in coeffs.values()):
            return None
        for v in list(coeffs.values()) + [const]:
            if max(v.numerator.bit_length(), v.denominator.bit_length()) > MAX_BITS:
                raise ValueError(f"a coefficient has more than {MAX_BITS} bits")
        rows.append((coeffs, const))
    return rows


def _q(v: Fraction) -> z3.ArithRef:
    return z3_rational(v)


def _exact_lp(constraints: list[Constraint], rows, timeout_s: float):
    """Exact multipliers (Fractions) by z3's rational simplex; ``None`` if none exist."""
    lam = [z3.Real(f"lambda{j}") for j in range(len(rows))]
    size = [z3.Real(f"size{j}") for j in range(len(rows))]
    opt = z3.Optimize()
    opt.set("timeout", max(1, int(timeout_s * 1000)))
    by_atom: dict = {}
    for j, (c, (coeffs, _)) in enumerate(zip(constraints, rows)):
        opt.add(size[j] >= lam[j], size[j] >= -lam[j])
        if c.op != "==":
            opt.add(lam[j] >= 0)
        for a, v in coeffs.items():
            by_atom.setdefault(a, []).append(_q(v) * lam[j])
    for terms in by_atom.values():
        opt.add(z3.Sum(terms) == 0)
    total = z3.Sum([_q(const) * lam[j] for j, (_, const) in enumerate(rows)])
    strict = [lam[j] for j, c in enumerate(constraints) if c.strict]
    opt.add(total >= 0, total + (z3.Sum(strict) if strict else 0) >= 1)
    opt.minimize(z3.Sum(size))
    if WATCH is not None:
        WATCH.value = time.monotonic() + max(1, int(timeout_s * 1000)) / 1000
    try:
        result = opt.check()
    finally:
        if WATCH is not None:
            WATCH.value = 0.0
    if result == z3.unsat:
        return None
    if result == z3.unknown:
        raise TimeoutError(f"exact LP: z3 unknown ({opt.reason_unknown()})")
    m = opt.model()
    out = []
    for v in lam:
        try:
            out.append(fraction(m.eval(v, model_completion=True)))
        except TooLarge:
            raise TimeoutError("exact LP: multipliers too large") from None
    return out


def _exact_check_fractions(constraints: list[Constraint], rows, lam: list[Fraction]) -> str:
    """Empty string when ``lam`` is an exact Motzkin certificate (Fraction arithmetic), else why."""
    sums: dict = {}
    for c, (coeffs, _), l in zip(constraints, rows, lam):
        if c.op != "==" and l < 0:
            return f"negative multiplier {l} on inequality {c.label}"
        if l:
            for a, v in coeffs.items():
                sums[a] = sums.get(a, Fraction(0)) + l * v
    for a, total in sums.items():
        if total != 0:
            return f"coefficient of {a} is {total}, not 0"
    const = sum((l * b for (_, b), l in zip(rows, lam)), Fraction(0))
    strict = any(l > 0 for c, l in zip(constraints, lam) if c.strict)
    if not (const > 0 or (const == 0 and strict)):
        return f"constant {const} is not > 0 (and no strict premise is used)"
    return ""


def _certificate(constraints, exact) -> FarkasOutcome:
    out: dict = {}
    for c, x in zip(constraints, exact):
        if x != 0:
            v = sp.Rational(x.numerator, x.denominator) if isinstance(x, Fraction) else x
            out[c.label] = out.get(c.label, sp.Integer(0)) + v
    return FarkasOutcome("certificate", {k: v for k, v in out.items() if v != 0})


def farkas(constraints: list[Constraint], timeout_s: float = EXACT_TIMEOUT_S) -> FarkasOutcome:
    """Search and exactly verify a Motzkin certificate that ``constraints`` are infeasible.

    Args:
        constraints: premises, side conditions and the negated conclusion, all linear
            over the same atoms (see :mod:`proofs_check._linear`).

    Returns:
        :class:`FarkasOutcome`; ``multipliers`` maps each constraint label to its exact
        rational multiplier (zero multipliers omitted).

    Raises:
        ValueError: a coefficient too large for an LP.
    """
    rows = _rational_rows(constraints)
    if rows is None:
        return _farkas_float(constraints)
    try:
        lam = _exact_lp(constraints, rows, timeout_s)
    except TimeoutError as exc:
        return FarkasOutcome("inexact", {}, str(exc))
    if lam is None:
        return FarkasOutcome("infeasible", {}, "exact LP infeasible: no Farkas certificate exists")
    reason = _exact_check_fractions(constraints, rows, lam)
    if reason:
        return FarkasOutcome("inexact", {}, f"exact LP certificate did not verify: {reason}")
    return _certificate(constraints, lam)


# ---- irrational coefficients: floating-point LP, exact check in sympy -------------------------
def _matrix(constraints: list[Constraint]):
    atoms = sorted({a for c in constraints for a in c.coeffs}, key=sp.default_sort_key)
    a = np.array([[float(c.coeffs.get(x, 0)) for c in constraints] for x in atoms]).reshape(len(atoms), len(constraints))
    b = np.array([float(c.const) for c in constraints])
    return atoms, a, b


def _solve_lp(constraints: list[Constraint]):
    """Float multipliers from the LP (rows scaled to unit size), or ``None`` when it is infeasible."""
    _, a, b = _matrix(constraints)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a coefficient or constant is too large for the floating-point LP")
    scale = np.maximum(np.max(np.abs(np.vstack([a, b[None, :]])), axis=0), 1e-300)
    a, b = a / scale, b / scale   # constraint j divided by its largest coefficient
    m = len(constraints)
    free = np.array([c.op == "==" for c in constraints])
    strict = np.array([1.0 if c.strict else 0.0 for c in constraints])
    a_eq = np.hstack([a, -a * free]) if a.size else None
    b_eq = np.zeros(a.shape[0]) if a.size else None
    a_ub = np.vstack([np.hstack([-b, b * free]), np.hstack([-(b + strict), (b + strict) * free])])
    b_ub = np.array([0.0, -1.0])
    bounds = [(0, None)] * m + [(0, None) if f else (0, 0) for f in free]
    res = linprog(np.ones(2 * m), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status == 2:
        return None
    if res.status != 0:
        raise ValueError(f"linprog failed: {res.message}")
    return (res.x[:m] - res.x[m:]) / scale


def _exact_check(constraints: list[Constraint], lam: list[sp.Rational]) -> str:
    """Empty string when ``lam`` is an exact Motzkin certificate (sympy arithmetic, signs decided
    exactly or by rigorous enclosures), else the reason."""
    for c, l in zip(constraints, lam):
        if c.op != "==" and l < 0:
            return f"negative multiplier {l} on inequality {c.label}"
    try:
        atoms = {a for c in constraints for a in c.coeffs}
        for x in atoms:
            total = sum((l * c.coeffs.get(x, 0) for c, l in zip(constraints, lam)), sp.Integer(0))
            if _rigorous.sign(sp.expand(total)) != 0:
                return f"coefficient of {x} is {total}, not 0"
        const = _rigorous.sign(sp.expand(sum((l * c.const for c, l in zip(constraints, lam)), sp.Integer(0))))
    except _rigorous.Undecided as exc:
        return f"a sign could not be decided ({exc})"
    strict = any(l > 0 for c, l in zip(constraints, lam) if c.strict)
    if not (const > 0 or (const == 0 and strict)):
        return "the constant is not > 0 (and no strict premise is used)"
    return ""


def _farkas_float(constraints: list[Constraint]) -> FarkasOutcome:
    lam = _solve_lp(constraints)
    if lam is None:
        return FarkasOutcome("none found", {}, "floating-point LP infeasible (irrational coefficients)")
    reason = ""
    for exact in _candidates(constraints, lam):
        exact = [x if (c.op == "==" or x > 0) else sp.Integer(0) for c, x in zip(constraints, exact)]
        reason = _exact_check(constraints, exact)
        if not reason:
            return _certificate(constraints, exact)
    return FarkasOutcome("inexact", {}, f"LP certificate did not verify exactly: {reason}")


def _candidates(constraints: list[Constraint], lam):
    """Exact candidates for the float multipliers: rationals of growing denominators, then
    ``nsimplify`` over the irrational constants of the coefficients (such as ``sqrt(2)``)."""
    for den in _DENOMINATORS:
        yield [sp.Rational(Fraction(float(v)).limit_denominator(den)) for v in lam]
    numbers = [n for c in constraints for n in list(c.coeffs.values()) + [c.const]]
    irrational = sorted({a for n in numbers for a in sp.sympify(n).atoms(sp.Pow, sp.log, sp.exp, sp.NumberSymbol)
                         if a.is_number and not a.is_Rational}, key=sp.default_sort_key)
    if irrational:
        yield [sp.nsimplify(float(v), irrational, tolerance=1e-9) for v in lam]


# ---- the check of the report ------------------------------------------------------------------
def _negated_domain(d) -> list[Constraint]:
    """Constraints of ``not d`` for one domain condition of the conclusion."""
    if d is sp.false:
        return []
    neg = {sp.GreaterThan: sp.Lt, sp.StrictGreaterThan: sp.Le, sp.Unequality: sp.Eq,
           sp.LessThan: sp.Gt, sp.StrictLessThan: sp.Ge}[type(d)](d.lhs, d.rhs)
    return _linear.to_constraints(neg, "not(conclusion)")


def _with_sign_constraints(base: list, alternatives: list) -> tuple[list, list[str]]:
    """``base`` plus the sign constraints of every atom (of the premises and the alternatives), and
    the names of the non-linear atoms."""
    atoms = {a for c in base for a in c.coeffs}
    for alt in alternatives:
        atoms |= {a for c in alt for a in c.coeffs}
    return base + _linear.sign_constraints(atoms), sorted(str(a) for a in atoms if _linear.is_nonlinear_atom(a))


def farkas_check(subject: str, premises: list[tuple[str, object]], conclusion, goal_domain=(),
                 hypotheses=None, timeout_s: float = EXACT_TIMEOUT_S) -> Check:
    """Entailment by an exact Farkas certificate over monomial atoms (THEORY §5, §6 chains).

    Args:
        subject: name shown in the report.
        premises: ``(label, relation)`` pairs, side conditions included.
        conclusion: the relation to entail.
        goal_domain: the conclusion's domain conditions: each must be entailed too.
        hypotheses: the premises with their domains (:class:`proofs_check._smt.Hypothesis`);
            their domain conditions (but ``!=``) are used as further premises.
        timeout_s: limit of each exact LP.

    Returns:
        PASS with the multipliers (the conclusion, as ``lhs - rhs <= 0``, is the weighted
        sum of the premises); FAIL when the exact LP proves no certificate exists and
        every atom is a plain symbol (a linear chain: truly not entailed); N/A when the
        chain has non-linear atoms and no certificate over them (z3 decides); UNKNOWN
        when no certificate is found but that is not definite.
    """
    t0 = time.perf_counter()
    conditions = [(h.label, d) for h in hypotheses or () for d in h.conditions()]
    # a premise's "b != 0" is not a convex constraint: Farkas does without it, so its "no" is then not definite
    dropped = [d for _, d in conditions if isinstance(d, sp.Unequality)]
    try:
        base = [c for label, rel in premises for c in _linear.to_constraints(rel, label)]
        base += [c for label, d in conditions if not isinstance(d, sp.Unequality)
                 for c in _linear.to_constraints(d, f"{label} (domain)")]
        alternatives = _linear.negate(conclusion) + [_negated_domain(d) for d in goal_domain]
    except _linear.TooLarge as exc:
        return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact", f"not applicable: {exc}; z3 decides",
                     seconds=time.perf_counter() - t0)
    base, nonlinear = _with_sign_constraints(base, alternatives)
    certificates = []
    for alt in alternatives:
        try:
            outcome = farkas(base + alt, timeout_s)
        except ValueError as exc:   # e.g. a constant too large for an LP
            return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact",
                         f"not applicable: {exc}; z3 decides", seconds=time.perf_counter() - t0)
        if outcome.status != "certificate":
            if dropped and not nonlinear and outcome.status == "infeasible":
                return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact",
                             f"no certificate without the premises' domain conditions {[str(d) for d in dropped]} "
                             "(not linear constraints); z3 decides", seconds=time.perf_counter() - t0)
            return _farkas_negative(subject, outcome, nonlinear, time.perf_counter() - t0)
        certificates.append(outcome.multipliers)
    return _farkas_positive(subject, certificates, nonlinear, time.perf_counter() - t0)


def _farkas_negative(subject, outcome, nonlinear, seconds) -> Check:
    if nonlinear and outcome.status in ("infeasible", "none found"):
        return Check(subject, "entailment/farkas", "N/A", "farkas-lp+exact",
                     f"not applicable (non-linear): no certificate over the atoms {nonlinear}; z3 decides",
                     seconds=seconds)
    if outcome.status == "infeasible":
        return Check(subject, "entailment/farkas", "FAIL", "farkas-lp+exact",
                     "no Farkas certificate exists (linear chain, exact LP): not entailed", seconds=seconds)
    return Check(subject, "entailment/farkas", "UNKNOWN", "farkas-lp+exact", outcome.detail, seconds=seconds)


def _farkas_positive(subject, certificates, nonlinear, seconds) -> Check:
    shown: dict[str, str] = {}
    vacuous = False
    for i, mult in enumerate(certificates):
        mu = mult.pop("not(conclusion)", sp.Integer(0))
        vacuous |= mu == 0
        scale = 1 / mu if mu != 0 else sp.Integer(1)
        suffix = "" if len(certificates) == 1 else f"[{i}]"
        shown.update({f"{k}{suffix}": str(v * scale) for k, v in mult.items()})
    atoms = f" over monomial atoms {nonlinear}" if nonlinear else ""
    if vacuous:
        return Check(subject, "entailment/farkas", "FINDING", "farkas-lp+exact",
                     "premises are inconsistent: the conclusion follows vacuously" + atoms,
                     certificate=shown, seconds=seconds)
    return Check(subject, "entailment/farkas", "PASS", "farkas-lp+exact",
                 "conclusion = sum of multiplier * premise (verified in exact arithmetic)" + atoms,
                 certificate=shown, seconds=seconds)
