"""Relations as linear constraints over monomial "atoms" (for the Farkas engine).

Every relation is normalised to ``e op 0`` with ``op`` in ``<=``, ``<``, ``==``; ``e`` is
expanded (products and integer powers only: ``exp(a + b)`` stays one atom) and written
``sum_k a_k x_k + b`` where each ``x_k`` is a distinct non-constant monomial (``eta*G_sq``,
``exp(-K*t**2)``, a plain symbol ...). Treating the monomials as independent unknowns is a
relaxation, so a Farkas certificate over atoms proves entailment over the reals; the
converse fails for chains whose proof needs products of premises (then the report says
the chain is non-linear and leaves the decision to z3).
"""
from __future__ import annotations

import dataclasses

import sympy as sp

from proofs_check._limits import LIMITS

Relational = sp.core.relational.Relational
MAX_TERMS = LIMITS.max_expanded_terms  # bound on the expanded size, so ((a+b)*(c+d))^k cannot exhaust memory


class TooLarge(ValueError):
    """The expansion into monomials would exceed :data:`MAX_TERMS` terms."""


def expanded_size(expr: sp.Expr) -> int:
    """An upper bound on the number of monomials of ``expand(expr)`` (no expansion done)."""
    if isinstance(expr, sp.Add):
        return sum(expanded_size(a) for a in expr.args)
    if isinstance(expr, sp.Mul):
        out = 1
        for a in expr.args:
            out *= expanded_size(a)
        return out
    if isinstance(expr, sp.Pow) and expr.exp.is_Integer and expr.exp > 1:
        return expanded_size(expr.base) ** int(expr.exp)
    return 1


@dataclasses.dataclass(frozen=True)
class Constraint:
    """``sum_k coeffs[x_k] * x_k + const  op  0`` with ``op`` in ``<=``, ``<``, ``==``."""

    label: str
    coeffs: dict
    const: sp.Expr
    op: str

    @property
    def strict(self) -> bool:
        return self.op == "<"


def normalise(rel, label: str) -> list[tuple[sp.Expr, str]]:
    """``rel`` as a list of ``(e, op)`` meaning ``e op 0`` (``Eq`` is one ``==``).

    ``True`` gives no constraint, ``False`` the contradiction ``1 <= 0``.

    Raises:
        ValueError: ``!=`` (not a convex constraint) or not a relation.
    """
    if rel is sp.true:
        return []
    if rel is sp.false:
        return [(sp.Integer(1), "<=")]
    kinds = {sp.LessThan: "<=", sp.StrictLessThan: "<", sp.GreaterThan: ">=",
             sp.StrictGreaterThan: ">", sp.Equality: "=="}
    kind = kinds.get(type(rel))
    if kind is None:
        raise ValueError(f"{label} == {rel}, must be a relation <=, <, >=, >, = (not != or a boolean).")
    diff = rel.lhs - rel.rhs
    if kind in (">=", ">"):
        return [(-diff, kind.replace(">", "<"))]
    return [(diff, kind)]


def linear_form(expr: sp.Expr) -> tuple[dict, sp.Expr]:
    """``expr = sum_k coeffs[x_k] x_k + const`` over monomial atoms ``x_k``.

    Example:
        >>> a, b = sp.symbols("a b", real=True)
        >>> coeffs, const = linear_form(3*a*(b - 1) + 2)
        >>> coeffs == {a*b: 3, a: -3}, const
        (True, 2)
    """
    size = expanded_size(expr)
    if size > MAX_TERMS:
        raise TooLarge(f"expanding {str(expr)[:60]}... gives up to {size} terms (limit {MAX_TERMS})")
    expanded = sp.expand(expr, power_exp=False, power_base=False, log=False)
    coeffs: dict = {}
    const = sp.Integer(0)
    for term in sp.Add.make_args(expanded):
        coeff, mono = term.as_independent(*term.free_symbols, as_Add=False)
        if mono == 1:
            const += coeff
        else:
            coeffs[mono] = coeffs.get(mono, sp.Integer(0)) + coeff
    return {k: v for k, v in coeffs.items() if v != 0}, const


def to_constraints(rel, label: str) -> list[Constraint]:
    """The :class:`Constraint` s of one relation (see :func:`normalise`)."""
    out = []
    for expr, op in normalise(rel, label):
        coeffs, const = linear_form(expr)
        out.append(Constraint(label, coeffs, const, op))
    return out


def is_nonlinear_atom(atom: sp.Expr) -> bool:
    """True for a monomial that is not a plain symbol (``eta*G_sq``, ``exp(x)``)."""
    return not isinstance(atom, sp.Symbol)


def sign_constraints(atoms) -> list[Constraint]:
    """``x > 0`` / ``x >= 0`` for every atom whose sign sympy derives from assumptions."""
    out = []
    for atom in atoms:
        if atom.is_positive:
            out.append(Constraint(f"sign({atom})", {atom: sp.Integer(-1)}, sp.Integer(0), "<"))
        elif atom.is_nonnegative:
            out.append(Constraint(f"sign({atom})", {atom: sp.Integer(-1)}, sp.Integer(0), "<="))
    return out


def negate(rel, label: str = "not(conclusion)") -> list[list[Constraint]]:
    """Negations of the parts of ``rel``: one alternative per ``e op 0`` of the conclusion.

    ``e <= 0`` negates to ``-e < 0``; ``e < 0`` to ``-e <= 0``; an equality ``e == 0`` to the
    two alternatives ``e < 0`` and ``-e < 0`` (each must be refuted).
    """
    alternatives = []
    for expr, op in normalise(rel, label):
        coeffs, const = linear_form(-expr)
        if op == "==":
            neg = {k: -v for k, v in coeffs.items()}
            alternatives.append([Constraint(label, coeffs, const, "<")])
            alternatives.append([Constraint(label, neg, -const, "<")])
        else:
            alternatives.append([Constraint(label, coeffs, const, "<" if op == "<=" else "<=")])
    return alternatives
