"""sympy -> z3 over the reals, by walking the tree (never through strings).

Encodings (see :mod:`proofs_check._smt` for how they are used):

* ``x**k`` (integer ``k >= 0``) as a product; ``x**-k`` as ``1 / x**k``;
* ``x**(p/q)`` as ``y**p`` for a fresh ``y`` with ``y >= 0, y**q == x`` wherever ``x >= 0``
  (the parser's convention: non-integer powers need a non-negative base), so ``sqrt(x)``
  is ``y >= 0, y*y == x``; a constant ``2**(1/2)`` is an exact algebraic number;
* ``exp`` / ``log`` terms as fresh reals (:class:`proofs_check._transcendental.ExpLogTable`);
* ``Abs`` as ``If``; other constants (``pi``) as fresh reals within rigorous enclosures;
* sign assumptions of sympy symbols (``positive``, ``nonnegative``) as labelled facts.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import sympy as sp
import z3

from proofs_check import _rigorous
from proofs_check._transcendental import ExpLogTable, rational

MAX_POWER = 256      # x**k is encoded as a k-fold product: keep it small
MAX_BITS = 20_000    # a constant larger than this is not handed to z3


class Untranslatable(ValueError):
    """An expression outside the fragment the z3 encoding supports."""


class Translator:
    """sympy -> z3 over the reals, collecting the auxiliary facts it needs.

    Auxiliary names start with ``!``, which no parsed or sympy symbol name can contain,
    so they never collide with a user's symbol (e.g. one called ``_root0``).
    """

    def __init__(self):
        self.vars: dict[str, z3.ArithRef] = {}
        self.symbols: dict[str, sp.Symbol] = {}
        self.signs: list[tuple[str, object]] = []   # (label, fact) from sympy assumptions
        self.aux: list = []                         # facts true for every real assignment
        self.table = ExpLogTable(self.expr)
        self._cache: dict = {}
        self._fresh = itertools.count()

    def symbol(self, sym: sp.Symbol) -> z3.ArithRef:
        if sym.name not in self.vars:
            v = self.vars[sym.name] = z3.Real(sym.name)
            self.symbols[sym.name] = sym
            for test, fact, text in ((sym.is_positive, v > 0, "> 0"), (sym.is_nonnegative, v >= 0, ">= 0"),
                                     (sym.is_negative, v < 0, "< 0")):
                if test:
                    self.signs.append((f"sign: {sym.name} {text}", fact))
                    break
        return self.vars[sym.name]

    def expr(self, e: sp.Expr) -> z3.ArithRef:
        if isinstance(e, sp.Symbol):
            return self.symbol(e)
        if e.is_Rational or e.is_Float:
            r = sp.Rational(e)
            if max(r.p.bit_length(), r.q.bit_length()) > MAX_BITS:
                raise Untranslatable(f"constant with more than {MAX_BITS} bits")
            return rational(Fraction(int(r.p), int(r.q)))
        hit = self._cache.get(e)
        if hit is None:
            hit = self._cache[e] = self._expr(e)
        return hit

    def _expr(self, e: sp.Expr) -> z3.ArithRef:
        if isinstance(e, sp.Add):
            return z3.Sum([self.expr(a) for a in e.args])
        if isinstance(e, sp.Mul):
            return z3.Product([self.expr(a) for a in e.args])
        if isinstance(e, sp.Pow):
            return self._pow(e.base, e.exp)
        if isinstance(e, (sp.exp, sp.log)) or e is sp.E:
            return self.table.term(e)
        if isinstance(e, sp.Abs):
            a = self.expr(e.args[0])
            return z3.If(a >= 0, a, -a)
        if e.is_number and not e.free_symbols:
            return self._constant(e)
        raise Untranslatable(f"cannot encode {e} ({type(e).__name__}) for z3")

    def _pow(self, base: sp.Expr, exp: sp.Expr) -> z3.ArithRef:
        if not exp.is_Rational:
            raise Untranslatable(f"non-numeric exponent in {base}**{exp}")
        b = self.expr(base)
        if exp.q != 1:
            root = z3.Real(f"!root{next(self._fresh)}")
            definition = z3.And(root >= 0, self._power(root, exp.q) == b)
            # defined for b >= 0 only: the definition is guarded by its domain
            self.aux.append(definition if not base.free_symbols else z3.Implies(b >= 0, definition))
            b, exp = root, sp.Integer(exp.p)
        if exp < 0:
            return 1 / self._power(b, -int(exp))
        return self._power(b, int(exp))

    @staticmethod
    def _power(b, k: int):
        if k > MAX_POWER:
            raise Untranslatable(f"power {k} > {MAX_POWER} is too large for the z3 encoding")
        return z3.RealVal(1) if k == 0 else z3.Product([b] * k) if k > 1 else b

    def _constant(self, c: sp.Expr) -> z3.ArithRef:
        """A transcendental constant (``pi``): a fresh real within a rigorous enclosure."""
        v = z3.Real(f"!const{next(self._fresh)}")
        try:
            lo, hi = _rigorous.enclose(c)
        except (_rigorous.Undecided, _rigorous.Undefined):
            raise Untranslatable(f"cannot enclose the constant {c}") from None
        self.aux += [v >= rational(lo), v <= rational(hi)]
        return v

    def relation(self, rel) -> z3.BoolRef:
        if rel is sp.true or rel is True:
            return z3.BoolVal(True)
        if rel is sp.false or rel is False:
            return z3.BoolVal(False)
        ops = {sp.LessThan: lambda a, b: a <= b, sp.StrictLessThan: lambda a, b: a < b,
               sp.GreaterThan: lambda a, b: a >= b, sp.StrictGreaterThan: lambda a, b: a > b,
               sp.Equality: lambda a, b: a == b, sp.Unequality: lambda a, b: a != b}
        op = ops.get(type(rel))
        if op is None:
            raise Untranslatable(f"cannot encode {rel} ({type(rel).__name__}) for z3")
        return op(self.expr(rel.lhs), self.expr(rel.rhs))

    @property
    def uses_functions(self) -> bool:
        return bool(self.table.terms)
