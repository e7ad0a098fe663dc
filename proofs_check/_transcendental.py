"""exp and log for z3: fresh reals plus the lemmas a person uses, instantiated for the chain's terms.

**Normal form.** Every ``exp(a)`` of the (sympy-simplified) chain is a real ``E_a``; every
``log(u)`` is a real ``L_u``. sympy already rewrites ``1/exp(x) -> exp(-x)``,
``exp(log(y)) -> y``, ``log(exp(x)) -> x``, ``exp(x + log(y)) -> y exp(x)`` (the parser kept
the domains these rewrites drop). A log term is one more row of the *exp table*: since
``exp(L_u) = u`` and ``exp(-L_u) = 1/u`` (for ``u > 0``), the table holds the pairs
``(a, E_a)``, ``(L_u, u)``, ``(-L_u, 1/u)`` and ``(0, 1)``, and every lemma about exp over the
table is a lemma about log too.

**Lemmas** (all valid over the reals, each guarded by the domain of its rows):

* ``exp(t) > 0`` and ``exp(t) >= 1 + t`` for every row (so ``log u <= u - 1`` and
  ``log u >= 1 - 1/u``);
* strict monotonicity for every pair of rows: ``t < s  <=>  exp(t) < exp(s)`` (with the
  row ``(0, 1)``: ``x > 0 <=> exp(x) > 1``; with a log row: ``x <= log y <=> exp(x) <= y``);
* additivity: ``E_a E_b = E_(a+b)`` when ``a + b`` is (the argument of) another term,
  ``E_a E_(-a) = 1``;
* log of products, quotients and powers: ``log(c prod b_k^e_k) = log c + sum e_k log b_k``
  when every ``b_k > 0`` (``log(2/delta) = log 2 - log delta``); positive rational constants
  are split into primes (``log 40 = 3 log 2 + log 5``);
* constant terms (``log(40)``, ``exp(1)``, ``pi``) get rigorous rational enclosures
  (:func:`proofs_check._rigorous.enclose`, outward rounding at 128 bits).

**Refinement** (:meth:`ExpLogTable.refine`): a z3 model may give a term a value its
function cannot take; then tangent and monotone point lemmas at the model's point (with
rigorous enclosures) cut it off, and z3 is asked again. Issue 7.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import sympy as sp
import z3

from proofs_check import _rigorous
from proofs_check._numbers import TooLarge, fraction, z3_rational

MAX_PRIME = 1000          # positive rational constants are split into primes up to this size
MAX_TABLE = 200           # rows of the exp table (pairwise lemmas: MAX_TABLE^2 / 2)


def rational(v: Fraction) -> z3.ArithRef:
    return z3_rational(v)


@dataclasses.dataclass(frozen=True)
class Row:
    """``value = exp(arg)`` wherever ``guard`` holds."""

    arg: object
    value: object
    guard: object


@dataclasses.dataclass
class _Term:
    kind: str              # "exp" or "log"
    atom: sp.Expr          # exp(a) or log(u)
    var: object            # the z3 real standing for it
    inner: object          # z3 term of a (exp) or u (log)


class ExpLogTable:
    """The exp/log terms met while translating, and the lemmas about them.

    Args:
        translate: the translator's ``expr`` (sympy -> z3), used for arguments and for the
            terms the lemmas introduce (``1/u``, ``log`` of a factor).
    """

    def __init__(self, translate):
        self.translate = translate
        self.terms: dict[sp.Expr, _Term] = {}

    # -- terms --------------------------------------------------------------------------
    def term(self, atom: sp.Expr) -> z3.ArithRef:
        """The z3 real standing for ``exp(a)`` / ``log(u)`` (one per distinct sympy term)."""
        hit = self.terms.get(atom)
        if hit is not None:
            return hit.var
        kind = "log" if isinstance(atom, sp.log) else "exp"
        inner = self.translate(atom.args[0] if atom is not sp.E else sp.Integer(1))
        var = z3.Real(f"!{kind}{len(self.terms)}")
        self.terms[atom] = _Term(kind, atom, var, inner)
        return var

    def rows(self) -> list[Row]:
        out = [Row(z3.RealVal(0), z3.RealVal(1), z3.BoolVal(True))]
        for t in list(self.terms.values()):
            if t.kind == "exp":
                out.append(Row(t.inner, t.var, z3.BoolVal(True)))
            else:
                positive = t.inner > 0
                out.append(Row(t.var, t.inner, positive))
                out.append(Row(-t.var, self.translate(1 / t.atom.args[0]), positive))
        return out

    # -- lemmas -------------------------------------------------------------------------
    def lemmas(self) -> list:
        """Every lemma of the module docstring, for the terms collected so far."""
        out = self._log_products()          # may add terms: first
        out += self._constant_bounds()
        rows = self.rows()[:MAX_TABLE]
        for r in rows[1:]:
            out.append(z3.Implies(r.guard, z3.And(r.value > 0, r.value >= 1 + r.arg)))
        for i, r in enumerate(rows):
            for s in rows[i + 1:]:
                out.append(z3.Implies(z3.And(r.guard, s.guard),
                                      z3.And((r.arg < s.arg) == (r.value < s.value),
                                             (s.arg < r.arg) == (s.value < r.value))))
        return out + self._exp_sums()

    def _exp_sums(self) -> list:
        exps = [(sp.expand(t.atom.args[0] if t.atom is not sp.E else 1), t.var)
                for t in self.terms.values() if t.kind == "exp"]
        index = {a: v for a, v in exps}
        out = []
        for i, (a, va) in enumerate(exps):
            for b, vb in exps[i:]:
                total = sp.expand(a + b)
                if total == 0:
                    out.append(va * vb == 1)
                elif total in index:
                    out.append(va * vb == index[total])
        return out

    def _log_products(self) -> list:
        out = []
        for t in [t for t in self.terms.values() if t.kind == "log"]:
            split = _factors(t.atom.args[0])
            if split is None:
                continue
            const, factors = split
            guard = [self.translate(b) > 0 for b, _ in factors]
            total = [self.translate(sp.log(const))] if const != 1 else []
            total += [self.translate(sp.Rational(k) * sp.log(b)) for b, k in factors]
            out.append(z3.Implies(z3.And(*guard), t.var == z3.Sum(total) if total else t.var == 0))
        return out

    def _constant_bounds(self) -> list:
        out = []
        for t in self.terms.values():
            if not t.atom.free_symbols:
                lo, hi = _rigorous.enclose(t.atom)
                out += [t.var >= rational(lo), t.var <= rational(hi)]
        return out

    # -- refinement ---------------------------------------------------------------------
    def refine(self, model) -> list:
        """Lemmas excluding ``model``'s wrong values of exp/log terms (empty: nothing to refine)."""
        out = []
        for t in list(self.terms.values()):
            x = _bounds(model.eval(t.inner, model_completion=True))
            y = _bounds(model.eval(t.var, model_completion=True))
            if x is None or y is None:
                continue
            try:
                out += (self._refine_exp if t.kind == "exp" else self._refine_log)(t, x, y)
            except TooLarge:   # exp of a huge model value: no lemma (z3 may answer unknown)
                continue
        return out

    @staticmethod
    def _refine_exp(t: _Term, x, y) -> list:
        (a_lo, a_hi), (e_lo, e_hi) = x, y
        out = []
        try:
            _, top = _rigorous.enclose(sp.exp(_q(a_hi)))
            bottom, _ = _rigorous.enclose(sp.exp(_q(a_lo)))
        except (_rigorous.Undecided, _rigorous.Undefined):
            return []
        if e_lo > top:      # too large: exp(a) <= exp(a_hi) for a <= a_hi
            out.append(z3.Implies(t.inner <= rational(a_hi), t.var <= rational(top)))
        if e_hi < bottom:   # too small: monotone point and the tangent at a_lo
            out.append(z3.Implies(t.inner >= rational(a_lo), t.var >= rational(bottom)))
            out.append(t.var >= rational(bottom) * (1 + t.inner - rational(a_lo)))
        return out

    @staticmethod
    def _refine_log(t: _Term, x, y) -> list:
        (u_lo, u_hi), (l_lo, l_hi) = x, y
        if u_lo <= 0:
            return []
        try:
            _, top = _rigorous.enclose(sp.log(_q(u_hi)))
            bottom, _ = _rigorous.enclose(sp.log(_q(u_lo)))
        except (_rigorous.Undecided, _rigorous.Undefined):
            return []
        out = []
        if l_lo > top:      # too large: the tangent at u_hi lies above log
            out.append(z3.Implies(t.inner > 0, t.var <= rational(top) + (t.inner - rational(u_hi)) / rational(u_hi)))
            out.append(z3.Implies(z3.And(t.inner > 0, t.inner <= rational(u_hi)), t.var <= rational(top)))
        if l_hi < bottom:   # too small: monotone point
            out.append(z3.Implies(t.inner >= rational(u_lo), t.var >= rational(bottom)))
        return out


