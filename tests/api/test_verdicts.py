"""Verdicts (issue 16 item 7): improvable / saturated within eps / undetermined, the Chebyshev
upper bound (symbolic check and Monte-Carlo coverage at a stated level) and n_needed."""
import math

import numpy as np
import pytest
import sympy as sp
import torch

import depthcert as dc
from depthcert.api._verdict import chebyshev_radius, n_to_reject, n_to_saturate
from tests.api._nets import ResCNN, synthetic

KW = dict(width=8, batch_size=64)


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    return ResCNN(c=8, depth=2).double()


def test_chebyshev_radius_is_markov_on_the_squared_deviation():
    # P(Y >= t) <= E[Y]/t with Y = ||G_hat - G||^2, E[Y] = tr Cov / n <= sigma^2 / n; solve E[Y]/t = delta
    sigma2, n, delta, t = sp.symbols("sigma2 n delta t", positive=True)
    (t_star,) = sp.solve(sp.Eq(sigma2 / n / t, delta), t)
    radius = sp.sqrt(t_star)
    assert sp.simplify(radius - sp.sqrt(sigma2 / (n * delta))) == 0
    f = sp.lambdify((sigma2, n, delta), radius)
    for args in [(4.0, 100, 0.04), (0.3, 7, 0.2), (2.5e-3, 4096, 0.0125)]:
        assert chebyshev_radius(*args) == pytest.approx(f(*args), rel=1e-14)


def _miss_rate(radius_scale, n, q, reps, rng):
    """Monte Carlo: P(||G_hat - G|| >= scale * radius) for symmetric X = +-rho e_1 w.p. q (else 0), G = 0."""
    rho, delta = 1.0, 0.05
    sigma2 = q * rho**2                       # E||X - G||^2 exactly
    signs = rng.choice([-1.0, 0.0, 1.0], p=[q / 2, 1 - q, q / 2], size=(reps, n))
    dev = np.abs(signs.mean(axis=1)) * rho
    return float(np.mean(dev >= radius_scale * chebyshev_radius(sigma2, n, delta)))


def test_chebyshev_bound_covers_at_its_level_and_halving_it_fails():
    # level 0.05; a one-sample three-point law (q = 3 delta) on which halving the radius misses at rate q = 0.15.
    # Clopper-Pearson bounds at 1e-6 on 20000 draws: a rate 0.05 (resp. 0.15) is rejected below (above) by ~0.012
    rng = np.random.default_rng(0)
    from scipy.stats import beta as beta_dist

    reps, delta = 20000, 0.05
    for n, q in [(1, 3 * delta), (20, 0.5)]:
        miss = _miss_rate(1.0, n, q, reps, rng)
        k = round(miss * reps)
        assert (beta_dist.ppf(1e-6, k, reps - k + 1) if k else 0.0) <= delta   # covers: lower CP bound <= delta
    miss_half = _miss_rate(0.5, 1, 3 * delta, reps, rng)
    k = round(miss_half * reps)
    assert beta_dist.ppf(1e-6, k, reps - k + 1) > delta                      # halved: misses more than delta


def test_improvable_on_an_untrained_net_with_a_certified_gain(net):
    x, y = synthetic(2048, length=16)
    rep = dc.saturation(net, (x, y), curvature_n=128, **KW)
    assert rep.verdict == "improvable" and not rep.saturated
    assert rep.certified_gain > 0 and rep.n_needed is None
    best = rep.site(rep.best_site)
    assert best["reject"] and best["certified_gain"] <= best["gain_euclidean"]   # LCB below the plug-in gain


def test_saturated_within_a_loose_eps_and_undetermined_at_a_tiny_probe(net):
    x, y = synthetic(2048, length=16)
    sat = dc.saturation(net, (x, y), curvature_n=128, eps=10.0, **KW)
    assert sat.verdict == "saturated" and sat.saturated and sat.gain_ucb < 10.0
    x, y = synthetic(160, length=16, seed=5)
    und = dc.saturation(net, (x, y), curvature_n=32, eps=1e-6, **KW)
    assert und.verdict == "undetermined" and not und.saturated
    assert und.n_needed is not None and und.n_needed > und.n   # the probe size that would decide exceeds the one used


def test_n_needed_never_below_the_probe_size_used():
    # the fix of issue 16's inconsistency: both planning numbers extrapolate the MEASURED effect, so an
    # undecided test can never be told it had enough samples
    level, eps = 0.05, 1e-3
    for log_w, n_bet, chunk in [(1.0, 900, 100), (2.9, 3840, 256), (1e-3, 100, 10)]:
        assert n_to_reject(log_w, n_bet, chunk, level) > n_bet + chunk
    assert n_to_reject(-1.0, 900, 100, level) is None and n_to_reject(3.1, 900, 100, level) is None
    for g_norm, sigma2, beta in [(0.01, 0.5, 2.0), (0.04, 2.0, 1.0)]:
        n = n_to_saturate(g_norm, sigma2, level, beta, eps)
        ucb = g_norm + chebyshev_radius(sigma2, n, level)
        assert ucb**2 / (2 * beta) < eps <= (g_norm + chebyshev_radius(sigma2, n - 1, level))**2 / (2 * beta)
    assert n_to_saturate(math.sqrt(2 * eps), 1.0, level, 1.0, eps) is None   # the plug-in gain itself is >= eps


def test_the_old_planning_number_was_below_the_probe_size_where_the_new_one_is_not(net):
    # issue 16's inconsistency, reproduced: the old n_needed planned for a site at the TARGET gain with a bet
    # perfectly aligned with G (mu = ||G||); the real bets' direction (learnt from earlier chunks in d*r = 8*25
    # dimensions) has cosine ~0.03-0.08 with G_hat, so the wealth grows (cosine)^2 ~ 1e-3 times slower.
    from numerics.estimators._site_stats import n_needed_adaptive

    x, y = synthetic(160, length=16, seed=5)
    rep = dc.saturation(net, (x, y), curvature_n=32, width=8, batch_size=64, eps=1e-3)
    r = rep.site("blocks.0")
    acc = rep._stats["blocks.0"]
    old = n_needed_adaptive(acc.z_var, acc.b_bet, 2 * r["beta"] * 1e-3, rep.level / 2, acc.chunk)
    assert not r["reject"] and old < r["n"]                 # "n_needed below the n used, yet not rejected"
    assert r["n_to_reject"] > r["n"] and rep.n_needed > rep.n and rep.verdict == "undetermined"
