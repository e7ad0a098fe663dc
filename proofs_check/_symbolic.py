"""Symbolic helpers shared by the ledger checks (:mod:`proofs_check._ledger`, :mod:`proofs_check._tails`).

* :func:`symbolic_equal` -- equality of two expressions (a numeric probe, then ``simplify``);
* :func:`witness` -- a point, respecting the side conditions, where two expressions differ;
* :func:`slack_matches` -- a premise reads ``A <= B + t`` for two risk symbols.
"""
from __future__ import annotations

import math

import numpy as np
import sympy as sp

from bounds import _symbols as sym

_SIZE_SYMBOLS = frozenset((sym.M, sym.K, sym.n))

_GRID = (0.01, 0.05, 0.25, 0.5, 0.9, 1.0, 2.0, 4.0, 16.0, 100.0, 1000.0)
_SIZES = (1.0, 2.0, 10.0, 100.0, 1000.0)  # sample sizes are counts: at least 1


def sample_points(symbols, side_conditions, n_points: int = 300, seed: int = 0):
    """Points (name -> float) on a log grid respecting signs and side conditions."""
    rng = np.random.default_rng(seed)
    args = sorted(symbols, key=lambda x: x.name)
    conds = [c for c in side_conditions if c not in (sp.true,) and c.free_symbols <= set(args)]
    tests = [sp.lambdify(args, sp.And(*conds), modules="math")] if conds else []
    points = []
    for _ in range(n_points):
        vals = [float(rng.choice(_SIZES if a in _SIZE_SYMBOLS else _GRID))
                * (1 if (a.is_nonnegative or rng.random() < 0.5) else -1) for a in args]
        if all(bool(t(*vals)) for t in tests):
            points.append(dict(zip([a.name for a in args], vals)))
    return points


def witness(stated: sp.Expr, derived: sp.Expr, side_conditions) -> dict | None:
    """A point where ``stated != derived`` (prefer ``stated < derived``), with both values.

    Only points where both are finite real numbers count.
    """
    syms = stated.free_symbols | derived.free_symbols
    args = sorted(syms, key=lambda x: x.name)
    f = sp.lambdify(args, (stated, derived), modules="math")
    gaps = []
    for p in sample_points(syms, side_conditions):
        try:
            a, b = f(*[p[x.name] for x in args])
            gap = float(a) - float(b)
        except (OverflowError, ZeroDivisionError, ValueError, TypeError):
            continue
        if math.isfinite(a) and math.isfinite(b) and abs(gap) > 1e-9:
            gaps.append((gap, p, a, b))
    if not gaps:
        return None
    # the most optimistic statement if there is one, else the largest discrepancy
    best = min(gaps, key=lambda g: g[0]) if min(g[0] for g in gaps) < 0 else max(gaps, key=lambda g: g[0])
    _, p, a, b = best
    return {**p, "stated": float(a), "derived": float(b)}


def symbolic_equal(a: sp.Expr, b: sp.Expr) -> bool:
    """Symbolic equality; a cheap numeric probe first, so a mismatch skips ``simplify``."""
    diff = sp.expand(a - b)
    if diff == 0:
        return True
    syms = sorted(diff.free_symbols, key=lambda x: x.name)
    f = sp.lambdify(syms, diff, modules="math")
    for vals in ((0.3 + 0.1 * i for i in range(len(syms))), (1.7 - 0.2 * i for i in range(len(syms)))):
        try:
            if abs(f(*vals)) > 1e-9:
                return False
        except (ValueError, ZeroDivisionError, OverflowError):
            continue
    return sp.simplify(diff) == 0


def slack_matches(premise, t: sp.Expr) -> bool:
    """``premise`` reads ``A <= B + t`` for two distinct risk symbols ``A``, ``B``."""
    rel = premise.relation
    if isinstance(rel, (sp.LessThan, sp.StrictLessThan)):
        slack = rel.rhs - rel.lhs
    elif isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        slack = rel.lhs - rel.rhs
    else:
        return False
    rest = sp.expand(slack - t)
    terms = sp.Add.make_args(rest)
    coeffs = sorted(term.as_coeff_Mul()[0] for term in terms)
    bare = all(isinstance(term.as_coeff_Mul()[1], sp.Symbol) for term in terms)
    return len(terms) == 2 and bare and coeffs == [-1, 1]
