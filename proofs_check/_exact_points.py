"""Exact arithmetic at z3's points: what confirming a countermodel needs (:mod:`proofs_check._smt`).

Linear relations with rational coefficients are compiled once and evaluated with integer
numerators and denominators; model values become ``Fraction`` or sympy ``CRootOf``.
"""
from __future__ import annotations

from fractions import Fraction

import sympy as sp
import z3

from proofs_check import _rigorous
from proofs_check._linear import MAX_TERMS, expanded_size
from proofs_check._numbers import TooLarge, fraction
from proofs_check._translate import Untranslatable


def _compile_linear(rel):
    """``(coeffs, const, op)`` for ``sum coeffs[name] * name + const  op  0`` when ``rel`` is linear
    with rational coefficients (the fast, exact Fraction path of confirmation), else None."""
    ops = {sp.LessThan: "<=", sp.StrictLessThan: "<", sp.GreaterThan: ">=", sp.StrictGreaterThan: ">",
           sp.Equality: "=="}
    op = ops.get(type(rel))
    if op is None:
        return None
    diff = sp.sympify(rel.lhs - rel.rhs)
    if not diff.free_symbols:
        return ([], (int(diff.p), int(diff.q)), op) if diff.is_Rational else None
    if not diff.is_polynomial() or diff.has(sp.exp, sp.log, sp.Abs):
        return None
    if expanded_size(diff) > MAX_TERMS:   # no expansion beyond the limit (a product of sums is not linear anyway)
        return None
    try:
        poly = sp.Poly(diff, *sorted(diff.free_symbols, key=lambda x: x.name))
    except sp.polys.polyerrors.PolynomialError:
        return None
    if poly.total_degree() > 1 or not all(c.is_Rational for c in poly.coeffs()):
        return None
    coeffs, const = [], (0, 1)
    for monom, c in poly.terms():
        if sum(monom) == 0:
            const = (int(c.p), int(c.q))
        else:
            coeffs.append((poly.gens[monom.index(1)].name, int(c.p), int(c.q)))
    return coeffs, const, op


def _linear_holds(compiled, env) -> bool:
    """Exact sign of a compiled linear form at ``env`` (integer numerator / denominator, no gcd)."""
    coeffs, (num, den), op = compiled
    for name, p, q in coeffs:
        v = env[name]
        if not isinstance(v, Fraction):
            raise _rigorous.Undecided("an irrational value in a linear relation")
        vp, vq = v.numerator * p, v.denominator * q
        num, den = num * vq + vp * den, den * vq
    s = (num > 0) - (num < 0)   # den > 0 throughout
    return {"<=": s <= 0, "<": s < 0, ">=": s >= 0, ">": s > 0, "==": s == 0}[op]


def _visible(point: dict) -> dict:
    """The countermodel without auxiliary names (``!...``), sorted."""
    return dict(sorted((k, v) for k, v in point.items() if not k.startswith("!")))


def _differs(a, b) -> bool:
    if b is None:
        return True
    if isinstance(a, Fraction) and isinstance(b, Fraction):
        return a != b
    return sp.sympify(a) != sp.sympify(b)


def _sign_ok(sym: sp.Symbol, v) -> bool:
    try:
        s = _rigorous.sign(v)
    except _rigorous.Undecided:
        return False
    return not ((sym.is_positive and s <= 0) or (sym.is_nonnegative and s < 0) or (sym.is_negative and s >= 0))


def _exact(v):
    """A z3 model value as an exact number: Fraction, or sympy ``CRootOf`` for an irrational algebraic."""
    if z3.is_rational_value(v):
        try:
            return fraction(v)
        except TooLarge:
            raise Untranslatable("a model value is too large to confirm") from None
    if z3.is_algebraic_value(v):
        x = sp.Symbol("x")
        coeffs = [int(str(c)) for c in v.poly()]   # ascending degree
        poly = sp.Poly(list(reversed(coeffs)), x)
        return sp.CRootOf(poly, v.index() - 1)
    raise Untranslatable(f"unexpected model value {v}")


# ---- the historical entry points (kept for the API and the tests) --------------------------
