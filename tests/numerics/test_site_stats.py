"""Streaming site statistics and the two saturation tests: exactness, level (Clopper-Pearson) and power."""
import math

import pytest
import torch
from scipy.stats import beta as beta_dist

import numerics.estimators as est
from numerics.estimators._site_stats import (SiteAccumulator, adaptive_test, hoeffding_test, n_needed_adaptive,
                                             n_needed_hoeffding, projection_scores)

F64 = torch.float64


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _feed(m, phi, batch, chunks=8, b=None):
    acc = SiteAccumulator(m.shape[2], phi.shape[2], m.shape[0], chunks, b)
    for i in range(0, m.shape[0], batch):
        acc.update(m[i:i + batch], phi[i:i + batch])
    return acc


@pytest.mark.parametrize("T", [1, 3, 40])
def test_streaming_equals_one_batch_and_the_naive_u_statistic(T):
    """Any batching gives the one-batch numbers; S_hat equals the formula with X_i materialised
    (T = 3 uses the Gram form of ||X_i||, T = 40 the explicit one)."""
    g = _gen(T)
    n, d, r = 64, 5, 4
    m, phi = torch.randn(n, T, d, generator=g, dtype=F64), torch.randn(n, T, r, generator=g, dtype=F64)
    one, many = _feed(m, phi, n), _feed(m, phi, 7)
    for attr in ("G", "Sigma"):
        torch.testing.assert_close(getattr(many, attr), getattr(one, attr), rtol=1e-12, atol=1e-12)
    for attr in ("u_statistic", "x_max", "ag_max", "m_sq", "phi_max"):
        assert getattr(many, attr) == pytest.approx(getattr(one, attr), rel=1e-12)
    assert many.log_wealth() == pytest.approx(one.log_wealth(), rel=1e-9, abs=1e-12)
    X = torch.einsum("ntd,ntr->ndr", m, phi)
    naive = (X.sum(0).pow(2).sum() - X.pow(2).sum()) / (n * (n - 1))
    assert one.u_statistic == pytest.approx(float(naive), rel=1e-10)
    assert one.x_max == pytest.approx(float(X.flatten(1).norm(dim=1).max()), rel=1e-12)
    if T == 1:
        assert one.u_statistic == pytest.approx(est.u_statistic_sq_norm(m[:, 0], phi[:, 0]), rel=1e-12)


def test_projection_scores_match_the_existing_estimator_per_family():
    g = _gen(1)
    m, phi = torch.randn(200, 1, 3, generator=g, dtype=F64), torch.randn(200, 1, 5, generator=g, dtype=F64)
    acc = _feed(m, phi, 50)
    P = projection_scores(acc.G, acc.Sigma, {"first": [0, 1], "last": [4]})
    for fam, cols in (("first", [0, 1]), ("last", [4]), ("all", list(range(5)))):
        sub = phi[:, 0, cols]
        assert P[fam] == pytest.approx(est.projection_score(est.cross_gradient(m[:, 0], sub), sub), rel=1e-10)


def _null(n, seed, d=3, r=2):
    """m = random signs independent of phi: G = 0 exactly; ||X_i|| <= sqrt(d) * sqrt(r)."""
    g = _gen(seed)
    m = (torch.randint(0, 2, (n, 1, d), generator=g) * 2 - 1).to(F64)
    phi = torch.rand(n, 1, r, generator=g, dtype=F64)
    return m, phi


def _alt(n, seed, shift, d=3, r=2):
    """m_i = noise + shift * phi-correlated signal: G != 0."""
    m, phi = _null(n, seed, d, r)
    return m + shift * phi[:, :, :1].expand(-1, -1, d), phi


def _rate(trials, hits, level_confidence=0.01):
    lo = beta_dist.ppf(level_confidence, hits, trials - hits + 1) if hits else 0.0
    hi = beta_dist.ppf(1 - level_confidence, hits + 1, trials - hits) if hits < trials else 1.0
    return lo, hi


@pytest.mark.parametrize("b", [None, math.sqrt(6.0)])
def test_both_tests_hold_their_level_under_the_null(b):
    """G = 0: rejection rates whose one-sided 99% Clopper-Pearson lower bound exceeds the level
    would refute validity (with the a priori b the betting test's level is exact)."""
    level, trials = 0.1, 300
    rej_h = rej_a = 0
    for k in range(trials):
        acc = _feed(*_null(256, k), 64, b=b)
        rej_h += hoeffding_test(acc, level, b).reject
        rej_a += adaptive_test(acc, level, b).reject
    for hits in (rej_h, rej_a):
        assert _rate(trials, hits)[0] <= level


def test_betting_has_power_where_hoeffding_has_none():
    """A small signal: the betting test detects it (CP lower bound on power >= 0.8), Hoeffding never."""
    level, trials = 0.05, 60
    rej_h = rej_a = 0
    for k in range(trials):
        acc = _feed(*_alt(1024, 1000 + k, 0.25), 128)
        rej_h += hoeffding_test(acc, level).reject
        rej_a += adaptive_test(acc, level).reject
    assert _rate(trials, rej_a)[0] >= 0.8
    assert rej_h == 0


def test_lower_confidence_bound_covers_the_true_norm():
    """||G|| under the alternative, computed in closed form: E[m phi^T] = shift E[phi_1 phi^T] per row."""
    shift, d = 0.25, 3
    second = torch.tensor([1 / 3, 1 / 4], dtype=F64)          # E[U1 U1], E[U1 U2] for U ~ U(0,1)^2
    true = math.sqrt(d) * shift * float(second.norm())
    trials, covered = 60, 0
    for k in range(trials):
        acc = _feed(*_alt(1024, 2000 + k, shift), 128)
        covered += adaptive_test(acc, 0.1).lower_bound <= true
    assert _rate(trials, covered)[1] >= 0.9


def test_a_wrong_a_priori_bound_and_small_probes_are_rejected():
    acc = _feed(*_null(64, 0), 64)
    with pytest.raises(ValueError, match="b == 0.1, must be >="):
        hoeffding_test(acc, 0.05, 0.1)
    tiny = SiteAccumulator(2, 1, 4, 4)
    tiny.update(torch.ones(4, 1, 2, dtype=F64), torch.ones(4, 1, 1, dtype=F64))
    with pytest.raises(ValueError, match="betting samples"):
        adaptive_test(SiteAccumulator(2, 1, 4, 1), 0.05)


def test_sample_sizes_needed_follow_their_closed_forms():
    """Hoeffding: 2 (floor(2 ln(2/a) b^4 / g^2) + 1); betting: ceil(ln(1/a) / rate) + chunk,
    rate = lam mu - lam^2 (v + mu^2)/2 at the capped optimum; none for g <= 0."""
    assert n_needed_hoeffding(2.0, 0.05, 0.01) == 2 * (math.floor(2 * math.log(200) * 16 / 0.0025) + 1)
    mu, v, b = math.sqrt(0.04), 0.5, 1.0
    lam = min(mu / (v + mu**2), 1 / (2 * b))
    assert n_needed_adaptive(v, b, 0.04, 0.05, 16) == 16 + math.ceil(math.log(20) / (lam * mu - lam**2 * (v + mu**2) / 2))
    assert n_needed_adaptive(v, b, 0.0, 0.05) is None and n_needed_hoeffding(b, -1.0, 0.05) is None
    assert n_needed_adaptive(0.01, 1.0, 0.01, 0.05) < n_needed_hoeffding(1.0, 0.01, 0.05)
