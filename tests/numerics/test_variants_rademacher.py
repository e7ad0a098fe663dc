"""The empirical Rademacher term of the THEORY §6 variants agrees with the numerics estimator."""
import itertools
import math

import numpy as np
import pytest
import torch

from bounds.routes import Setup
from bounds.variant_routes import VariantInputs, evaluate_variants
from numerics import estimators as est


def _phi(n=64, r=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, r, generator=g, dtype=torch.float64)


def _exact_readout_rademacher(phi: torch.Tensor, d: int, nu_V: float) -> float:
    """``(nu_V/M) E_s ||s^T phi||_F`` exactly: the mean over all ``2^(M d)`` sign matrices (M d <= 16)."""
    M = phi.shape[0]
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=M * d))).reshape(-1, d, M)
    return nu_V / M * float(np.mean(np.linalg.norm(signs @ phi.numpy(), axis=(1, 2))))


def test_mc_error_covers_the_exact_empirical_rademacher():
    """P(rad_S > rad_hat + error) <= delta_mc over the sign draws (Clopper-Pearson, 99.9%), rad_S by enumeration.

    A tiny phi (M d = 8: 256 sign matrices) and 2 draws per estimate make the Monte Carlo noisy; the
    check has power: the estimate without its error falls below rad_S about half the time.
    """
    from tests.bounds._toy_world import clopper_pearson

    g = torch.Generator().manual_seed(3)
    phi = torch.rand(4, 3, generator=g, dtype=torch.float64) * torch.tensor([[1.0], [2.0], [0.5], [3.0]],
                                                                             dtype=torch.float64)
    d, nu_V, delta_mc, reps = 2, 1.3, 0.1, 2000
    exact = _exact_readout_rademacher(phi, d, nu_V)
    assert exact <= est.rademacher_readout_jensen(phi, d, nu_V)          # Jensen's sure bound
    draws = [est.rademacher_readout_mc(phi, d, nu_V, 2, seed=seed, delta_mc=delta_mc) for seed in range(reps)]
    miss = sum(exact > value + err for value, err in draws)
    assert clopper_pearson(miss, reps, 0.999)[0] <= delta_mc
    miss_no_error = sum(exact > value for value, _ in draws)
    assert clopper_pearson(miss_no_error, reps, 0.999)[0] > delta_mc     # power: a dropped error is flagged


def test_direct_empirical_variant_uses_the_estimators_eps():
    """Two-sided empirical eps of the direct variant == eps_n_readout_mc at the same levels (THEORY §4)."""
    phi, level, share = _phi(), 0.05, 0.1
    mc = est.eps_n_readout_mc(phi, 3, 1.5, level, B=2.0, L_loss=math.sqrt(2), L_top=1.3, mc_share=share,
                              n_draws=300, seed=1)
    setup = Setup(L_test_old=1.0, delta_R=0.1, delta_erm=0.0, delta_test_R=0.1, M=64, K=1000, delta=level,
                  delta_prime=0.05, B=2.0, L_loss=math.sqrt(2), block=dict(d=3, L_top=1.3, rho_phi=1.0, nu_V=1.5))
    inp = VariantInputs(rad_hat=mc["rad_value"], rad_hat_mc_error=mc["mc_error"], delta_mc=mc["level_mc"])
    r = evaluate_variants(setup, 0.5, inp).variants["direct_tight_hoeffding_empirical"]
    two_eps = next(float(t["value"]) for t in r.terms if t["term"] == "2*eps_M")
    assert two_eps / 2 == pytest.approx(mc["eps"], rel=1e-12)
    assert np.isclose(float(r.levels["E_S"]) + float(r.levels["E_MC"]), level)
