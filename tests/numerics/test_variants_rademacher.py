"""The empirical Rademacher term of the THEORY §6 variants agrees with the numerics estimator."""
import math

import numpy as np
import pytest
import torch

from bounds._statement import evaluate
from bounds.routes import Setup
from bounds.variant_routes import VariantInputs, evaluate_variants
from bounds.variants import mc_error_expression
from numerics import estimators as est


def _phi(n=64, r=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(n, r, generator=g, dtype=torch.float64)


def test_mc_error_is_the_bounds_expression():
    phi = _phi()
    value, err = est.rademacher_readout_mc(phi, 3, 1.5, 300, seed=1, delta_mc=2e-3)
    expected = evaluate(mc_error_expression(), dict(nu_V=1.5, M=64, d=3, phi_sq_sum=float(phi.pow(2).sum()),
                                                    delta_mc=2e-3, n_draws=300))
    assert err == pytest.approx(float(expected), rel=1e-12)


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
