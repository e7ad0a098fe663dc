"""Monte-Carlo coverage of every THEORY §6b bound, with power: the bound with a constant halved is flagged.

Each bound (evaluated from the formulas of :mod:`bounds.localised`, never re-typed) is applied
to ``REPS`` independent samples of a distribution with a known answer; its failure rate is
tested against its level with a one-sided exact binomial test at test level ``TEST_LEVEL =
0.01`` (scipy). The bound must not be rejected; the same bound halved must be. Samples are
drawn through sufficient statistics (binomial counts of two-point variables), vectorised.

Where halving one constant alone cannot be detected -- the range terms of Bernstein bounds,
the contraction constant of (b)'s remainder, the sure constants of (a): these bounds are not
tight on any distribution we know -- the test shows coverage, and power through the whole
deviation halved or a term dropped (the remainder of (b)); said in the module docstring of
:mod:`bounds.localised` and in the report.
"""
import numpy as np
import pytest
import sympy as sp
from scipy.stats import binomtest

from bounds import localised as loc
from bounds._statement import evaluate

LEVEL, TEST_LEVEL, REPS = 0.05, 0.01, 4000


def _flagged(fails: np.ndarray, level: float = LEVEL) -> bool:
    return binomtest(int(np.sum(fails)), fails.size, level, alternative="greater").pvalue < TEST_LEVEL


def _two_point_sums(rng, n, p):
    return rng.binomial(n, p, size=REPS).astype(np.float64)   # REPS read at call time (the slow test raises it)


# ---- one-function tails of a difference in [-r, r] (r = r_d) -------------------------------------
def _signs(rng, n, r):
    """Mean and unbiased sample variance of n values +-r (probability 1/2): mean 0."""
    k = _two_point_sums(rng, n, 0.5)
    mean = r * (2 * k / n - 1)
    return mean, n / (n - 1) * (r**2 - mean**2)


def _tail_fails(kind, factor, n, seed=0):
    r = 0.3
    mean, var = _signs(np.random.default_rng(seed), n, r)
    vals = {"n": n, "level_i": LEVEL, "V": var, "r_d": r}
    lvl, rd, V = sp.Symbol("level_i", positive=True), sp.Symbol("r_d", positive=True), sp.Symbol("V", nonnegative=True)
    n_ = sp.Symbol("n", positive=True)
    expr = (loc.hoeffding_difference(n_, lvl, 1, 2 * rd) if kind == "hoeffding"
            else loc.bernstein_difference(n_, V, lvl, 1, 2 * rd))
    return mean > factor * evaluate(expr, vals)


@pytest.mark.parametrize("kind,n", [("hoeffding", 200), ("bernstein", 20000)])
def test_difference_tail_covers_and_halved_is_flagged(kind, n):
    assert not _flagged(_tail_fails(kind, 1.0, n))
    assert _flagged(_tail_fails(kind, 0.5, n, seed=1))


# ---- e_G: ||G_S - G|| for xi = +-b (1-D, G = 0, sigma^2 = b^2) ------------------------------------
def _e_G_fails(factor, M=20000, seed=0):
    b = 0.7
    k = _two_point_sums(np.random.default_rng(seed), M, 0.5)
    dev = np.abs(b * (2 * k / M - 1))
    bound = evaluate(loc.e_G(loc.delta_G), {"b_xi": b, "sigma2_ub": b**2, "M": M, "delta_G": LEVEL})
    return dev > factor * bound


def test_e_G_covers_and_halved_is_flagged():
    assert not _flagged(_e_G_fails(1.0))
    assert _flagged(_e_G_fails(0.5, seed=1))


def test_e_G_covers_a_rare_large_signal():
    """Poisson regime (xi = b with probability 2/M): the linear term 4 b L/(3M) carries the bound."""
    M, b = 2000, 1.0
    k = _two_point_sums(np.random.default_rng(2), M, 2 / M)
    dev = np.abs(b * k / M - b * 2 / M)
    bound = evaluate(loc.e_G(loc.delta_G), {"b_xi": b, "sigma2_ub": 2 / M, "M": M, "delta_G": LEVEL})
    assert not _flagged(dev > bound)


# ---- sigma^2's upper bound: ||xi||^2 in {0, b^2} (probability 1/2) -----------------------------------
def _sigma2_fails(factor, n=20000, seed=0):
    b = 0.5
    k = _two_point_sums(np.random.default_rng(seed), n, 0.5)
    mean = b**2 * k / n
    var = n / (n - 1) * mean * (b**2 - mean)
    nn, m, V, lv = sp.symbols("nn m V lv", positive=True)
    dev = loc.sigma2_upper_expression(nn, m, V, lv) - m
    upper = mean + factor * evaluate(dev, {"nn": n, "V": var, "lv": LEVEL, "b_xi": b})
    return upper < b**2 / 2


def test_sigma2_upper_bound_covers_and_halved_is_flagged():
    assert not _flagged(_sigma2_fails(1.0))
    assert _flagged(_sigma2_fails(0.5, seed=1))


# ---- matrix Bernstein, r = 1: phi in {0, rho} with P(rho) = p ----------------------------------------
def _lambda_fails(factor, M=20000, p=0.1, seed=0):
    rho = 2.0
    k = _two_point_sums(np.random.default_rng(seed), M, p)
    lam = rho**2 * (p - k / M)                      # Sigma - Sigma_S
    bound = evaluate(loc.lambda_bound(loc.delta_Sigma),
                     {"rho_phi": rho, "Sigma_ub": p * rho**2, "M": M, "r": 1, "delta_Sigma": LEVEL})
    return lam > factor * bound


