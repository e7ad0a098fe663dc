"""Exact and rigorous evaluation of sympy expressions (for countermodels and constants).

Two number kinds, never floating point:

* **exact**: :class:`fractions.Fraction` (fast path) or an exact sympy constant
  (``sqrt(2)``, ``exp(3/2)``, ``CRootOf(...)``); sympy's automatic simplification decides
  structural identities such as ``exp(3/2) - exp(3/2) = 0``;
* **rigorous enclosures**: mpmath ``iv`` intervals (outward rounding) at 128 to 2048 bits,
  turned into exact rational end points.

A sign is *decided* (exactly, or by an enclosure that excludes 0) or the evaluation
raises :class:`Undecided`; outside the domain of sqrt/log/power/division it raises
:class:`Undefined`. Nothing here rounds to the nearest float, so a countermodel that
passes :func:`holds` is real. THEORY §3-§6 chains; issue 7.
"""
from __future__ import annotations

import contextlib
from fractions import Fraction

import sympy as sp
from mpmath import iv
from mpmath.libmp import to_rational

PRECISIONS = (128, 512, 2048)   # bits tried, in order, to decide a sign
MAX_VALUE_BITS = 200_000        # exact values larger than this are not computed (Undecided)
MAX_EXP_ARGUMENT = 10**6        # |x| beyond which exp(x) is not enclosed (Undecided)
MAX_EXACT_EXP_ARGUMENT = 10**4  # |x| beyond which a countermodel's exp(x) is not decided
MAX_RADICALS = 4                # distinct radicals for an exact zero test (minimal polynomial degree <= 2^4 * ...)


class Undefined(ValueError):
    """The point lies outside the domain (log of a non-positive number, ...)."""


class Undecided(ValueError):
    """The value or sign could not be decided rigorously (too close to 0, too large)."""


@contextlib.contextmanager
def _precision(bits: int):
    old = iv.prec
    iv.prec = bits
    try:
        yield
    finally:
        iv.prec = old


def _ends(box) -> tuple[Fraction, Fraction]:
    """Exact rational end points of an mpmath interval."""
    lo, hi = box._mpi_
    try:
        return Fraction(*to_rational(lo)), Fraction(*to_rational(hi))
    except (ValueError, OverflowError, TypeError):
        raise Undecided("interval end point is infinite or not a number") from None


def _positive_box(box, what) -> None:
    lo, hi = _ends(box)
    if hi <= 0:
        raise Undefined(f"{what} of a non-positive number")
    if lo <= 0:
        raise Undecided(f"sign of the argument of {what} not decided")


def _enclose(e: sp.Expr):
    """An mpmath interval containing the constant ``e`` (at the current ``iv.prec``)."""
    if e.is_Rational:
        return iv.mpf(int(e.p)) / iv.mpf(int(e.q))
    if isinstance(e, sp.Add):
        out = iv.mpf(0)
        for a in e.args:
            out = out + _enclose(a)
        return out
    if isinstance(e, sp.Mul):
        out = iv.mpf(1)
        for a in e.args:
            out = out * _enclose(a)
        return out
    if isinstance(e, sp.Pow):
        return _enclose_pow(e.base, e.exp)
    if isinstance(e, sp.exp):
        arg = _enclose(e.args[0])
        if max(abs(x) for x in _ends(arg)) > MAX_EXP_ARGUMENT:
            raise Undecided("exp argument too large to enclose")
        return iv.exp(arg)
    if isinstance(e, sp.log):
        arg = _enclose(e.args[0])
        _positive_box(arg, "log")
        return iv.log(arg)
    if isinstance(e, sp.Abs):
        return abs(_enclose(e.args[0]))
    if e is sp.E:
        return iv.e
    if e is sp.pi:
        return iv.pi
    if isinstance(e, sp.CRootOf):   # a real root: sympy refines its isolating interval to within dx
        k = iv.prec + 8
        dx = sp.Rational(1, 2**k)
        r = e.eval_rational(dx=dx, dy=dx)
        return iv.mpf(int(r.p)) / iv.mpf(int(r.q)) + iv.mpf([-1, 1]) / iv.mpf(2**k)
    raise Undecided(f"cannot enclose a {type(e).__name__}")


