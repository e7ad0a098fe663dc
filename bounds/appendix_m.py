"""Appendix M: from the qualitative mechanism to a power law in depth (THEORY §7).

**Choice** (THEORY §7): the summaries name Assumptions G and G' without stating them;
the versions here are this project's:

* G (signal decay): ``c_lo D^-alpha <= s(D) <= c_hi D^-alpha`` with ``alpha > 1/2``;
* G' (gain-signal link): ``s(D)^2 / (2 beta_hi) <= d(D) <= s(D)^2 / (2 beta_lo)``.

Telescoping ``R(D) - R_inf = sum_{k >= D} d(k)`` and the integral test give
``R(D) - R_inf = Theta(D^{-(2 alpha - 1)})`` with explicit constants
(:func:`excess_risk_bounds`). With a generalisation cost ``c_g sqrt(D / M)`` the test
excess ``A D^-a + c_g sqrt(D/M)`` (``a = 2 alpha - 1``) is minimised at
``D* ∝ M^{1/(2a+1)}`` with excess ``∝ M^{-a/(2a+1)}``; the deepest certified depth solves
``d(D)/2 = 2 eps_M`` and grows like ``M^{1/(4 alpha)}``. Paper A's results are
qualitative: nothing here predicts specific ratios (e.g. tokens per parameter).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np
import sympy as sp

D, alpha, k = sp.symbols("D alpha k", positive=True)
c_lo, c_hi, beta_lo, beta_hi = sp.symbols("c_lo c_hi beta_lo beta_hi", positive=True)
A, c_g, c_e, M = sp.symbols("A c_g c_e M", positive=True)
a = sp.Symbol("a", positive=True)          # test-excess exponent a = 2 alpha - 1
signal = sp.Function("s")(D)                # s(D) = max_l ||G_l(D)||
gain = sp.Function("d")(D)                  # d(D) = R(D) - R(D+1)

#: Assumption G (signal decay), as relations in ``s(D)``.
ASSUMPTION_G = (sp.Le(c_lo * D**-alpha, signal), sp.Le(signal, c_hi * D**-alpha), sp.Gt(alpha, sp.Rational(1, 2)))
#: Assumption G' (gain-signal link), as relations in ``s(D)`` and ``d(D)``.
ASSUMPTION_G_PRIME = (sp.Le(signal**2 / (2 * beta_hi), gain), sp.Le(gain, signal**2 / (2 * beta_lo)))


@functools.lru_cache(maxsize=None)
def gain_bounds() -> tuple[sp.Expr, sp.Expr]:
    """G and G' combined: ``c_lo^2 D^{-2 alpha} / (2 beta_hi) <= d(D) <= c_hi^2 D^{-2 alpha} / (2 beta_lo)``."""
    lower = ASSUMPTION_G_PRIME[0].lhs.subs(signal, ASSUMPTION_G[0].lhs)
    upper = ASSUMPTION_G_PRIME[1].rhs.subs(signal, ASSUMPTION_G[1].rhs)
    return sp.simplify(lower), sp.simplify(upper)


def tail_sum_bounds(exponent: sp.Expr = 2 * alpha) -> tuple[sp.Expr, sp.Expr]:
    """Integral test for ``sum_{k >= D} k^-p``, ``p > 1``: ``D^{1-p}/(p-1) <= . <= D^-p + D^{1-p}/(p-1)``."""
    integral = sp.integrate(k**-exponent, (k, D, sp.oo), conds="none")
    return sp.simplify(integral), sp.simplify(D**-exponent + integral)


@functools.lru_cache(maxsize=None)
def excess_risk_bounds() -> tuple[sp.Expr, sp.Expr]:
    """Explicit constants in ``R(D) - R_inf = Theta(D^{-(2 alpha - 1)})``.

    Example:
        >>> lo, hi = excess_risk_bounds()
        >>> sp.simplify(lo - c_lo**2 * D**(1 - 2*alpha) / (2 * beta_hi * (2*alpha - 1)))
        0
    """
    g_lo, g_hi = gain_bounds()
    t_lo, t_hi = tail_sum_bounds()
    per_unit = D ** (-2 * alpha)
    return sp.simplify(g_lo / per_unit * t_lo), sp.simplify(g_hi / per_unit * t_hi)


