"""Which sample each route read (``S_only``) and how much it certifies (issue 34, items 1-2).

``S_only`` is derived symbolically from each route's theorem object (:mod:`bounds.route_roles`);
here it is checked against an independent, numeric rule: evaluate the route with every statistic
measured on ``T`` perturbed (the evaluators of :mod:`bounds.routes`, :mod:`bounds.variant_routes`,
:mod:`bounds.localised_routes`); if the improvement ``L_test_old - bound`` moves, the route read a
statistic of ``T`` and is not S-only. The share fields are recomputed from the bound and the losses.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from bounds.localised import LOCALISED_SPECS
from bounds.localised_routes import LocalisedSetup, evaluate_localised
from bounds.route_roles import NEGLIGIBLE_SHARE, ROLE_ORDER, annotate_row, certified_share, route_roles
from bounds.routes import Setup, evaluate_routes
from bounds.variant_routes import VariantInputs, evaluate_variants
from bounds.variants import VARIANT_SPECS

# ---- one setup per evaluator; the statistics of T each reads, written from their definitions
SETUP = dict(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5, delta=0.02,
             delta_prime=0.02, B=4.2, L_loss=math.sqrt(2), family="readout",
             block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4), delta_R_failure=0.005)
INPUTS = dict(var_S_jump_pop=0.35, var_T_new=0.34, var_T_old=0.36, var_T_jump_S=0.34, rad_hat=0.0035,
              rad_hat_mc_error=1e-4, delta_mc=0.005)
LOCAL = dict(M=20000, K=20000, L_test_old=0.03, B=8.1, L_loss=1.0, L_top=1.0, d=8, r=8, rho_phi=3.0, nu_V=0.006,
             delta_train=6e-5, var_T_dnew=6.4e-7, kappa=2.0, b_xi=0.5, A_norm=1.0, exact_applies=True,
             delta_R=5e-5, delta_R_failure=1e-3, delta_erm_pop=1e-6, var_S_dpop=5e-7)
#: Statistics of T: Delta_test^R = L_test(f_old) - L_test(f~_S) (Setup), the loss variances on T
#: (VariantInputs), the variance of d_new on T (LocalisedSetup). A perturbation of each.
T_SETUP = {"delta_test_R": lambda v: v * 1.5}
T_INPUTS = {k: (lambda v: 4 * v + 1e-3) for k in ("var_T_new", "var_T_old", "var_T_jump_S")}
T_LOCAL = {"var_T_dnew": lambda v: 4 * v + 1e-6}


def _paper(setup: dict, inputs: dict) -> dict:
    rep = evaluate_routes(Setup(**setup), 0.05)
    return {"population_route": rep.population.improvement, "direct_route": rep.direct.improvement,
            "population_risk": rep.population_risk.improvement}


def _variants(setup: dict, inputs: dict) -> dict:
    rep = evaluate_variants(Setup(**setup), 0.05, VariantInputs(**inputs), any_route=False)
    return {k: r.improvement for k, r in rep.variants.items()}


def _localised(local: dict) -> dict:
    rep = evaluate_localised(LocalisedSetup(**local), 0.05)
    return {k: r.improvement for k, r in rep.routes.items()}


def numeric_S_only() -> dict:
    """``{route: True iff no perturbation of a statistic of T moves its improvement}`` (the independent rule)."""
    base = {**_paper(SETUP, INPUTS), **_variants(SETUP, INPUTS), **_localised(LOCAL)}
    moved = {k: False for k in base}
    for key, f in T_SETUP.items():
        s = {**SETUP, key: f(SETUP[key])}
        for k, v in {**_paper(s, INPUTS), **_variants(s, INPUTS)}.items():
            moved[k] |= not np.isclose(v, base[k], rtol=1e-12, atol=0)
    for key, f in T_INPUTS.items():
        for k, v in _variants(SETUP, {**INPUTS, key: f(INPUTS[key])}).items():
            moved[k] |= not np.isclose(v, base[k], rtol=1e-12, atol=0)
    for key, f in T_LOCAL.items():
        for k, v in _localised({**LOCAL, key: f(LOCAL[key])}).items():
            moved[k] |= not np.isclose(v, base[k], rtol=1e-12, atol=0)
    return {k: not m for k, m in moved.items()}


def mismatches(flags: dict, rule: dict) -> list[str]:
    return [k for k in rule if flags[k] != rule[k]]


@pytest.fixture(scope="module")
def rule():
    return numeric_S_only()


def test_every_route_is_evaluated_by_the_rule(rule):
    assert set(LOCALISED_SPECS) | set(VARIANT_SPECS) | {"population_route", "direct_route", "population_risk"} == set(rule)


def test_S_only_flag_agrees_with_the_perturbation_rule(rule):
    flags = {k: route_roles(k)["S_only"] for k in rule}
    assert mismatches(flags, rule) == []
    # the rule has power both ways: the linearised Bernstein route reads T's variance, its Hoeffding twin does not
    assert rule["localised_train_linearised_bernstein"] is False and rule["localised_train_linearised_hoeffding"] is True
    assert rule["direct_route"] is False and rule["population_tight_hoeffding"] is True


def test_a_planted_S_only_flag_on_the_linearised_bernstein_route_is_caught(rule):
    flags = {k: route_roles(k)["S_only"] for k in rule}
    assert mismatches({**flags, "localised_train_linearised_bernstein": True}, rule) == ["localised_train_linearised_bernstein"]


def test_roles_name_every_role_and_the_T_statistic():
    r = route_roles("localised_train_linearised_bernstein")
    assert set(r["roles"]) == set(ROLE_ORDER) and r["T_statistics"] == ["V_T_dnew"]
    assert "variance" in r["roles"]["T"] and r["roles"]["T"].startswith("test (after S")
    assert r["roles"]["probe"].startswith("not read") and r["roles"]["population"] == "not read"
    assert "Hoeffding" in route_roles("localised_train_linearised_hoeffding")["roles"]["T"]
    # Delta_R's lower bound: the caller says which sample gave it
    assert "Delta_R" in route_roles("population_route", "population")["roles"]["population"]
    assert "Delta_R" in route_roles("population_route", "signal")["roles"]["signal"]


# ---- how much a row certifies: recomputed from the bound and the losses
@pytest.mark.parametrize("share", [0.005, 0.5])
def test_share_fields_against_an_independent_recomputation(share):
    L_old, L_new = 0.0390, 0.0390 - 4.2e-4
    gain = L_old - L_new
    bound = L_old - share * gain
    row = annotate_row("localised_train_linearised_bernstein",
                       {"route": "localised_train_linearised_bernstein", "bound": bound, "improvement": L_old - bound,
                        "certified": True}, L_old, L_new)
    assert row["realised_gain"] == pytest.approx(gain, rel=1e-12)
    assert row["improvement_over_loss"] == pytest.approx((L_old - bound) / L_old, rel=1e-9)
    assert row["improvement_over_gain"] == pytest.approx(share, rel=1e-9)
    assert row["S_only"] is False
    negligible = "the certificate covers a negligible step (0.5% of the block's realised gain)"
    assert (negligible in row["share_note"]) is (share < NEGLIGIBLE_SHARE)
    assert row["negligible"] is (share < NEGLIGIBLE_SHARE)


def test_no_realised_gain_makes_the_ratio_undefined_and_a_failed_row_never_negligible():
    d = certified_share(1e-6, True, 0.04, 0.041)
    assert d["improvement_over_gain"] is None and "undefined" in d["share_note"] and d["negligible"] is False
    d = certified_share(-3e-3, False, 0.04, 0.039)
    assert d["improvement_over_gain"] == pytest.approx(-3.0) and not d["negligible"]
    assert d["share_note"].startswith("not certified") and "negligible" not in d["share_note"]
    assert certified_share(None, False, 0.04, 0.039)["improvement_over_gain"] is None


def test_the_text_says_negligible_for_half_a_percent_and_not_for_half(tmp_path):
    from numerics.studies.run._terms_table import roles_lines

    L_old, L_new = 0.0390, 0.0390 - 4.2e-4
    rows = {}
    for name, share in (("localised_train_linearised_bernstein", 0.005), ("localised_train_sure_bernstein", 0.5)):
        bound = L_old - share * (L_old - L_new)
        rows[name] = annotate_row(name, {"bound": bound, "improvement": L_old - bound, "certified": True}, L_old, L_new)
    text = "\n".join(roles_lines({"routes": rows}))
    line = {n: next(ln for ln in text.splitlines() if n in ln) for n in rows}
    assert "the certificate covers a negligible step (0.5% of the block's realised gain)" in line[
        "localised_train_linearised_bernstein"]
    assert "negligible" not in line["localised_train_sure_bernstein"] and "50% of the block's" in line[
        "localised_train_sure_bernstein"]
    assert "train-and-test (T: V_T_dnew)" in line["localised_train_linearised_bernstein"]

