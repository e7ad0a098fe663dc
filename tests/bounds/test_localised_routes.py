"""THEORY §6b routes evaluated from measured inputs: values by an independent computation, shapes, bad input."""
import math

import numpy as np
import pytest

from plumbing.validation import InputError
from bounds.localised_routes import (LOCALISED_PARAMETERS, LocalisedSetup, evaluate_localised, localised_values,
                                     paired_delta_R_lower)
from bounds.routes import Setup, evaluate_routes

FULL = dict(M=20000, K=10000, L_test_old=0.03, B=8.1, L_loss=1.5, L_top=2.0, d=8, r=16, rho_phi=3.0, nu_V=0.006,
            kappa=2.0, b_xi=0.5, A_norm=1.0, delta_train=2e-4, delta_R=1.5e-4, delta_R_failure=0.0, delta_erm_pop=5e-5,
            var_T_dnew=6.4e-7, var_S_dpop=6.0e-7, exact_applies=True)


def test_every_route_evaluates_with_its_inputs_and_terms_add_up():
    rep = evaluate_localised(LocalisedSetup(**FULL), 0.05)
    assert len(rep.routes) == 12 and not rep.skipped
    paper_keys = set(evaluate_routes(Setup(L_test_old=1, delta_R=0.1, delta_erm=0, delta_test_R=0.1, M=10, K=10,
                                           delta=0.05, delta_prime=0.05, B=1, L_loss=1,
                                           block=dict(d=1, L_top=1, rho_phi=1, nu_V=1)), 0.1).direct.to_dict())
    for name, r in rep.routes.items():
        d = r.to_dict()
        assert paper_keys <= set(d) and {"terms", "levels", "origin"} <= set(d), name
        assert sum(t["value"] for t in d["terms"]) == pytest.approx(d["bound"], rel=1e-12)
        assert d["failure_probability"] <= 0.05 and sum(d["levels"].values()) <= 0.05 + 1e-15
        assert r.theorem == name and r.route == name.split("_")[1]


def test_train_exact_bernstein_by_hand():
    """U_S (c) and the Bernstein tail on T, typed from THEORY §6b with this project's e_G constant 4/3."""
    st = LocalisedSetup(**FULL)
    r = evaluate_localised(st, 0.05).routes["localised_train_exact_bernstein"]
    M, K, nu, rho, b, sig, S = 20000, 10000, 0.006, 3.0, 0.5, 0.25, 9.0   # sure sigma^2 = b^2, ||Sigma|| <= rho^2
    dU, dT = 0.025, 0.025
    L = math.log(2 / (dU / 2))
    eG = 4 * b * L / (3 * M) + math.sqrt(2 * sig * L / M)
    L2 = math.log(16 / (dU / 2))
    lam = math.sqrt(2 * rho**2 * S * L2 / M) + 2 * S * L2 / (3 * M)
    r_d = min(8.1, 1.5 * 2.0 * nu * rho)
    t_T = math.sqrt(2 * 6.4e-7 * math.log(2 / dT) / K) + 14 * r_d * math.log(2 / dT) / (3 * (K - 1))
    assert float(r.bound) == pytest.approx(0.03 - 2e-4 + nu * eG + nu**2 * lam + t_T, rel=1e-9)
    assert float(r.failure_probability) == pytest.approx(0.05, rel=1e-12)


def test_paper_sure_hoeffding_by_hand():
    r = evaluate_localised(LocalisedSetup(**FULL), 0.05).routes["localised_paper_sure_hoeffding"]
    M, K, nu, rho, d, lv = 20000, 10000, 0.006, 3.0, 8, 0.05 / 3
    r_d = min(8.1, 1.5 * 2.0 * nu * rho)
    U = 2 * math.sqrt(2 * d) * 1.5 * 2.0 * nu * rho / math.sqrt(M) + 2 * r_d * math.sqrt(math.log(1 / lv) / (2 * M))
    tails = 2 * r_d * math.sqrt(math.log(1 / lv) / (2 * M)) + 2 * r_d * math.sqrt(math.log(1 / lv) / (2 * K))
    assert float(r.bound) == pytest.approx(0.03 - 1.5e-4 - 5e-5 + U + tails, rel=1e-9)


def test_vectorised_over_arrays_equals_one_by_one():
    Ms = np.array([5000.0, 20000.0, 80000.0])
    batch = evaluate_localised(LocalisedSetup(**{**FULL, "M": Ms}), 0.05).routes
    for i, M in enumerate(Ms):
        one = evaluate_localised(LocalisedSetup(**{**FULL, "M": M}), 0.05).routes
        for name in one:
            assert batch[name].bound[i] == pytest.approx(float(one[name].bound), rel=1e-12)


def test_skipped_routes_name_what_they_need():
    st = LocalisedSetup(**{**{k: v for k, v in FULL.items() if k not in ("kappa", "var_T_dnew", "delta_R")},
                           "exact_applies": False})
    rep = evaluate_localised(st, 0.05)
    assert set(rep.routes) == {"localised_train_sure_hoeffding"}
    assert "localised.kappa" in rep.skipped["localised_train_linearised_hoeffding"]
    assert "localised.var_T_dnew" in rep.skipped["localised_train_sure_bernstein"]
    assert "exact_applies" in rep.skipped["localised_train_exact_hoeffding"]
    assert "localised.delta_R" in rep.skipped["localised_paper_sure_hoeffding"]


