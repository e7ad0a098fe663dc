"""SMT entailment with z3: ``premises and not(conclusion)`` unsatisfiable over the reals.

The sympy expressions are translated by walking the tree (``Add``, ``Mul``, ``Pow``,
``Rational``, ``Symbol``, ``exp``, ``log``), never through strings. Encodings:

* ``x**k`` (integer ``k >= 0``) as a product; ``x**-k`` as ``1 / x**k`` with ``x != 0``;
* ``x**(p/q)`` as ``y**p`` for a fresh ``y`` with ``y**q == x`` (``y >= 0``, ``x >= 0`` when
  ``q`` is even), so ``sqrt(x)`` is ``y >= 0, y*y == x``;
* ``exp`` and ``log`` as uninterpreted functions with sound axioms only: ``exp(a) > 0``,
  ``exp(a) >= 1 + a``, ``log(a) <= a - 1`` (``a > 0``), and monotonicity between every
  pair of occurrences. A countermodel that uses them may not extend to the true
  functions; it is then reported as not confirmed.

Sign assumptions of the sympy symbols (``positive``, ``nonnegative``) are stated as
explicit constraints, next to the theorem's ``side_conditions``.
"""
from __future__ import annotations

import dataclasses
import itertools
from fractions import Fraction

import sympy as sp
import z3


MAX_POWER = 256   # x**k is encoded as a k-fold product: keep it small


class Untranslatable(ValueError):
    """An expression outside the fragment the z3 encoding supports."""


class Translator:
    """sympy -> z3 over the reals, collecting the auxiliary constraints it needs.

    Auxiliary names start with ``!``, which no parsed or sympy symbol name can contain,
    so they never collide with a user's symbol (e.g. one called ``_root0``).
    """

    def __init__(self):
        self.vars: dict[str, z3.ArithRef] = {}
        self.aux: list = []      # facts that hold for every real assignment (guarded definitions)
        self.dom: list = []      # domain conditions (sqrt of >= 0, log of > 0, 1/x with x != 0)
        self._fresh = itertools.count()
        self._apps: dict[str, list] = {"exp": [], "log": []}
        self._funcs = {name: z3.Function(f"!{name}", z3.RealSort(), z3.RealSort()) for name in self._apps}

    def symbol(self, sym: sp.Symbol) -> z3.ArithRef:
        if sym.name not in self.vars:
            v = z3.Real(sym.name)
            self.vars[sym.name] = v
            if sym.is_positive:
                self.aux.append(v > 0)
            elif sym.is_nonnegative:
                self.aux.append(v >= 0)
            elif sym.is_negative:
                self.aux.append(v < 0)
        return self.vars[sym.name]

    def expr(self, e: sp.Expr) -> z3.ArithRef:
        if isinstance(e, sp.Symbol):
            return self.symbol(e)
        if e.is_Rational:
            return z3.RealVal(f"{e.p}/{e.q}")
        if e.is_Float:
            r = sp.Rational(e)
            return z3.RealVal(f"{r.p}/{r.q}")
        if isinstance(e, sp.Add):
            return z3.Sum([self.expr(a) for a in e.args])
        if isinstance(e, sp.Mul):
            return z3.Product([self.expr(a) for a in e.args])
        if isinstance(e, sp.Pow):
            return self._pow(e.base, e.exp)
        if isinstance(e, (sp.exp, sp.log)):
            return self._function(type(e).__name__, e.args[0])
        if isinstance(e, sp.NumberSymbol):
            return self._constant(e)
        raise Untranslatable(f"cannot encode {e} ({type(e).__name__}) for z3")

    def _pow(self, base: sp.Expr, exp: sp.Expr) -> z3.ArithRef:
        if not exp.is_Rational:
            raise Untranslatable(f"non-numeric exponent in {base}**{exp}")
        b = self.expr(base)
        if exp.q != 1:
            root = z3.Real(f"!root{next(self._fresh)}")
            if exp.q % 2 == 0:   # defined for b >= 0 only: the definition is guarded by its domain
                self.dom.append(b >= 0)
                self.aux.append(z3.Implies(b >= 0, z3.And(root >= 0, self._power(root, exp.q) == b)))
            else:
                self.aux.append(self._power(root, exp.q) == b)
            b, exp = root, sp.Integer(exp.p)
        if exp < 0:
            self.dom.append(b != 0)
            return 1 / self._power(b, -int(exp))
        return self._power(b, int(exp))

    @staticmethod
    def _power(b, k: int):
        if k > MAX_POWER:
            raise Untranslatable(f"power {k} > {MAX_POWER} is too large for the z3 encoding")
        return z3.RealVal(1) if k == 0 else z3.Product([b] * k) if k > 1 else b

    def _function(self, name: str, arg: sp.Expr) -> z3.ArithRef:
        a = self.expr(arg)
        app = self._funcs[name](a)
        if name == "exp":
            self.aux += [app > 0, app >= 1 + a]
        else:
            self.dom.append(a > 0)
            self.aux.append(z3.Implies(a > 0, app <= a - 1))
        for a2, app2 in self._apps[name]:  # both functions are increasing
            self.aux += [z3.Implies(a <= a2, app <= app2), z3.Implies(a2 <= a, app2 <= app)]
        self._apps[name].append((a, app))
        return app

    def _constant(self, c: sp.Expr) -> z3.ArithRef:
        v = z3.Real(f"!const{next(self._fresh)}")
        lo, hi = sp.Rational(sp.floor(c * 10**12)) / 10**12, sp.Rational(sp.ceiling(c * 10**12)) / 10**12
        self.aux += [v >= z3.RealVal(f"{lo.p}/{lo.q}"), v <= z3.RealVal(f"{hi.p}/{hi.q}")]
        return v

    def relation(self, rel) -> z3.BoolRef:
        if rel is sp.true:
            return z3.BoolVal(True)
        if rel is sp.false:
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
        return any(self._apps.values())


