"""Tests for Paper B's saturation scores and the U-statistic test (THEORY §8, §2 C1)."""
import math

import pytest
import torch
from scipy.stats import beta as beta_dist

import numerics.estimators as est

F64 = torch.float64




def _gen(seed):
    return torch.Generator().manual_seed(seed)


def test_projection_equals_cross_gradient_score_for_white_features():
    n, r = 200, 4
    q, _ = torch.linalg.qr(torch.randn(n, r, generator=_gen(0), dtype=F64))
    phi = q * math.sqrt(n)  # Sigma_phi = I
    G = torch.randn(6, r, generator=_gen(1), dtype=F64)
    assert math.isclose(est.projection_score(G, phi), est.cross_gradient_score(G), rel_tol=1e-10)
    assert est.projection_score(torch.zeros(6, r, dtype=F64), phi) == 0.0


def test_projection_score_uses_the_pseudo_inverse():
    phi = torch.tensor([[1.0, 0.0], [2.0, 0.0]], dtype=F64)  # Sigma_phi singular
    G = torch.tensor([[1.0, 5.0]], dtype=F64)
    assert math.isclose(est.projection_score(G, phi), 1.0 / 2.5, rel_tol=1e-12)
    with pytest.raises(ValueError, match=r"\(1, 2\) and \(2, 3\)"):
        est.projection_score(G, torch.ones(2, 3, dtype=F64))


def test_realisability_ratio_one_zero_and_in_between():
    g = _gen(2)
    phi = torch.randn(100, 3, generator=g, dtype=F64)
    realisable = phi @ torch.randn(3, 5, generator=g, dtype=F64)
    assert math.isclose(est.realisability_ratio(realisable, phi), 1.0, rel_tol=1e-10)
    q, _ = torch.linalg.qr(torch.cat([phi, torch.randn(100, 5, generator=g, dtype=F64)], 1))
    orthogonal = q[:, 3:]  # columns orthogonal to phi's column space
    assert abs(est.realisability_ratio(orthogonal, phi)) < 1e-10
    mixed = est.realisability_ratio(realisable + 3 * orthogonal, phi)
    assert 0.0 < mixed < 1.0


def test_ag_max_overall_and_per_candidate():
    ms = {1: torch.tensor([[3.0, 4.0]]), 2: torch.tensor([[0.0, 1.0], [6.0, 8.0]])}
    out = est.ag_max_per_candidate(ms)
    assert out == {"per_candidate": {1: 5.0, 2: 10.0}, "overall": 10.0}


def test_first_order_scan_matches_separate_estimators():
    from numerics.insertion import insert_block
    from numerics.models import PostNormResMLP
    net = PostNormResMLP(3, 8, 3, 4)
    x, y = torch.randn(30, 3, dtype=F64), torch.randint(0, 4, (30,))
    blocks = {l: insert_block(net, l, "readout", 5, seed=l).block for l in (0, 2, 3)}
    scan = est.first_order_scan(net, x, y, blocks)
    ms = est.activation_gradients(net, x, y, list(blocks))
    for l, block in blocks.items():
        torch.testing.assert_close(scan["G"][l], est.cross_gradient(ms[l], block.features(net.bottom(x, l))))
        assert scan["ag_max"][l] == est.ag_max(ms[l])
    assert scan["ag_max_overall"] == max(scan["ag_max"].values())


def _null_sample(n, seed):
    """m independent of phi with E[m] = 0: G = 0 exactly; ||X_i|| <= b = sqrt(3) * 1."""
    g = _gen(seed)
    m = (torch.randint(0, 2, (n, 3), generator=g) * 2 - 1).to(F64)
    phi = torch.rand(n, 2, generator=g, dtype=F64) / math.sqrt(2)
    return m, phi, math.sqrt(3.0)


def test_saturation_test_level_under_the_null_clopper_pearson():
    """Under H0 (G = 0) the rejection rate must not exceed the level: a one-sided
    Clopper-Pearson 99% lower confidence bound on the rate must be <= level."""
    level, trials = 0.2, 300
    rejections = sum(est.saturation_test(*_null_sample(64, k)[:2], math.sqrt(3.0), level).signal_detected
                     for k in range(trials))
    lower = beta_dist.ppf(0.01, rejections, trials - rejections + 1) if rejections else 0.0
    assert lower <= level


def test_saturation_test_detects_a_strong_signal_and_covers_the_truth():
    """phi_i = (0.9 + 0.1 U_i) / sqrt(2) per coordinate, m_i = 0.9 * ones(3)/sqrt(3): ||X_i|| <= 0.9,
    ||G||^2 = 0.81 * 2 * (0.95^2 / 2); the 99% interval must contain it."""
    phi = (0.9 + 0.1 * torch.rand(4000, 2, generator=_gen(5), dtype=F64)) / math.sqrt(2)
    m = torch.full((4000, 3), 0.9 / math.sqrt(3), dtype=F64)
    res = est.c1_test(m, phi, level=0.01, b=1.0)
    assert res.signal_detected and not res.saturated
    lo, hi = res.interval
    assert lo <= 0.81 * 0.95**2 <= hi


def test_saturation_test_rejects_invalid_b_and_level():
    m, phi, b = _null_sample(20, 0)
    with pytest.raises(ValueError, match="b == 0.1, must be >="):
        est.saturation_test(m, phi, 0.1, 0.05)
    with pytest.raises(ValueError, match="level == 1.5, must be in \\(0, 1\\)"):
        est.saturation_test(m, phi, b, 1.5)
    res = est.saturation_test(m, phi, None, 0.05)
    assert res.b_from_data and res.threshold > 0


def test_saturation_threshold_is_the_hoeffding_u_statistic_deviation():
    """THEORY §8: t = b^2 sqrt(2 ln(2/level) / floor(n/2)), written out independently here;
    a wrong exponent of b, n instead of floor(n/2), or ln(1/level) would change it."""
    m, phi, b = _null_sample(65, 3)
    res = est.saturation_test(m, phi, b, 0.05)
    expected = b**2 * math.sqrt(2 * math.log(2 / 0.05) / 32)
    assert res.threshold == pytest.approx(expected, rel=1e-12)
    for wrong in (b * math.sqrt(2 * math.log(2 / 0.05) / 32), b**2 * math.sqrt(2 * math.log(2 / 0.05) / 65),
                  b**2 * math.sqrt(2 * math.log(1 / 0.05) / 32)):
        assert res.threshold != pytest.approx(wrong, rel=1e-6)


def test_saturation_decision_just_above_and_below_the_threshold():
    """Constructed samples with S_hat on either side of t: the test must decide each correctly."""
    n = 200
    phi = torch.ones(n, 1, dtype=F64)
    t = est.saturation_test(torch.ones(n, 1, dtype=F64), phi, 1.0, 0.1).threshold
    for factor, detected in ((1.02, True), (0.98, False)):
        a = math.sqrt(factor * t)              # X_i = a for all i: S_hat = a^2 exactly
        res = est.saturation_test(torch.full((n, 1), a, dtype=F64), phi, 1.0, 0.1)
        assert res.s_hat == pytest.approx(factor * t, rel=1e-12)
        assert res.signal_detected is detected
