"""Issue 17 item 6: without ``delta_erm_S`` the direct variants and the regimes say which Delta_ERM they use.

On the old behaviour the direct variants used ``delta_erm`` (relative to ``f~_pop``) in silence:
no note, while the paper's direct route states it. Both tests below fail there.
"""
import numpy as np

from bounds.regimes import degenerate_regime
from bounds.routes import Setup
from bounds.variant_routes import evaluate_variants

EX = dict(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5, delta=0.05,
          delta_prime=0.05, B=4.2, L_loss=2**0.5, family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))


def _erm_notes(notes):
    return [n for n in notes if "delta_erm_S not given" in n and "direct variants" in n]


def test_direct_variants_state_the_substitution():
    rep = evaluate_variants(Setup(**EX), 0.1, any_route=False)
    assert "direct_tight_hoeffding" in rep.variants
    assert len(_erm_notes(rep.notes)) == 1


def test_measured_delta_erm_S_is_used_and_nothing_is_said():
    plain = evaluate_variants(Setup(**EX), 0.1, any_route=False)
    measured = evaluate_variants(Setup(**EX, delta_erm_S=0.001), 0.1, any_route=False)
    assert not _erm_notes(measured.notes)
    gap = measured.variants["direct_tight_hoeffding"].bound - plain.variants["direct_tight_hoeffding"].bound
    np.testing.assert_allclose(gap, 0.004 - 0.001, rtol=1e-9)   # only Delta_ERM changed (0.004 -> 0.001)
    np.testing.assert_allclose(measured.variants["population_tight_hoeffding"].bound,
                               plain.variants["population_tight_hoeffding"].bound, rtol=0)


def test_regimes_state_the_substitution():
    assert "delta_erm_S is not given" in degenerate_regime(Setup(**EX), 0.1).summary
    assert "delta_erm_S" not in degenerate_regime(Setup(**EX, delta_erm_S=0.004), 0.1).summary
