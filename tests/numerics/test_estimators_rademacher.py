"""Tests for the Rademacher / eps estimators and diagnostics (THEORY §2, §4).

Monte Carlo is compared with the exact expectation (enumeration of all sign matrices) and
with the closed form from ``bounds.generalisation``; statistical checks state their level.
"""
import itertools
import math

import numpy as np
import pytest
import torch

import numerics.estimators as est
from bounds import _symbols as s
from bounds.generalisation import eps_expression, rad_vec_closed_form
from numerics.insertion import insert_block
from numerics.models import PostNormResMLP
from tests._tolerances import TOL

F64 = torch.float64




def _exact_readout_rademacher(phi, d, nu_V):
    n = phi.shape[0]
    values = [float((torch.tensor(signs, dtype=F64).reshape(n, d).T @ phi).norm())
              for signs in itertools.product((-1.0, 1.0), repeat=n * d)]
    return nu_V * float(np.mean(values)) / n


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mc_rademacher_within_its_mcdiarmid_error_of_the_exact_value(seed):
    """Exact expectation by enumerating 2^(n d) = 4096 sign matrices. The MC error bound is a
    one-sided McDiarmid bound at delta_mc = 1e-3 each side: a failure has probability <= 2e-3."""
    phi = torch.rand(4, 2, dtype=F64, generator=torch.Generator().manual_seed(seed))
    exact = _exact_readout_rademacher(phi, 3, 1.5)
    value, err = est.rademacher_readout_mc(phi, 3, 1.5, 4000, seed=seed, delta_mc=1e-3)
    assert abs(value - exact) <= err
    assert err < 0.5 * exact  # the error bound is informative, not vacuous


def test_mc_error_bound_rejects_a_biased_estimator():
    """Same check fails for a wrong estimator (missing the 1/n): the test can fail."""
    phi = torch.rand(4, 2, dtype=F64, generator=torch.Generator().manual_seed(0))
    exact = _exact_readout_rademacher(phi, 3, 1.0)
    value, err = est.rademacher_readout_mc(phi, 3, 1.0, 4000, delta_mc=1e-3)
    assert abs(value * 4 - exact) > err


def test_mc_below_jensen_below_closed_form():
    """(nu_V/n) E||s^T phi|| <= (nu_V/n) sqrt(d sum ||phi_i||^2) <= nu_V sqrt(d) rho_phi / sqrt(n)."""
    net = PostNormResMLP(3, 8, 2, 4, seed=1)
    new = insert_block(net, 1, "readout", 6)
    x = torch.randn(64, 3, dtype=F64)
    phi = new.block.features(net.bottom(x, 1))
    rp = est.rho_phi(new.block, net.rho(1))
    value, err = est.rademacher_readout_mc(phi, 8, 2.0, 500, delta_mc=1e-3)
    jensen = est.rademacher_readout_jensen(phi, 8, 2.0)
    closed = float(rad_vec_closed_form("readout").subs({s.nu_V: 2.0, s.d: 8, s.rho_phi: rp, s.n: 64}))
    assert value - err <= jensen <= closed


def test_rho_phi_bounds_features_on_the_rho_sphere():
    net = PostNormResMLP(3, 8, 2, 4)
    for family in ("readout", "full", "linear"):
        block = insert_block(net, 1, family, 6).block
        u = torch.randn(2000, 8, dtype=F64)
        u = 3.0 * u / u.norm(dim=1, keepdim=True)
        assert float(block.features(u).detach().norm(dim=1).max()) <= est.rho_phi(block, 3.0) * (1 + 1e-12)
    with pytest.raises(ValueError, match="rho == -1"):
        est.rho_phi(block, -1)


@pytest.mark.parametrize("kw, match", [(dict(n_draws=0), "n_draws"), (dict(delta_mc=1.5), "delta_mc == 1.5"),
                                       (dict(d=2.5), "d == 2.5"), (dict(nu_V=-1.0), "nu_V")])
def test_mc_rejects_bad_arguments(kw, match):
    args = dict(phi=torch.ones(3, 2, dtype=F64), d=2, nu_V=1.0, n_draws=10)
    args.update(kw)
    with pytest.raises((ValueError, TypeError), match=match):
        est.rademacher_readout_mc(**args)


def test_eps_closed_form_matches_bounds_expression():
    consts = dict(B=2.0, L_loss=math.sqrt(2), L_top=3.0, d=16, rho_phi=4.0, nu_V=0.5)
    got = est.eps_n_closed_form("readout", 1000, 0.05, n_grid=8, **consts)
    expr = eps_expression("readout", s.n, s.delta, grid=True)
    subs = {getattr(s, k): v for k, v in consts.items()} | {s.n: 1000, s.delta: 0.05, s.n_grid: 8}
    assert math.isclose(got, float(expr.subs(subs)), **{"rel_tol": TOL["float64"]["rtol"]})
    assert got > est.eps_n_closed_form("readout", 1000, 0.05, **consts)  # the grid costs something


def test_eps_readout_mc_splits_the_level():
    phi = torch.rand(50, 4, dtype=F64)
    out = est.eps_n_readout_mc(phi, 8, 1.0, 0.1, B=2.0, L_loss=1.4, L_top=2.0, mc_share=0.2, n_draws=200)
    assert math.isclose(out["level_mc"] + out["level_uniform"], 0.1)
    expected = (2 * math.sqrt(2) * 1.4 * 2.0 * (out["rad_value"] + out["mc_error"])
                + 3 * 2.0 * math.sqrt(math.log(4 / 0.08) / 100))
    assert math.isclose(out["eps"], expected, rel_tol=1e-12)


