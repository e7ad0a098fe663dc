"""``M_needed`` (issue 29): the smallest training-sample size at which a route certifies, every statistic held.

Expected values come from independent computations: the root of a synthetic bound in closed
form, and THEORY §6b (a) with Hoeffding tails typed from the text (its ``M``-root in closed form);
the solver must also reject what is not "certified from here on" (a window of sizes) and say why
a route whose ``M``-free terms exceed its gain never certifies.
"""
import dataclasses
import math

import numpy as np
import pytest

from bounds.localised_routes import LocalisedSetup, evaluate_localised
from bounds.sample_size import M_MAX, localised_sizes, size_ratio, smallest_certifying
from numerics.estimators import n_needed_improvable

SURE = "localised_train_sure_hoeffding"


def _synthetic(g=0.01, a=0.3, b=5.0):
    """A route whose bound is ``L - g + a / sqrt(M) + b / M`` (monotone in ``M``) and its exact root."""
    x = (-a + math.sqrt(a * a + 4 * b * g)) / (2 * b)      # b x^2 + a x - g = 0, x = 1/sqrt(M)
    return (lambda M: {"r": g - a / np.sqrt(M) - b / M > 0}), 1.0 / x**2


def test_synthetic_route_certifies_at_M_needed_and_not_at_two_thirds_of_it():
    certifies, root = _synthetic()
    M = float(smallest_certifying(certifies, ["r"])["r"])
    assert M == math.ceil(root) or M == math.floor(root) + 1
    assert certifies(np.float64(M))["r"] and not certifies(np.float64(M / 1.5))["r"]
    assert not certifies(np.float64(M - 1))["r"]          # the smallest integer size, not just a certifying one


def test_batched_setups_are_solved_elementwise():
    gs = np.array([0.01, 0.02, 0.05])
    roots = [_synthetic(g)[1] for g in gs]
    out = smallest_certifying(lambda M: {"r": gs - 0.3 / np.sqrt(M) - 5.0 / M > 0}, ["r"], gs.shape)["r"]
    assert out.shape == (3,) and np.all(np.abs(out - np.ceil(roots)) <= 1)


def test_a_window_of_certifying_sizes_is_not_M_needed():
    """Certified only for M in [1e3, 1e5]: no size from which it certifies at every larger M (a failing input)."""
    out = smallest_certifying(lambda M: {"w": (M >= 1e3) & (M <= 1e5)}, ["w"])
    assert np.isnan(out["w"])


def _setup(delta_train=2e-3, **kw):
    return LocalisedSetup(**{**dict(M=20000, K=50000, L_test_old=0.03, B=8.1, L_loss=1.0, L_top=1.0, d=8, r=8,
                                    rho_phi=3.0, nu_V=0.006, delta_train=delta_train), **kw})


def _sure_hoeffding_root(st, level=0.05):
    """THEORY §6b (a), typed from the text, levels level/2 each: the bound's root in M, in closed form."""
    lv = level / 2
    r_d = min(st.B, st.L_loss * st.L_top * st.nu_V * st.rho_phi)
    c = 2 * math.sqrt(2 * st.d) * st.L_loss * st.L_top * st.nu_V * st.rho_phi + 2 * r_d * math.sqrt(
        math.log(1 / lv) / 2)                                # U_S = c / sqrt(M)
    t_T = 2 * r_d * math.sqrt(math.log(1 / lv) / (2 * st.K))
    room = st.delta_train - t_T
    return (c / room) ** 2 if room > 0 else None


def test_localised_M_needed_matches_theory_by_hand_and_certifies_there():
    st = _setup()
    root = _sure_hoeffding_root(st)
    s = localised_sizes(st, 0.05, [SURE])[SURE]
    assert abs(s.M_needed - math.ceil(root)) <= 1
    at = lambda M: bool(evaluate_localised(dataclasses.replace(st, M=M), 0.05).routes[SURE].certified)  # noqa
    assert at(s.M_needed) and not at(s.M_needed / 1.5)
    assert s.certified_at_M == (st.M >= s.M_needed) and s.certified_at_M
    low = localised_sizes(dataclasses.replace(st, M=5000), 0.05, [SURE], terms=False)[SURE]
    assert not low.certified_at_M and low.M_needed == s.M_needed     # M is varied, so where it was measured is moot


def test_each_term_states_its_dependence_on_M():
    s = localised_sizes(_setup(), 0.05, [SURE])[SURE]
    by = {(t["of"], t["event"]): [] for t in s.terms}
    for t in s.terms:
        by[(t["of"], t["event"])].append(t)
    assert all(t["M_exponent"] == pytest.approx(-0.5, abs=1e-3) for t in by[("U_S", "E_U")])    # 1/sqrt(M)
    assert all(not t["depends_on_M"] for t in by[("t_T_d", "H_T_diff")])                      # on T: M-free
    assert all(not t["depends_on_M"] for t in by[("-delta_train", None)])                     # held at its value
    for t in by[("U_S", "E_U")]:     # value at M_needed = value at M times (M / M_needed)^(1/2)
        assert t["value_at_M_needed"] == pytest.approx(t["value"] * math.sqrt(s.M / s.M_needed), rel=1e-9)


def test_a_route_whose_M_free_terms_exceed_its_gain_says_so():
    st = _setup(delta_train=1e-5)       # below t_T(d_new) on T, which no M changes
    assert _sure_hoeffding_root(st) is None
    s = localised_sizes(st, 0.05, [SURE])[SURE]
    assert s.M_needed is None and "t_T_d" in s.reason and f"{M_MAX:.0e}" in s.reason
    assert s.improvement_at_M_max < 0 and size_ratio(s.M_needed, 100) is None


def test_n_needed_improvable_reaches_the_threshold_at_the_observed_rate():
    level, k, n_bet, logw = 0.01, 16, 3000, 2.0
    n = n_needed_improvable(logw, n_bet, level, k)
    rate = logw / n_bet
    assert n * (1 - 1 / k) * rate >= math.log(1 / level) > (n - 1) * (1 - 1 / k) * rate
    assert n_needed_improvable(-0.5, n_bet, level, k) is None and n_needed_improvable(0.0, n_bet, level, k) is None
    assert size_ratio(2 * n, n) == 2.0
