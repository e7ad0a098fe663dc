"""THEORY §6 variants (Choice): hand-derived numbers, properties, validity in a known world, power."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.optimize import brentq

from bounds.routes import Setup, evaluate_routes
from bounds.variant_routes import (VARIANT_PARAMETERS, VariantInputs, evaluate_chain, evaluate_variants,
                                   variant_values)
from plumbing.validation import InputError
from bounds.variants import VARIANT_SPECS, VARIANTS, direct_variant
from tests.bounds._toy_world import clopper_pearson, draw, with_levels

EX = dict(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5, delta=0.05,
          delta_prime=0.05, B=4.2, L_loss=math.sqrt(2), family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0,
                                                                                        nu_V=0.4))
INPUTS = dict(var_S_jump_pop=0.35, var_T_new=0.34, var_T_old=0.36, var_T_jump_S=0.34, rad_hat=0.0035,
              rad_hat_mc_error=1e-4, delta_mc=0.005)


# ---------------------------------------------------------------- independent computations
def root(f, hi=10.0):
    return brentq(f, 1e-14, hi, xtol=1e-15, rtol=1e-14)


def hoeffding_by_root(n, level, B=4.2):
    """The deviation at which the one-sided Hoeffding tail exp(-2 n t^2/B^2) equals ``level`` (numeric root)."""
    return root(lambda t: math.exp(-2 * n * t * t / B**2) - level)


def bernstein_rescaled(n, var, level, B=4.2):
    """Maurer-Pontil 2009 Thm 4 for Z/B in [0, 1] (variance var/B^2), deviation scaled back by B."""
    v01 = var / B**2
    return B * (math.sqrt(2 * v01 * math.log(2 / level) / n) + 7 * math.log(2 / level) / (3 * (n - 1)))


def rad_loss_closed():
    # Maurer contraction sqrt(2) L_loss L_top times the readout bound nu_V sqrt(d) rho_phi / sqrt(M)
    return math.sqrt(2) * math.sqrt(2) * 2.5 * 0.4 * math.sqrt(8) * 3.0 / math.sqrt(2e5)


def uniform_by_root(level_per_side, empirical=False, rad_loss=None):
    """2 Rad(l o F) + McDiarmid deviation (bounded differences B/M) at each side's level; empirical: 3 of them."""
    c = hoeffding_by_root(2e5, level_per_side if not empirical else level_per_side / 2)
    return 2 * (rad_loss_closed() if rad_loss is None else rad_loss) + (3 * c if empirical else c)


def hand(name):
    route, tail, uniform = VARIANT_SPECS[name]
    emp = uniform == "empirical"
    d_unif = 0.05 - (0.005 if emp else 0.0)
    rad_emp = math.sqrt(2) * math.sqrt(2) * 2.5 * (0.0035 + 1e-4)
    sides = 1 if route == "population" else 2
    eps = uniform_by_root(d_unif / sides, emp, rad_emp if emp else None)
    n_tails = 3 if route == "population" else 2
    lvl = 0.05 / n_tails
    tT = (lambda var: hoeffding_by_root(1e5, lvl)) if tail == "hoeffding" else (
        lambda var: bernstein_rescaled(1e5, var, lvl))
    if route == "population":
        tS = hoeffding_by_root(2e5, lvl) if tail == "hoeffding" else bernstein_rescaled(2e5, 0.35, lvl)
        return 0.62 - 0.09 - 0.004 + eps + tS + tT(0.34) + tT(0.36)
    return 0.62 - 0.085 - 0.004 + 2 * eps + tT(0.34) + tT(0.34)


@pytest.mark.parametrize("name", sorted(VARIANT_SPECS))
def test_each_variant_matches_an_independent_computation(name):
    rep = evaluate_variants(Setup(**EX), 0.1, VariantInputs(**INPUTS))
    r = rep.variants[name]
    np.testing.assert_allclose(r.bound, hand(name), rtol=1e-9)
    assert 0.1 * (1 - 1e-15) <= float(r.failure_probability) <= 0.1     # delta + delta' by default, never above
    assert sum(float(t["value"]) for t in r.terms) == pytest.approx(float(r.bound), rel=1e-12)