def _enclose_pow(base: sp.Expr, exp: sp.Expr):
    if not exp.is_Rational:
        raise Undecided("non-numeric exponent")
    b = _enclose(base)
    if exp.q == 1:
        if exp < 0:
            lo, hi = _ends(b)
            if lo == hi == 0:
                raise Undefined("division by zero")
            if lo <= 0 <= hi:
                raise Undecided("divisor not separated from 0")
        return b ** int(exp)
    lo, hi = _ends(b)
    if hi < 0 or (hi == 0 and exp < 0):
        raise Undefined("non-integer power of a negative number (or of 0, to a negative power)")
    if lo <= 0:
        if lo == hi == 0:
            return iv.mpf(0)
        raise Undecided("sign of the base of a non-integer power not decided")
    return iv.exp(iv.log(b) * (iv.mpf(int(exp.p)) / iv.mpf(int(exp.q))))


def enclose(e: sp.Expr, bits: int = PRECISIONS[0]) -> tuple[Fraction, Fraction]:
    """Rational bounds ``lo <= e <= hi`` of a constant sympy expression, rigorously.

    Raises:
        Undefined: the constant is not a real number (``log(-1)``, ``(-8)^(1/3)``).
        Undecided: too large, or a sign inside it could not be decided.

    Example:
        >>> lo, hi = enclose(sp.log(40))
        >>> lo < hi < sp.Rational(37, 10)
        True
    """
    if e.free_symbols:
        raise ValueError("e must be a constant (no symbols).")
    if e.is_Rational:
        v = Fraction(int(e.p), int(e.q))
        return v, v
    with _precision(bits):
        return _ends(_enclose(e))


def sign(v) -> int:
    """The sign (-1, 0 or 1) of an exact value, decided exactly or by enclosures.

    Raises:
        Undecided: the enclosures at every precision of :data:`PRECISIONS` contain 0 and
            the value is not structurally (or, if algebraic, provably) zero.
    """
    if isinstance(v, Fraction):
        return (v > 0) - (v < 0)
    if v.is_Rational:
        return (v.p > 0) - (v.p < 0)
    if v == 0:
        return 0
    for bits in PRECISIONS:
        try:
            lo, hi = enclose(v, bits)
        except Undecided:
            continue
        if lo > 0:
            return 1
        if hi < 0:
            return -1
    radicals = {p for p in v.atoms(sp.Pow) if not p.exp.is_Integer} | v.atoms(sp.CRootOf)
    if not v.has(sp.exp, sp.log, sp.E, sp.pi) and len(radicals) <= MAX_RADICALS:
        try:   # algebraic: zero iff its minimal polynomial is x (exact; bounded degree)
            x = sp.Dummy("x")
            if sp.minimal_polynomial(v, x) == x:
                return 0
        except (NotImplementedError, ValueError):
            pass
    raise Undecided("a sign could not be decided (the value is within 2^-2048 of 0)")


def _exp(a):
    """``exp(a)`` exactly; sympy's own simplification (``exp(k log b) -> b^k``) only for small
    rationals (with a huge ``k`` it would search huge roots)."""
    if isinstance(a, Fraction):
        return sp.exp(_sym(a))
    small = all(abs(r.p) < 2**64 and r.q < 2**64 for r in a.atoms(sp.Rational))
    return sp.exp(a, evaluate=small)


def _sym(v):
    return sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else v


def _exact_power(b: Fraction, k: Fraction):
    """``b ** k`` as a Fraction when exact (``k`` rational, ``b > 0`` if not integer), else sympy."""
    if k.denominator == 1:
        if max(b.numerator.bit_length(), b.denominator.bit_length()) * abs(k.numerator) > MAX_VALUE_BITS:
            raise Undecided("exact power too large")
        return b ** int(k)
    q = k.denominator
    num, den = sp.integer_nthroot(b.numerator, q), sp.integer_nthroot(b.denominator, q)
    if num[1] and den[1]:
        return _exact_power(Fraction(int(num[0]), int(den[0])), Fraction(k.numerator))
    return _sym(b) ** sp.Rational(k.numerator, k.denominator)


