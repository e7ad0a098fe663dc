"""THEORY §6b (c), issue 17 item 5: the upper confidence bound on ``||Sigma_phi||`` from the signal sample.

Symbolic: ``S_ub`` is the root of ``S (1 - a) - b sqrt(S) - top = 0`` (the inversion of Weyl + matrix
Bernstein), so ``S <= S_ub`` exactly when ``S <= top + lambda_bound(S)``. Monte Carlo (``r = 1``,
``phi in {0, rho}`` with probability ``p``; ``Sigma = p rho^2`` known): covers at level 0.05
(one-sided exact binomial test at 0.01), and the bound with its Bernstein deviation halved is flagged.
"""
import numpy as np
import sympy as sp
from scipy.stats import binomtest

from bounds import localised as loc
from bounds._statement import evaluate

LEVEL, TEST_LEVEL, REPS = 0.05, 0.01, 20_000


def test_the_bound_is_the_root_of_weyl_plus_matrix_bernstein():
    n, top, lv, rho, r, S = sp.symbols("n top lv rho r S", positive=True)
    ub = loc.Sigma_norm_upper_expression(n, top, lv, rho, r)
    lam = loc.lambda_bound(lv, 1, S).subs({loc.s.M: n, loc.s.rho_phi: rho, loc.s.r: r})
    gap = (S - top - lam).subs(S, ub)                 # at S = S_ub: S - top - lambda_bound(S) = 0
    vals = {n: 500, top: 0.3, lv: 0.01, rho: 2.0, r: 4}
    assert abs(float(gap.subs(vals))) < 1e-12
    assert float(ub.subs(vals)) > 0.3                 # above the sample's top eigenvalue
    for v in ({**vals, n: 50}, {**vals, top: 3.0}, {**vals, lv: 0.2}):
        assert abs(float(gap.subs(v))) < 1e-10


def _fails(factor, n=2000, p=0.05, rho=2.0, seed=0):
    k = np.random.default_rng(seed).binomial(n, p, size=REPS).astype(np.float64)
    top = rho**2 * k / n
    nn, t, lv = sp.Symbol("nn", positive=True), sp.Symbol("t", nonnegative=True), sp.Symbol("lv", positive=True)
    ub = np.asarray(evaluate(loc.Sigma_norm_upper_expression(nn, t, lv), {"nn": n, "t": top, "lv": LEVEL,
                                                                          "rho_phi": rho, "r": 1}))
    ub = np.minimum(ub, rho**2)
    return top + factor * (ub - top) < p * rho**2     # the deviation above the sample's value, times factor


def _flagged(fails) -> bool:
    return binomtest(int(np.sum(fails)), fails.size, LEVEL, alternative="greater").pvalue < TEST_LEVEL


def test_covers_and_halved_is_flagged():
    assert not _flagged(_fails(1.0))
    assert _flagged(_fails(0.5, seed=1))