def test_population_hoeffding_round_numbers():
    """B = 1, levels e^-2 and e^-8 so that every Hoeffding root is a round number."""
    st_ = Setup(L_test_old=1.0, delta_R=0.2, delta_erm=0.05, delta_test_R=0.1, M=100, K=400, delta=math.exp(-2),
                delta_prime=0.5, B=1.0, L_loss=1.0, block=dict(d=1, L_top=1.0, rho_phi=0.0, nu_V=0.0))
    inp = VariantInputs(delta_S_jump=math.exp(-8), delta_T_new=math.exp(-8), delta_T_old=math.exp(-2))
    r = evaluate_variants(st_, 1.0, inp).variants["population_tight_hoeffding"]
    # rad = 0: eps_M1 = sqrt(2/200) = 0.1; t_S = sqrt(8/200) = 0.2; t_T_new = sqrt(8/800) = 0.1; t_T_old = 0.05
    assert float(r.bound) == pytest.approx(1.0 - 0.2 - 0.05 + 0.1 + 0.2 + 0.1 + 0.05, abs=1e-12)
    assert float(r.failure_probability) == pytest.approx(2 * math.exp(-2) + 2 * math.exp(-8), rel=1e-12)
    assert {t["term"]: t["event"] for t in r.terms if t["role"] == "cost"} == {
        "eps_M1": "E_S", "t_S_jump": "H_S_jump", "t_T_new": "H_T_new", "t_T_old": "H_T_old"}


def test_paper_terms_sum_to_the_paper_bounds():
    rep = evaluate_routes(Setup(**EX), 0.1)
    terms = evaluate_variants(Setup(**EX), 0.1).paper_terms
    for key, route in (("population_route", rep.population), ("direct_route", rep.direct)):
        assert sum(float(t["value"]) for t in terms[key]) == pytest.approx(float(route.bound), rel=1e-12)


def test_missing_inputs_skip_a_variant_and_say_which_keys():
    rep = evaluate_variants(Setup(**EX), 0.1, VariantInputs(var_T_new=0.3, var_T_jump_S=0.3))
    assert "direct_tight_bernstein" in rep.variants and "population_tight_bernstein" not in rep.variants
    assert rep.skipped["population_tight_bernstein"] == "needs variants.var_S_jump_pop, variants.var_T_old"
    assert "rad_hat" in rep.skipped["direct_tight_hoeffding_empirical"]


def test_grid_is_paid_on_every_event_about_a_cap_dependent_function():
    """n_grid caps: paid on S (uniform term, f~_pop) and on T for f_new and f~_S; not for f_old (no cap)."""
    costs = lambda r: {t["term"]: float(t["value"]) for t in r.terms if t["role"] == "cost"}  # noqa: E731
    one = evaluate_variants(Setup(**EX), 0.1).variants
    grid = evaluate_variants(Setup(**{**EX, "n_grid": 8}), 0.1).variants
    pop, pop1 = costs(grid["population_tight_hoeffding"]), costs(one["population_tight_hoeffding"])
    assert pop["t_T_old"] == pop1["t_T_old"]
    assert pop["t_T_new"] == pytest.approx(hoeffding_by_root(1e5, 0.05 / 3 / 8), rel=1e-9)
    assert pop["t_S_jump"] == pytest.approx(hoeffding_by_root(2e5, 0.05 / 3 / 8), rel=1e-9)
    assert pop["eps_M1"] == pytest.approx(uniform_by_root(0.05 / 8), rel=1e-9)
    dire = costs(grid["direct_tight_hoeffding"])
    assert dire["t_T_new"] == dire["t_T_jump"] == pytest.approx(hoeffding_by_root(1e5, 0.05 / 2 / 8), rel=1e-9)


def test_delta_R_failure_is_added_to_the_population_variant_only():
    plain = evaluate_variants(Setup(**EX), 0.1).variants
    est = evaluate_variants(Setup(**EX, delta_R_failure=0.01), 0.1).variants
    assert float(est["population_tight_hoeffding"].failure_probability) == pytest.approx(0.11)
    assert float(est["direct_tight_hoeffding"].failure_probability) == pytest.approx(0.1)
    assert not est["population_tight_hoeffding"].certified.any()
    assert float(plain["population_tight_hoeffding"].bound) == float(est["population_tight_hoeffding"].bound)


def test_vectorised_matches_scalar():
    Ms = np.array([1e4, 2e5, 3e6])
    batch = evaluate_variants(Setup(**{**EX, "M": Ms}), 0.1, VariantInputs(**INPUTS))
    for i, M in enumerate(Ms):
        one = evaluate_variants(Setup(**{**EX, "M": M}), 0.1, VariantInputs(**INPUTS))
        for name, r in one.variants.items():
            for f in ("bound", "failure_probability", "certified", "min_M", "min_K"):
                np.testing.assert_allclose(np.asarray(getattr(batch.variants[name], f)[i], dtype=float),
                                           np.asarray(getattr(r, f), dtype=float), rtol=1e-12, equal_nan=True)