@dataclasses.dataclass(frozen=True)
class SmtOutcome:
    """``status``: "unsat" (entailed), "sat" (countermodel) or "unknown"."""

    status: str
    countermodel: dict  # symbol name -> Fraction (or float for irrational algebraic values)
    abstracted: bool    # the query used uninterpreted exp/log
    detail: str = ""


def _value(v) -> Fraction | float:
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    if z3.is_algebraic_value(v):
        return float(v.approx(20).as_fraction())
    return float(str(v).rstrip("?"))


def check_sat(assertions, translator: Translator, timeout_s: float) -> SmtOutcome:
    """Satisfiability of ``assertions`` (plus the translator's auxiliary constraints)."""
    solver = z3.Solver()
    solver.set("timeout", max(1, int(timeout_s * 1000)))
    solver.add(*translator.aux, *assertions)
    result = solver.check()
    if result == z3.unsat:
        return SmtOutcome("unsat", {}, translator.uses_functions)
    if result == z3.unknown:
        return SmtOutcome("unknown", {}, translator.uses_functions, solver.reason_unknown())
    model = solver.model()
    values = {name: _value(model.eval(v, model_completion=True)) for name, v in translator.vars.items()}
    return SmtOutcome("sat", dict(sorted(values.items())), translator.uses_functions)


def entails(premises, conclusion, timeout_s: float = 5.0) -> SmtOutcome:
    """Whether ``premises`` (sympy relations, side conditions included) entail ``conclusion``.

    Returns:
        "unsat": entailed; "sat": not entailed, with a countermodel (symbol name ->
        value) satisfying every premise and violating the conclusion; "unknown" on
        timeout or incompleteness (non-linear arithmetic).

    Raises:
        Untranslatable: an expression outside the supported fragment.
    """
    tr = Translator()
    encoded = [tr.relation(p) for p in premises]
    premise_domain, tr.dom = tr.dom, []
    goal = tr.relation(conclusion)
    # the conclusion's domain belongs to what must be proved: an ill-defined conclusion
    # (sqrt or log of a negative quantity) is not entailed, never vacuously "proved"
    return check_sat(encoded + premise_domain + [z3.Not(z3.And(*tr.dom, goal))], tr, timeout_s)


def satisfiable(relations, timeout_s: float = 5.0) -> SmtOutcome:
    """Whether the conjunction of ``relations`` has a real model (consistency check)."""
    tr = Translator()
    encoded = [tr.relation(p) for p in relations]
    return check_sat(encoded + tr.dom, tr, timeout_s)


def confirm(countermodel: dict, premises, conclusion) -> bool:
    """True when the values satisfy every premise and violate ``conclusion`` in sympy.

    Exact for rational values; irrational algebraic values are compared as floats, so
    a premise that holds with equality there may not confirm.
    """
    subs = {k: (sp.Rational(v.numerator, v.denominator) if isinstance(v, Fraction) else sp.Float(v, 30))
            for k, v in countermodel.items()}

    def holds(rel, undefined) -> bool | None:
        try:   # a comparison of non-real values (sqrt or log of a negative) raises TypeError
            value = rel.xreplace({s: subs[s.name] for s in rel.free_symbols if s.name in subs})
            if value in (sp.true, sp.false):
                return bool(value)
            return bool(value.doit())
        except TypeError:
            return undefined

    # an undefined premise is not confirmed; an undefined conclusion does not hold
    return all(holds(p, None) is True for p in premises) and holds(conclusion, False) is False