def test_matrix_bernstein_covers_and_halved_is_flagged():
    assert not _flagged(_lambda_fails(1.0))
    assert _flagged(_lambda_fails(0.5, seed=1))


# ---- U_S end to end: readout at the top, squared loss, 1-D, exact supremum ---------------------------
def _supremum(g1, q, nu):
    """``sup_{|v| <= nu} v g1 + v^2 q`` (the trust-region problem in one dimension)."""
    ends = np.maximum(nu * g1 + nu**2 * q, -nu * g1 + nu**2 * q)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(q < 0, -g1 / (2 * q), 0.0)
    inner = np.where((q < 0) & (np.abs(v) <= nu), v * g1 + v**2 * q, -np.inf)
    return np.maximum(np.maximum(ends, inner), 0.0)


def _draw(rng, M, p, alpha, rho):
    """phi in {0, rho} (P(rho) = p), a = u - y = +-alpha independent: m = 2a, G = 0, Sigma = p rho^2."""
    n_on = _two_point_sums(rng, M, p)
    n_plus = rng.binomial(n_on.astype(np.int64), 0.5).astype(np.float64)
    G_S = 2 * alpha * rho * (2 * n_plus - n_on) / M
    return -G_S, rho**2 * (p - n_on / M)            # G - G_S, Sigma - Sigma_S


def _uniform_fails(kind, factor, regime, seed=0, M=5000, trace=None):
    p, rho = 0.1, 1.5
    alpha, nu = (1.0, 0.01) if regime == "linear" else (0.0, 0.5)
    g1, q = _draw(np.random.default_rng(seed), M, p, alpha, rho)
    sup = _supremum(g1, q, nu)
    vals = {"nu_V": nu, "M": M, "b_xi": 2 * alpha * rho, "sigma2_ub": 4 * alpha**2 * rho**2 * p, "rho_phi": rho,
            "Sigma_ub": p * rho**2, "r": 1, "d": 1, "A_norm": 1.0, "kappa": 2.0, "delta_G": LEVEL / 2,
            "delta_Sigma": LEVEL / 2, "delta_q": LEVEL / 2, "rad_M": nu * rho / np.sqrt(M),
            "tr_ub": rho**2 if trace is None else trace}     # E||phi||^2 = p rho^2 <= rho^2
    expr = {"exact": loc.exact_uniform(), "linearised": loc.linearised_uniform(),
            "no_remainder": loc.nu * loc.e_G(loc.delta_G)}[kind]
    return sup > factor * evaluate(expr, vals)


@pytest.mark.parametrize("kind", ["exact", "linearised"])
@pytest.mark.parametrize("regime", ["linear", "quadratic"])
def test_uniform_term_covers_the_exact_supremum(kind, regime):
    assert not _flagged(_uniform_fails(kind, 1.0, regime))


@pytest.mark.parametrize("regime", ["linear", "quadratic"])
def test_exact_uniform_term_halved_is_flagged(regime):
    assert _flagged(_uniform_fails("exact", 0.5, regime, seed=1))


def test_linearised_halved_is_flagged_and_its_remainder_is_needed():
    assert _flagged(_uniform_fails("linearised", 0.5, "linear", seed=1))
    assert _flagged(_uniform_fails("no_remainder", 1.0, "quadratic", seed=2))


@pytest.mark.parametrize("regime", ["linear", "quadratic"])
def test_linearised_at_the_true_trace_covers(regime):
    """(b)'s remainder with ``E||phi||^2 = p rho^2`` itself (issue 29) in place of the sure ``rho^2``: still covers."""
    assert not _flagged(_uniform_fails("linearised", 1.0, regime, seed=4, trace=0.1 * 1.5**2))


def test_sure_uniform_term_covers():
    """(a) on the same world, bounded: |f - y| <= F = alpha + nu rho, B = F^2, L_loss = 2 F."""
    M, p, rho, alpha, nu = 5000, 0.1, 1.5, 1.0, 0.2
    g1, q = _draw(np.random.default_rng(3), M, p, alpha, rho)
    sup = _supremum(g1, q, nu)
    F = alpha + nu * rho
    vals = {"M": M, "B": F**2, "L_loss": 2 * F, "L_top": 1.0, "nu_V": nu, "rho_phi": rho, "delta_U": LEVEL,
            "rad_M": nu * rho / np.sqrt(M)}
    assert not _flagged(sup > evaluate(loc.sure_uniform(loc.delta_U), vals))


def _coverage_everywhere(seed):
    for kind, n in (("hoeffding", 200), ("bernstein", 20000)):
        assert not _flagged(_tail_fails(kind, 1.0, n, seed=seed))
    assert not _flagged(_e_G_fails(1.0, seed=seed)) and not _flagged(_lambda_fails(1.0, seed=seed))
    assert not _flagged(_sigma2_fails(1.0, seed=seed))
    for kind in ("exact", "linearised"):
        for regime in ("linear", "quadratic"):
            assert not _flagged(_uniform_fails(kind, 1.0, regime, seed=seed))


def test_coverage_with_100000_draws(monkeypatch):
    """Every coverage test above with 100,000 draws (power against a mild excess; under a second)."""
    monkeypatch.setitem(globals(), "REPS", 100_000)   # restored after the test
    _coverage_everywhere(seed=10)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_coverage_with_a_million_draws(seed, monkeypatch):
    """Every coverage test above with 10^6 draws, at five seeds (a few seconds each)."""
    monkeypatch.setitem(globals(), "REPS", 1_000_000)
    _coverage_everywhere(seed=20 + seed)
