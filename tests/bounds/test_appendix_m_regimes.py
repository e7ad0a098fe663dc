"""Appendix M (THEORY §7) and the degenerate / deepest-model regimes (THEORY §6)."""
import math

import mpmath
import numpy as np
import pytest
import sympy as sp

from bounds import appendix_m as am
from bounds.regimes import deepest_certified_depth, degenerate_regime, failure_limit_expression
from bounds.routes import Setup, evaluate_routes
from tests.bounds.test_routes import EXAMPLE


def test_exponents():
    assert am.excess_exponent() == 2 * am.alpha - 1
    assert am.growth_exponent(am.optimal_depth()) == 1 / (2 * am.a + 1)
    assert sp.simplify(am.growth_exponent(am.test_excess_at_optimum()) + am.a / (2 * am.a + 1)) == 0
    assert am.growth_exponent(am.deepest_certified_depth()) == 1 / (4 * am.alpha)


def test_growth_exponent_rejects_a_wrong_law():
    wrong = am.optimal_depth() ** 2   # M^{2/(2a+1)}: must not pass as M^{1/(2a+1)}
    assert sp.simplify(am.growth_exponent(wrong) - 1 / (2 * am.a + 1)) != 0


def test_optimal_depth_is_the_minimiser():
    vals = dict(A=2.0, a=1.0, c_g=0.5, M=1e4)
    Dstar = float(am.numeric(am.optimal_depth())(**vals))
    f = am.numeric(am.test_excess())
    grid = np.linspace(0.2 * Dstar, 5 * Dstar, 2001)
    assert abs(grid[np.argmin(f(D=grid, **vals))] - Dstar) / Dstar < 0.01


@pytest.mark.parametrize("alpha", [0.6, 1.0, 2.5])
@pytest.mark.parametrize("D", [1, 3, 20])
def test_tail_sum_bounds_against_hurwitz_zeta(alpha, D):
    lo, hi = am.tail_sum_bounds()
    exact = float(mpmath.zeta(2 * alpha, D))   # sum_{k >= D} k^{-2 alpha}
    lo_v, hi_v = (float(e.subs({am.alpha: alpha, am.D: D})) for e in (lo, hi))
    assert lo_v <= exact <= hi_v


def test_excess_risk_bounds_sandwich_a_synthetic_sequence():
    c_lo, c_hi, b_lo, b_hi, alpha = 0.8, 1.2, 1.0, 2.0, 0.9
    rng = np.random.default_rng(0)
    ks = np.arange(1, 200001)
    s_k = ks ** -alpha * rng.uniform(c_lo, c_hi, ks.size)            # Assumption G
    d_k = s_k**2 / (2 * rng.uniform(b_lo, b_hi, ks.size))             # Assumption G'
    tail = np.cumsum(d_k[::-1])[::-1]                                  # R(D) - R_inf (truncated)
    lo, hi = am.excess_risk_bounds()
    vals = {am.c_lo: c_lo, am.c_hi: c_hi, am.beta_lo: b_lo, am.beta_hi: b_hi, am.alpha: alpha}
    for D in (1, 10, 100):
        # the truncated tail is below the infinite one, so only compare lower bound with a margin
        assert float(lo.subs({**vals, am.D: D})) * 0.9 <= tail[D - 1] <= float(hi.subs({**vals, am.D: D}))


def test_fit_power_law_recovers_exponent_with_ci():
    rng = np.random.default_rng(3)
    D = np.arange(2, 40, dtype=float)
    y = 0.7 * D**-1.3 * np.exp(rng.normal(0, 0.05, D.size))
    fit = am.fit_power_law(D, y, 0.95)
    assert fit.exponent_ci[0] <= 1.3 <= fit.exponent_ci[1]
    with pytest.raises(ValueError):
        am.fit_power_law([1, 2], [1, 2])


def test_degenerate_regime_reports_crossover():
    st = Setup(**{**EXAMPLE, "M": 2e7})
    reg = degenerate_regime(st, 0.1)
    assert failure_limit_expression() == sp.Symbol("delta", positive=True) + 2
    assert reg.population_certified and not reg.direct_certified
    # just above the crossover the population route certifies, just below it does not
    for dr, expect in ((reg.delta_R_crossover * 1.01, True), (reg.delta_R_crossover * 0.99, False)):
        assert bool(evaluate_routes(Setup(**{**EXAMPLE, "M": 2e7, "delta_R": dr}), 0.1).population.certified) is expect
    assert reg.delta_R_failure_threshold == pytest.approx(math.sqrt(8 * 4.2**2 * math.log(2 / 0.05) / 1e5))


def test_deepest_certified_depth():
    depths = [2, 4, 8, 16]
    setups = [Setup(**{**EXAMPLE, "M": 2e7, "delta_R": dr}) for dr in (0.3, 0.2, 0.09, 0.01)]
    deepest, flags = deepest_certified_depth(depths, setups, 0.2)
    assert deepest == 8 and flags[-1] == (False, False)
    # at level 0.1 both routes certify depths 2-8 alone, but "some route" pays the union
    # delta + delta' + 2 exp(-K Delta_R^2 / (8 B^2)) > 0.1 unless the tail underflows (depth 2)
    deepest, flags = deepest_certified_depth(depths, setups, 0.1)
    assert deepest == 2 and flags[2] == (True, False)