@functools.lru_cache(maxsize=None)
def excess_exponent() -> sp.Expr:
    """The power in ``D^{-(2 alpha - 1)}``, read off the lower bound: ``2 alpha - 1``."""
    lo, _ = excess_risk_bounds()
    return sp.simplify(-sp.limit(sp.log(lo) / sp.log(D), D, sp.oo))


def test_excess(depth: sp.Expr = D) -> sp.Expr:
    """Joint depth-data test excess ``A D^-a + c_g sqrt(D / M)``."""
    return A * depth**-a + c_g * sp.sqrt(depth / M)


@functools.lru_cache(maxsize=None)
def optimal_depth() -> sp.Expr:
    """``D*`` minimising :func:`test_excess`: ``(2 a A sqrt(M) / c_g)^{2/(2a+1)} ∝ M^{1/(2a+1)}``."""
    roots = sp.solve(sp.diff(test_excess(), D), D)
    if len(roots) != 1:
        raise ArithmeticError(f"expected one stationary point, got {roots}")
    return sp.simplify(roots[0])


@functools.lru_cache(maxsize=None)
def test_excess_at_optimum() -> sp.Expr:
    """``L* - R_inf`` at ``D*`` (``∝ M^{-a/(2a+1)}``)."""
    return sp.simplify(test_excess(optimal_depth()))


@functools.lru_cache(maxsize=None)
def deepest_certified_depth() -> sp.Expr:
    """Depth solving ``d_lo(D)/2 = 2 eps_M`` with ``eps_M = c_e / sqrt(M)`` (``∝ M^{1/(4 alpha)}``).

    Uses the lower gain bound of :func:`gain_bounds`, so every depth below it certifies
    the population margin (up to the failure-probability condition).
    """
    g_lo, _ = gain_bounds()
    x = sp.Symbol("x", positive=True)  # x = D^(2 alpha): the equation is linear in 1/x
    roots = sp.solve(sp.Eq(g_lo.subs(D ** (2 * alpha), x) / 2, 2 * c_e / sp.sqrt(M)), x)
    if len(roots) != 1:
        raise ArithmeticError(f"expected one root, got {roots}")
    return roots[0] ** (1 / (2 * alpha))


def growth_exponent(expr: sp.Expr, var: sp.Symbol = M) -> sp.Expr:
    """``lim log(expr)/log(var)`` as ``var -> oo``: the power-law exponent of ``expr``."""
    return sp.simplify(sp.limit(sp.expand_log(sp.log(expr), force=True) / sp.log(var), var, sp.oo))


def numeric(expr: sp.Expr):
    """Vectorised numpy evaluator of an Appendix M expression (keyword arguments by name)."""
    args = tuple(sorted(expr.free_symbols, key=lambda x: x.name))
    fn = sp.lambdify(args, expr, modules="numpy")
    names = [x.name for x in args]

    def call(**values):
        missing = sorted(set(names) - set(values))
        if missing:
            raise KeyError(f"no value for {missing}")
        return fn(*[np.asarray(values[n], dtype=np.float64) for n in names])

    call.__doc__ = f"Evaluate {expr} at keyword values for {names}."
    return call


@dataclasses.dataclass(frozen=True)
class PowerLawFit:
    """Fit of ``y = c x^-p`` by least squares on logs, with a two-sided CI on ``p``."""

    exponent: float
    exponent_ci: tuple[float, float]
    constant: float
    confidence: float
    n_points: int


def fit_power_law(x: Sequence[float], y: Sequence[float], confidence: float = 0.95) -> PowerLawFit:
    """Fit ``y ≈ c x^-p`` (log-log OLS; Student-t interval on the slope).

    Used to fit ``alpha`` from measured ``s(D)`` and the excess exponent from ``R(D)``.

    Raises:
        ValueError: fewer than 3 points, or non-positive values.

    Example:
        >>> fit = fit_power_law([1, 2, 4, 8], [3.0, 1.5, 0.75, 0.375])
        >>> round(fit.exponent, 9), round(fit.constant, 9)
        (1.0, 3.0)
    """
    from scipy import stats

    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.size < 3:
        raise ValueError(f"expected x and y of the same length >= 3, got {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be > 0 for a log-log fit")
    res = stats.linregress(np.log(x), np.log(y))
    q = stats.t.ppf(0.5 + confidence / 2, df=max(x.size - 2, 1))
    half = q * res.stderr
    p = float(-res.slope)
    return PowerLawFit(p, (p - float(half), p + float(half)), float(np.exp(res.intercept)),
                       confidence, int(x.size))