def test_min_M_zeroes_the_margin_of_hoeffding_variants():
    for name in ("population_tight_hoeffding", "direct_tight_hoeffding"):
        r = evaluate_variants(Setup(**EX), 0.1).variants[name]
        at = evaluate_variants(Setup(**{**EX, "M": float(r.min_M)}), 0.1).variants[name]
        assert abs(float(at.improvement)) < 1e-12


# ---------------------------------------------------------------- properties (hypothesis)
pos = st.floats(1e-3, 10.0)
setups = st.fixed_dictionaries(dict(
    L_test_old=st.floats(0.0, 5.0), delta_R=st.floats(-0.5, 2.0), delta_erm=st.floats(0.0, 1.0),
    delta_test_R=st.floats(-0.5, 2.0), M=st.floats(10, 1e8), K=st.floats(10, 1e8),
    delta=st.floats(1e-6, 0.5), delta_prime=st.floats(1e-6, 0.5), B=pos, L_loss=pos,
    block=st.fixed_dictionaries(dict(d=st.integers(1, 64), L_top=pos, rho_phi=pos, nu_V=pos)),
))


@given(setups)
def test_one_function_tail_is_below_the_uniform_term_at_equal_level(cfg):
    """Tail of f_new on T at level delta' < eps_K(delta'); the one-sided uniform term < the paper's eps_M."""
    rep = evaluate_routes(Setup(**cfg), 0.5)
    v = evaluate_variants(Setup(**cfg), 0.5, VariantInputs(delta_T_new=cfg["delta_prime"])).variants
    costs = {t["term"]: float(t["value"]) for t in v["population_tight_hoeffding"].terms if t["role"] == "cost"}
    assert costs["t_T_new"] < float(rep.eps_K)
    assert costs["eps_M1"] < float(rep.eps_M)
    costs_d = {t["term"]: float(t["value"]) for t in v["direct_tight_hoeffding"].terms if t["role"] == "cost"}
    assert costs_d["2*eps_M"] == pytest.approx(2 * float(rep.eps_M), rel=1e-12)   # two-sided: the paper's eps_M


@given(setups, st.floats(1.5, 10.0))
def test_variants_tighten_with_M_and_K_and_loosen_with_smaller_levels(cfg, factor):
    a = evaluate_variants(Setup(**cfg), 0.5).variants
    b = evaluate_variants(Setup(**{**cfg, "M": cfg["M"] * factor, "K": cfg["K"] * factor}), 0.5).variants
    c = evaluate_variants(Setup(**{**cfg, "delta": cfg["delta"] / factor, "delta_prime": cfg["delta_prime"] / factor}),
                          0.5).variants
    for name in a:
        assert float(b[name].bound) < float(a[name].bound) < float(c[name].bound)
        assert float(c[name].failure_probability) < float(a[name].failure_probability)


@given(setups)
def test_failure_probability_is_the_sum_of_the_levels_used(cfg):
    lv = dict(delta_S_jump=0.011, delta_T_new=0.013, delta_T_old=0.017, delta_T_jump=0.019)
    v = evaluate_variants(Setup(**cfg), 0.5, VariantInputs(**lv)).variants
    pop, dire = v["population_tight_hoeffding"], v["direct_tight_hoeffding"]
    assert float(pop.failure_probability) == pytest.approx(cfg["delta"] + 0.011 + 0.013 + 0.017, rel=1e-12)
    assert float(dire.failure_probability) == pytest.approx(cfg["delta"] + 0.013 + 0.019, rel=1e-12)
    assert pop.levels.keys() == {"E_S", "H_S_jump", "H_T_new", "H_T_old"}


# ---------------------------------------------------------------- validity in a known world
def _all_routes(setup, inputs, level=1.0):
    rep = evaluate_routes(setup, level, validate=False)
    return {"paper_population": rep.population, "paper_direct": rep.direct,
            **evaluate_variants(setup, level, inputs).variants}


WORLDS = {
    "default": dict(M=400, K=2000, n_class=200),
    "overfitting": dict(M=200, K=10**6, n_class=10**4, delta_R=0.02),
}