def test_signal_sample_bounds_are_paid_and_clipped_at_the_sure_ones():
    st = LocalisedSetup(**FULL, sigma2_ub=0.01, delta_sigma=0.002)
    r = evaluate_localised(st, 0.05).routes["localised_train_linearised_hoeffding"]
    assert float(r.levels["E_U"]) == pytest.approx(0.025 - 0.001 + 0.002, rel=1e-12)   # (0.05 - 0.002)/2 + 0.002
    sure = evaluate_localised(LocalisedSetup(**FULL), 0.05).routes["localised_train_linearised_hoeffding"]
    assert float(r.bound) < float(sure.bound)
    big = localised_values(LocalisedSetup(**FULL, sigma2_ub=9.0, delta_sigma=0.002), "localised_train_exact_hoeffding",
                           0.05)
    assert float(big["sigma2_ub"]) == 0.25   # min(UCB, b_xi^2): the sure bound holds on the same event


def test_paired_delta_R_lower_uses_the_difference_range():
    st = LocalisedSetup(**FULL)
    low = paired_delta_R_lower(6.3e-5, 2.25e-14, 10**6, st, 0.01)
    r_d = min(8.1, 1.5 * 2.0 * 0.006 * 3.0)
    L = math.log(200)
    assert float(low) == pytest.approx(6.3e-5 - math.sqrt(2 * 2.25e-14 * L / 1e6) - 14 * r_d * L / (3 * (1e6 - 1)))
    assert float(low) > 0   # with the range 2B = 16.2 the same estimate is negative


@pytest.mark.parametrize("key,value,match", [
    ("M", 0, "localised.M == 0"), ("nu_V", -1.0, "localised.nu_V == -1.0"), ("r", 2.5, "an integer"),
    ("delta_T_d", 1.0, r"localised.delta_T_d == 1.0, must be a finite number in \(0, 1\)"),
    ("delta_R_failure", 1.0, "localised.delta_R_failure"), ("kappa", float("nan"), "localised.kappa"),
    ("var_T_dnew", 1.0, r"localised.var_T_dnew == 1.0, must be in \[0, ")])
def test_bad_input_names_key_range_and_value(key, value, match):
    with pytest.raises(InputError, match=match):
        evaluate_localised(LocalisedSetup(**{**FULL, key: value}), 0.05)


def test_missing_required_and_paired_levels():
    with pytest.raises(InputError, match="localised.B is missing"):
        evaluate_localised(LocalisedSetup(**{**FULL, "B": None}))
    with pytest.raises(InputError, match="localised.delta_sigma is missing"):
        evaluate_localised(LocalisedSetup(**FULL, sigma2_ub=0.01))
    with pytest.raises(InputError, match="level == 0.001"):
        evaluate_localised(LocalisedSetup(**{**FULL, "delta_R_failure": 0.002}), 0.001)
    assert set(LOCALISED_PARAMETERS) >= {"delta_train", "delta_R", "delta_erm_pop", "sigma2_ub", "Sigma_ub"}


def test_delta_R_without_its_level_is_refused_never_a_free_E_R():
    """issue 17, item 3: a lower bound passed as delta_R with its level forgotten must not pay nothing."""
    no_level = {k: v for k, v in FULL.items() if k != "delta_R_failure"}
    with pytest.raises(InputError, match="localised.delta_R_failure is missing, must be given together with "
                                         "localised.delta_R"):
        evaluate_localised(LocalisedSetup(**no_level), 0.05)
    paid = evaluate_localised(LocalisedSetup(**{**FULL, "delta_R_failure": 0.01}), 0.05).routes
    r = paid["localised_paper_sure_hoeffding"]
    assert float(r.levels["E_R"]) == 0.01 and float(r.failure_probability) == pytest.approx(0.05, rel=1e-12)
    exact = evaluate_localised(LocalisedSetup(**FULL), 0.05).routes["localised_paper_sure_hoeffding"]
    assert float(exact.levels["E_R"]) == 0.0 and float(r.bound) > float(exact.bound)   # E_R's level is taken from the others
    train_only = {k: v for k, v in no_level.items() if k != "delta_R"}
    assert "localised_paper_sure_hoeffding" in evaluate_localised(LocalisedSetup(**train_only), 0.05).skipped


def _invalid(interval):
    """A value outside ``interval`` generated from its data (scikit-learn's generate_invalid_param_val idea)."""
    if interval.integer:
        return 1.5 if interval.low is None or interval.low < 1.5 else interval.low + 0.5
    if interval.low is not None:
        return interval.low - 1.0 if interval.closed_low else float(interval.low)
    return float("inf")


@pytest.mark.parametrize("key", sorted(LOCALISED_PARAMETERS))
def test_every_key_rejects_a_generated_invalid_value(key):
    value = _invalid(LOCALISED_PARAMETERS[key])
    with pytest.raises(InputError, match=rf"localised\.{key} == {value!r}, must be"):
        LocalisedSetup(**{**FULL, key: value}).validate()
