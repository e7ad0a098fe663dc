"""Exact Farkas certificates for linear entailment (found by LP, checked in rationals).

The premises ``C_j: a_j . x + b_j  op_j  0`` (``op`` in ``<=``, ``<``, ``==``) entail the
conclusion iff the system "premises and not(conclusion)" is infeasible. By Motzkin's
transposition theorem that holds iff there are multipliers ``lambda_j`` (``>= 0`` for
inequalities, free for equalities) with

    sum_j lambda_j a_j = 0,   sum_j lambda_j b_j >= 0,   and
    sum_j lambda_j b_j > 0  or  some strict constraint has lambda_j > 0.

``scipy.optimize.linprog`` finds a candidate with the normalisation
``sum lambda_j b_j + sum_{strict} lambda_j >= 1`` (minimising ``sum |lambda_j|`` for a
sparse, readable certificate); it is rationalised with ``Fraction.limit_denominator`` and
re-verified in exact sympy arithmetic. Only the exact check decides.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import sympy as sp
from scipy.optimize import linprog

from proofs_check._linear import Constraint

_DENOMINATORS = (10**3, 10**6, 10**9)


@dataclasses.dataclass(frozen=True)
class FarkasOutcome:
    """``status``: "certificate", "infeasible" (no certificate exists) or "inexact"."""

    status: str
    multipliers: dict  # label -> sympy Rational (summed per label), only for "certificate"
    detail: str = ""


def _matrix(constraints: list[Constraint]):
    atoms = sorted({a for c in constraints for a in c.coeffs}, key=sp.default_sort_key)
    a = np.array([[float(c.coeffs.get(x, 0)) for c in constraints] for x in atoms]).reshape(len(atoms), len(constraints))
    b = np.array([float(c.const) for c in constraints])
    return atoms, a, b


def _solve_lp(constraints: list[Constraint]):
    """Float multipliers from the LP, or ``None`` when the LP is infeasible."""
    _, a, b = _matrix(constraints)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("a coefficient or constant is too large for the floating-point LP")
    m = len(constraints)
    free = np.array([c.op == "==" for c in constraints])
    strict = np.array([1.0 if c.strict else 0.0 for c in constraints])
    # lambda = p - q, q only for free (equality) multipliers; variables [p, q].
    a_eq = np.hstack([a, -a * free]) if a.size else None
    b_eq = np.zeros(a.shape[0]) if a.size else None
    a_ub = np.vstack([np.hstack([-b, b * free]), np.hstack([-(b + strict), (b + strict) * free])])
    b_ub = np.array([0.0, -1.0])
    bounds = [(0, None)] * m + [(0, None) if f else (0, 0) for f in free]
    res = linprog(np.ones(2 * m), A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
                  bounds=bounds, method="highs")
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"linprog failed: {res.message}")
    return res.x[:m] - res.x[m:]


def _exact_check(constraints: list[Constraint], lam: list[sp.Rational]) -> str:
    """Empty string when ``lam`` is an exact Motzkin certificate, else the reason."""
    for c, l in zip(constraints, lam):
        if c.op != "==" and l < 0:
            return f"negative multiplier {l} on inequality {c.label}"
    atoms = {a for c in constraints for a in c.coeffs}
    for x in atoms:
        total = sum((l * c.coeffs.get(x, 0) for c, l in zip(constraints, lam)), sp.Integer(0))
        if not (total.is_Rational and total == 0) and sp.simplify(total) != 0:
            return f"coefficient of {x} is {total}, not 0"
    const = sp.simplify(sum((l * c.const for c, l in zip(constraints, lam)), sp.Integer(0)))
    strict = any(l > 0 for c, l in zip(constraints, lam) if c.strict)
    if not (const.is_positive or (const.is_zero and strict)):
        return f"constant {const} is not > 0 (and no strict premise is used)"
    return ""


def farkas(constraints: list[Constraint]) -> FarkasOutcome:
    """Search and exactly verify a Motzkin certificate that ``constraints`` are infeasible.

    Args:
        constraints: premises, side conditions and the negated conclusion, all linear
            over the same atoms (see :mod:`proofs_check._linear`).

    Returns:
        :class:`FarkasOutcome`; ``multipliers`` maps each constraint label to its exact
        rational multiplier (zero multipliers omitted).
    """
    lam = _solve_lp(constraints)
    if lam is None:
        return FarkasOutcome("infeasible", {}, "LP infeasible: no Farkas certificate exists")
    reason = ""
    for exact in _candidates(constraints, lam):
        exact = [x if (c.op == "==" or x > 0) else sp.Integer(0) for c, x in zip(constraints, exact)]
        reason = _exact_check(constraints, exact)
        if not reason:
            out: dict = {}
            for c, x in zip(constraints, exact):
                if x != 0:
                    out[c.label] = out.get(c.label, sp.Integer(0)) + x
            return FarkasOutcome("certificate", {k: v for k, v in out.items() if v != 0})
    return FarkasOutcome("inexact", {}, f"LP certificate did not verify exactly: {reason}")


def _candidates(constraints: list[Constraint], lam):
    """Exact candidates for the float multipliers: rationals of growing denominators, then
    (when the coefficients hold irrational constants such as ``sqrt(2)``) ``nsimplify``
    over those constants."""
    for den in _DENOMINATORS:
        yield [sp.Rational(Fraction(float(v)).limit_denominator(den)) for v in lam]
    numbers = [n for c in constraints for n in list(c.coeffs.values()) + [c.const]]
    irrational = sorted({a for n in numbers for a in sp.sympify(n).atoms(sp.Pow, sp.log, sp.NumberSymbol)
                         if a.is_number and not a.is_Rational}, key=sp.default_sort_key)
    if irrational:
        yield [sp.nsimplify(float(v), irrational, tolerance=1e-9) for v in lam]