@pytest.mark.parametrize("world", sorted(WORLDS))
@pytest.mark.parametrize("levels", [(0.05, 0.05), (0.3, 0.3)], ids=["levels_0.05", "levels_0.3"])
def test_no_route_is_violated_more_often_than_its_failure_probability(world, levels):
    """Clopper-Pearson at 99.9% per route: the violation rate's lower bound must not exceed the stated level.

    The empirical variants included: their Rademacher value is Massart's data-dependent bound on S.
    """
    draws = 400
    setup, inputs, observed, _ = draw(draws, seed=1, **WORLDS[world])
    routes = _all_routes(*with_levels(setup, *levels, inputs))
    assert len(routes) == 10, sorted(routes)          # the two paper routes and all eight variants
    for name, r in routes.items():
        k = int(np.sum(observed > r.bound))
        low, _ = clopper_pearson(k, draws, 0.999)
        assert low <= float(np.max(r.failure_probability)), (name, k)


@pytest.mark.parametrize("tail", ["hoeffding", "bernstein"])
def test_one_function_tail_events_hold_at_their_level(tail):
    """Each premise on T (and f~_pop on S) fails no more often than its level (Clopper-Pearson, 99.9%)."""
    draws, lvl = 4000, 0.2
    setup, inputs, _, truth = draw(draws, seed=2, M=400, K=3000, n_class=50, r=0.5,
                                   delta_S_jump=lvl, delta_T_new=lvl, delta_T_old=lvl, delta_T_jump=lvl)
    name = f"population_tight_{tail}"
    v = variant_values(setup, inputs, "population", "closed", 1.0)
    dev = {e.tail.symbol.name: np.broadcast_to(evaluate_expr(e.tail.deviation, v), (draws,))
           for e in VARIANTS[name].events if e.tail is not None and e.tail.kind in ("hoeffding", "bernstein")}
    events = {"H_T_new": truth["L_test_new"] - truth["R_new"] > dev["t_T_new"],
              "H_T_old": truth["R_old"] - truth["L_test_old"] > dev["t_T_old"],
              "H_S_jump": truth["RS_pop"] - 0.5 > dev["t_S_jump"]}
    for ev, hit in events.items():
        low, _ = clopper_pearson(int(hit.sum()), draws, 0.999)
        assert low <= lvl, (ev, hit.mean())
    # power: the same check flags a tail a quarter of the size, stated at the same level
    too_small = truth["L_test_new"] - truth["R_new"] > dev["t_T_new"] / 4
    assert clopper_pearson(int(too_small.sum()), draws, 0.999)[0] > lvl


def evaluate_expr(expr, values):
    from bounds._statement import evaluate

    return evaluate(expr, values)


def test_validity_check_flags_a_fixed_function_tail_for_f_new_on_S():
    """Power: the chain with a one-function tail for f_new on S (which depends on S) is violated significantly
    more often than it claims, and so is its event; the valid variant, on the same draws, is not."""
    from proofs_check._variant_mutants import fixed_tail_f_new_on_S_population

    draws, lvl = 600, 0.2
    setup, inputs, observed, truth = draw(draws, seed=3, M=200, K=10**7, n_class=10**5, delta_R=0.02,
                                          delta_S_jump=lvl, delta_T_new=1e-3, delta_T_old=1e-3)
    setup = with_levels(setup, lvl, 0.05)
    v = variant_values(setup, inputs, "population", "closed", 1.0)
    v["delta_S_new"] = np.float64(lvl)
    wrong = evaluate_chain(fixed_tail_f_new_on_S_population(), "population", v)
    right = evaluate_variants(setup, 1.0, inputs).variants["population_tight_hoeffding"]
    k_wrong, k_right = int(np.sum(observed > wrong.bound)), int(np.sum(observed > right.bound))
    assert clopper_pearson(k_wrong, draws, 0.999)[0] > float(wrong.failure_probability[0])
    assert clopper_pearson(k_right, draws, 0.999)[0] <= float(right.failure_probability[0])
    # the event itself: R(f_new) - R_S(f_new) exceeds the one-function tail far more often than its level
    hit = truth["R_new"] - truth["RS_new"] > hoeffding_by_root(200, lvl, B=1.0)
    assert clopper_pearson(int(hit.sum()), draws, 0.999)[0] > lvl


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("key", sorted(VARIANT_PARAMETERS))
def test_invalid_variant_inputs_are_named(key):
    iv = VARIANT_PARAMETERS[key]
    for bad in [float("nan"), float("inf"), -1.0] + ([iv.high + 1] if iv.high is not None else []):
        with pytest.raises(InputError, match=rf"^variants\.{key} == "):
            VariantInputs(**{key: bad}).validate(Setup(**EX))