def _q(v: Fraction) -> sp.Rational:
    return sp.Rational(v.numerator, v.denominator)


def _bounds(v) -> tuple[Fraction, Fraction] | None:
    """Rational bounds of a z3 model value (exact for rationals, 40 digits for algebraic)."""
    try:
        if z3.is_rational_value(v):
            f = fraction(v)
            return f, f
        if z3.is_algebraic_value(v):
            f = fraction(v.approx(40))
            eps = Fraction(1, 10**40)
            return f - eps, f + eps
    except TooLarge:
        return None
    return None


def _factors(u: sp.Expr):
    """``u = c * prod b_k^e_k`` with rational ``c > 0``, rational ``e_k`` (``None`` if nothing to split).

    Positive rational constants are split into primes up to :data:`MAX_PRIME`.
    """
    if not u.free_symbols:
        if not u.is_Rational or u <= 0:
            return None
        primes = {**sp.factorint(int(u.p), limit=MAX_PRIME)}
        for p, k in sp.factorint(int(u.q), limit=MAX_PRIME).items():
            primes[p] = primes.get(p, 0) - k
        if any(p > MAX_PRIME for p in primes) or sum(abs(k) for k in primes.values()) < 2:
            return None
        return sp.Integer(1), [(sp.Integer(p), sp.Integer(k)) for p, k in primes.items()]
    const, rest = u.as_coeff_Mul()
    if not const.is_Rational or const <= 0:
        return None
    factors = []
    for f in sp.Mul.make_args(rest):
        base, k = f.as_base_exp()
        if not k.is_Rational:
            return None
        factors.append((base, k))
    if const == 1 and len(factors) == 1 and factors[0][1] == 1:
        return None
    return const, factors