def test_cap_grid_and_cap_for():
    grid = est.cap_grid(0.5, 3.0)
    assert grid == [0.5, 1.0, 2.0, 4.0] and est.cap_for(1.2, grid) == 2.0
    with pytest.raises(ValueError, match="largest cap"):
        est.cap_for(5.0, grid)
    with pytest.raises(ValueError, match="ratio == 1"):
        est.cap_grid(1.0, 2.0, ratio=1)


def test_covariance_diagnostics_match_numpy():
    g = torch.Generator().manual_seed(3)
    m = torch.randn(300, 5, generator=g, dtype=F64) @ torch.randn(5, 5, generator=g, dtype=F64)
    out = est.covariance_diagnostics(m)
    cov = np.cov(m.numpy().T)
    off = cov - np.diag(np.diag(cov))
    assert math.isclose(out["spectral_norm"], np.linalg.eigvalsh(cov).max(), rel_tol=1e-10)
    assert math.isclose(out["trace"], np.trace(cov), rel_tol=1e-10)
    assert math.isclose(out["offdiag_ratio"], np.linalg.norm(off) / np.linalg.norm(cov), rel_tol=1e-10)
    diag_only = est.covariance_diagnostics(torch.randn(300, 5, generator=g, dtype=F64) * torch.arange(1, 6))
    assert diag_only["offdiag_ratio"] < out["offdiag_ratio"]
    with pytest.raises(ValueError, match=r"n >= 2, got \(1, 5\)"):
        est.covariance_diagnostics(m[:1])


def test_norm_diagnostics_consistent_with_the_model():
    net = PostNormResMLP(3, 8, 2, 4, norm="layer", gain=1.3)
    x = torch.randn(40, 3, dtype=F64)
    out = est.norm_diagnostics(net, x)
    assert all(z <= r * (1 + 1e-12) for z, r in zip(out["state_norm_max"], out["rho"]))
    pre = net.embed(x).detach()
    manual = float((pre - pre.mean(1, keepdim=True)).pow(2).mean(1).sqrt().min())
    assert math.isclose(out["r_min"][0], manual, rel_tol=1e-12)
    assert out["r_min_overall"] == min(out["r_min"])


def test_random_bits_are_fair_and_uncorrelated():
    """99.9% two-sided binomial/CLT checks (z = 3.29) on 2^20 bits: mean 1/2, and
    P(b_k = b_{k+1}) = 1/2 for neighbours (including across byte and draw boundaries)."""
    from numerics._numerics import random_bits

    def looks_fair(bits):
        """Mean and lag-1/8/56 agreement within 99.9% two-sided CLT bounds (z = 3.29)."""
        n = bits.numel()
        ok = abs(float(bits.mean()) - 0.5) <= 3.29 * 0.5 / math.sqrt(n)
        for lag in (1, 8, 56):
            same = float((bits[lag:] == bits[:-lag]).double().mean())
            ok = ok and abs(same - 0.5) <= 3.29 * 0.5 / math.sqrt(n - lag)
        return ok

    bits = random_bits(1 << 20, torch.Generator().manual_seed(0), F64)
    assert bits.shape == (1 << 20,) and set(bits.unique().tolist()) <= {0.0, 1.0}
    assert looks_fair(bits)
    # broken generators must fail the same check: every bit repeated twice; bits stuck at 0
    assert not looks_fair(torch.repeat_interleave(bits[::2], 2))
    assert not looks_fair(torch.zeros_like(bits))


def test_streamed_rademacher_matches_the_one_shot_estimator_and_brackets_the_exact_value():
    """One chunk: the same signs as rademacher_readout_mc; the sure bracket contains the value by enumeration."""
    import itertools

    from numerics.estimators import rademacher_readout_mc, rademacher_readout_stream

    g = torch.Generator().manual_seed(0)
    phi = torch.rand(5, 3, generator=g, dtype=torch.float64) - 0.3
    one = rademacher_readout_mc(phi, 2, 0.7, 6, seed=3, delta_mc=0.01)
    st = rademacher_readout_stream([phi], 2, 0.7, 6, seed=3, delta_mc=0.01)
    assert (st.value, st.mc_error) == pytest.approx(one, rel=1e-14)
    chunked = rademacher_readout_stream([phi[:2], phi[2:]], 2, 0.7, 6, seed=3, delta_mc=0.01)
    assert chunked.phi_sq_sum == pytest.approx(float(phi.pow(2).sum())) and chunked.mc_error == pytest.approx(one[1])
    exact = 0.0
    for signs in itertools.product((-1.0, 1.0), repeat=10):     # E_s ||s^T phi||_F over all 2^10 sign matrices
        exact += float((torch.tensor(signs, dtype=torch.float64).reshape(5, 2).T @ phi).norm())
    exact *= 0.7 / (2**10 * 5)
    lo, hi = st.exact_bracket()
    assert lo <= exact <= hi and hi / lo < 1.5
    assert st.exact_bracket()[1] == pytest.approx(0.7 / 5 * math.sqrt(2 * float(phi.pow(2).sum())))
    with pytest.raises(ValueError, match="no chunk"):
        rademacher_readout_stream([], 2, 0.7, 6)