def test_cross_key_constraints():
    # the numbers of the bound are printed: B^2 K/(4(K-1)) = 1e5/(4 (1e5 - 1)) = 0.2500025
    with pytest.raises(InputError, match=r"variants\.var_T_new == 5\.0, must be in \[0, 0\.250003\] \(= B\^2 K/"
                                         r"\(4\(K-1\)\).*B = 1, K = 100000"):
        VariantInputs(var_T_new=5.0).validate(Setup(**{**EX, "B": 1.0}))
    with pytest.raises(InputError, match=r"variants\.delta_mc == 0\.06, must be in \(0, delta\) .*delta = 0\.05"):
        VariantInputs(rad_hat=0.1, rad_hat_mc_error=0.0, delta_mc=0.06).validate(Setup(**EX))
    with pytest.raises(InputError, match=r"variants\.delta_mc is missing"):
        VariantInputs(rad_hat=0.1).validate(Setup(**EX))
    with pytest.raises(InputError, match=r"variants\.rad_hat_mc_error is missing"):
        VariantInputs(rad_hat=0.1, delta_mc=0.01).validate(Setup(**EX))
    with pytest.raises(InputError, match=r"variants\.rad_hat is missing"):
        VariantInputs(n_draws=100).validate(Setup(**EX))
    # phi_sq_sum <= M rho_phi^2 = 2e5 * 9
    with pytest.raises(InputError, match=r"variants\.phi_sq_sum == 2000000\.0, must be in \[0, 1\.8e\+06\]"):
        VariantInputs(phi_sq_sum=2e6).validate(Setup(**EX))
    VariantInputs(rad_hat=0.1, delta_mc=0.01, phi_sq_sum=1e6, n_draws=10).validate(Setup(**EX))   # error computable
    VariantInputs(var_T_new=4.2**2 / 4).validate(Setup(**EX))   # the largest variance of values in [0, B]


def test_unknown_variant_arguments_are_rejected():
    with pytest.raises(ValueError, match="tail == 'chernoff'"):
        direct_variant("chernoff")
    with pytest.raises(ValueError, match="uniform == 'exact'"):
        direct_variant("hoeffding", "exact")
    assert dataclasses.is_dataclass(VariantInputs())


@given(st.integers(50, 2000), st.integers(50, 5000), st.floats(0.05, 0.9), st.floats(-0.2, 0.3),
       st.floats(0.01, 0.5), st.integers(0, 10**6))
def test_where_every_event_holds_the_bound_holds(M, K, r, delta_R, lvl, seed):
    """In the known world, on every draw where none of a variant's events occurs, L_test(f_new) <= bound.

    The events are evaluated from the true risks, independently of the symbolic chain: a numeric check
    of the entailment on real draws (the chain's conclusion must follow from its premises).
    """
    r_old = min(max(r + delta_R, 0.0), 1.0)
    delta_R = r_old - r
    setup, inputs, observed, tr = draw(200, M=M, K=K, n_class=20, r=r, delta_R=delta_R, seed=seed,
                                       delta_S_jump_pop=lvl, delta_T_new=lvl, delta_T_old=lvl, delta_T_jump_S=lvl)
    setup, inputs = with_levels(setup, lvl, lvl, inputs)
    variants = evaluate_variants(setup, 1.0, inputs).variants
    assert len(variants) == 8                          # the empirical ones too (Massart rad_hat)
    for name, r_ in variants.items():
        c = {t["term"]: np.asarray(t["value"]) for t in r_.terms if t["role"] == "cost"}
        if name.startswith("population"):
            holds = ((r - tr["RS_new"] <= c["eps_M1"]) & (tr["RS_pop"] - r <= c["t_S_jump"])
                     & (tr["L_test_new"] - r <= c["t_T_new"]) & (r_old - tr["L_test_old"] <= c["t_T_old"]))
        else:
            eps = c["2*eps_M"] / 2
            RS_jS = tr["RS_new"] + np.asarray(setup.delta_erm_S)
            holds = ((r - tr["RS_new"] <= eps) & (RS_jS - r <= eps) & (tr["L_test_new"] - r <= c["t_T_new"])
                     & (r - tr["L_test_jump_S"] <= c["t_T_jump"]))
        assert np.all(observed[holds] <= r_.bound[holds] + 1e-12), name
