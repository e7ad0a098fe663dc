"""The domain of a sympy expression tree: where every sqrt/log/power/division is defined.

For user chains the parser records the domain of the text *as written*
(:func:`proofs_check._parser.parse_formula`); for theorem objects of :mod:`bounds` (built
in sympy, no text) the tree itself is the statement and :func:`domain_of` reads it.
The conventions are the parser's: ``a^(p/q)`` with ``q > 1`` needs ``a >= 0`` (``a > 0``
if ``p/q < 0``), ``a^-k`` needs ``a != 0``, ``log(a)`` needs ``a > 0``.
"""
from __future__ import annotations

import sympy as sp


def domain_of(e) -> tuple:
    """The conditions (sympy relations) under which ``e`` (expression or relation) is defined.

    Conditions sympy decides to be true are dropped; one it decides false is kept
    (``sp.false``: the expression is nowhere defined).

    Example:
        >>> x, y = sp.symbols("x y", real=True)
        >>> domain_of(sp.Le(sp.sqrt(x) + 1 / y, sp.log(x + 1)))
        (x >= 0, Ne(y, 0), x + 1 > 0)
    """
    out: list = []
    _walk(e, out, set())
    return tuple(out)


def _add(out: list, cond) -> None:
    if cond is not sp.true and cond not in out:
        out.append(cond)


def _walk(e, out: list, seen: set) -> None:
    if e in seen or not isinstance(e, sp.Basic):
        return
    seen.add(e)
    for a in e.args:
        _walk(a, out, seen)
    if isinstance(e, sp.Pow) and e.exp.is_Rational:
        if e.exp.q != 1:
            _add(out, sp.Gt(e.base, 0) if e.exp < 0 else sp.Ge(e.base, 0))
        elif e.exp < 0:
            _add(out, sp.Ne(e.base, 0))
    elif isinstance(e, sp.log):
        _add(out, sp.Gt(e.args[0], 0))