class Evaluator:
    """Exact values of the sub-expressions of relations at one point (memoised).

    Args:
        env: symbol name -> exact value (Fraction, or an exact sympy constant).
    """

    def __init__(self, env):
        self.env = env
        self.memo: dict = {}

    def value(self, e: sp.Expr):
        """The exact value of ``e`` (Fraction or exact sympy constant).

        Raises:
            Undefined: a sqrt/log/power/division of ``e`` is outside its domain here.
            Undecided: a sign needed to decide the domain could not be decided.
        """
        hit = self.memo.get(e)
        if hit is None:
            hit = self.memo[e] = self._value(e)
        return hit

    def _value(self, e):
        if e.is_Symbol:
            if e.name not in self.env:
                raise Undecided(f"no value for {e.name}")
            return self.env[e.name]
        if e.is_Rational:
            return Fraction(int(e.p), int(e.q))
        if isinstance(e, (sp.Add, sp.Mul)):
            vals = [self.value(a) for a in e.args]
            if all(isinstance(v, Fraction) for v in vals):
                out = vals[0]
                for v in vals[1:]:
                    out = out + v if isinstance(e, sp.Add) else out * v
                return out
            return (sp.Add if isinstance(e, sp.Add) else sp.Mul)(*[_sym(v) for v in vals])
        if isinstance(e, sp.Pow):
            return self._pow(e)
        if isinstance(e, sp.exp):
            a = self.value(e.args[0])
            lo, hi = (a, a) if isinstance(a, Fraction) else enclose(a)
            if max(abs(lo), abs(hi)) > MAX_EXACT_EXP_ARGUMENT:   # exp(exp(20)): not worth (nor safe) to decide
                raise Undecided("exp of a value beyond the exact range")
            return Fraction(1) if a == 0 else _exp(a)
        if isinstance(e, sp.log):
            a = self.value(e.args[0])
            if sign(a) <= 0:
                raise Undefined("log of a non-positive number")
            return Fraction(0) if a == 1 else sp.log(_sym(a))
        if isinstance(e, sp.Abs):
            a = self.value(e.args[0])
            return -a if sign(a) < 0 else a
        if e.is_number and not e.free_symbols:
            return e
        raise Undecided(f"cannot evaluate {type(e).__name__}")

    def _pow(self, e: sp.Pow):
        if not e.exp.is_Rational:
            raise Undecided("non-numeric exponent")
        b = self.value(e.base)
        k = Fraction(int(e.exp.p), int(e.exp.q))
        s = sign(b)
        if k.denominator != 1 and s < 0:
            raise Undefined("non-integer power of a negative number")
        if k < 0 and s == 0:
            raise Undefined("division by zero")
        if s == 0:
            return Fraction(0)
        if isinstance(b, Fraction):
            return _exact_power(b, k)
        return _sym(b) ** sp.Rational(k.numerator, k.denominator)

    def holds(self, rel) -> bool:
        """Whether ``rel`` holds at the point, decided exactly (raises Undefined / Undecided)."""
        if rel is sp.true or rel is True:
            return True
        if rel is sp.false or rel is False:
            return False
        lhs, rhs = self.value(rel.lhs), self.value(rel.rhs)
        if isinstance(lhs, Fraction) and isinstance(rhs, Fraction):
            d = lhs - rhs
        else:
            d = _sym(lhs) - _sym(rhs)
        s = sign(d)
        return {sp.LessThan: s <= 0, sp.StrictLessThan: s < 0, sp.GreaterThan: s >= 0,
                sp.StrictGreaterThan: s > 0, sp.Equality: s == 0, sp.Unequality: s != 0}[type(rel)]


def exact_string(v) -> str:
    """``"p/q"`` for a Fraction, sympy's text for an exact constant (``"exp(3/2)"``)."""
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    return str(v)


def to_float(v) -> float | None:
    """The nearest float of an exact value, ``None`` beyond float range or if undecided."""
    try:
        if isinstance(v, Fraction):
            return float(v)
        lo, hi = enclose(v)
        return float((lo + hi) / 2)
    except (OverflowError, Undefined, Undecided, ValueError):
        return None
