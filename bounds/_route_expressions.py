"""The routes' symbolic margins and closed-form sample sizes (THEORY §5-§6), from the theorem objects.

``improvement_expression``: ``L_test_old - bound`` (certified iff > 0); ``min_M_expression`` /
``min_K_expression``: the sample size at which a route starts to certify, the rest held fixed
(``sympy.solve``). Re-exported by :mod:`bounds.routes`.
"""
from __future__ import annotations

import functools

import sympy as sp

from bounds import _symbols as s
from bounds.theorems import THEOREM_2, THEOREM_3, THEOREM_POPULATION_RISK

__all__ = ["POPULATION_RISK", "ROUTES", "THEOREMS", "c_K", "c_M", "improvement_expression", "level",
           "min_K_expression", "min_M_expression"]

ROUTES = ("population", "direct")
THEOREMS = {"population": THEOREM_2, "direct": THEOREM_3}
#: The population-level route (a bound on ``R(f_new)``, not on ``L_test(f_new)``).
POPULATION_RISK = "population_risk"
_ALL = {**THEOREMS, POPULATION_RISK: THEOREM_POPULATION_RISK}
#: What each route's bound is compared with to certify an improvement.
_REFERENCE = {"population": s.L_test_old, "direct": s.L_test_old, POPULATION_RISK: s.R_old}

#: Scales ``c_M = eps_M sqrt(M)`` and ``c_K = eps_K sqrt(K)``.
c_M = sp.Symbol("c_M", positive=True)
c_K = sp.Symbol("c_K", positive=True)
level = sp.Symbol("level", positive=True)


def improvement_expression(route: str) -> sp.Expr:
    """``L_test_old - bound`` (``R_old - bound`` for ``population_risk``): certified iff > 0.

    Example:
        >>> improvement_expression("population_risk")
        delta_R + delta_erm - 2*eps_M
    """
    route = _route(route, extra=True)
    return sp.expand(_REFERENCE[route] - _ALL[route].bound)


@functools.lru_cache(maxsize=None)
def min_M_expression(route: str) -> sp.Expr:
    """Closed-form ``M`` at which the improvement margin is exactly 0 (``sympy.solve``).

    Written in the scale ``c_M = eps_M sqrt(M)``; the other route quantities held fixed.

    Example:
        >>> min_M_expression("population")
        16*c_M**2/(delta_R + 2*delta_erm)**2
    """
    margin = improvement_expression(_route(route, extra=True)).subs(s.eps_M, c_M / sp.sqrt(s.M))
    return _unique_positive_root(margin, s.M)


@functools.lru_cache(maxsize=None)
def min_K_expression(route: str) -> sp.Expr:
    """Closed-form ``K`` at which the route starts to certify, others held fixed.

    * population: the failure probability equals the level,
      ``delta + 2 exp(-K Delta_R^2/(8 B^2)) = level``;
    * direct: the margin is 0 with ``eps_K = c_K / sqrt(K)``.
    """
    if _route(route) == "population":
        return _unique_positive_root(THEOREM_2.failure_probability - level, s.K)
    margin = improvement_expression("direct").subs(s.eps_K, c_K / sp.sqrt(s.K))
    return _unique_positive_root(margin, s.K)


def _unique_positive_root(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    roots = sp.solve(sp.Eq(expr, 0), var)
    if len(roots) != 1:
        raise ArithmeticError(f"expected one root of {expr} in {var}, got {roots}")
    return sp.simplify(roots[0])


def _route(route: str, extra: bool = False) -> str:
    allowed = ROUTES + ((POPULATION_RISK,) if extra else ())
    if route not in allowed:
        raise ValueError(f"route == {route!r}, must be one of {list(allowed)}.")
    return route
