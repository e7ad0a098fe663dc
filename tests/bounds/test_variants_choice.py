"""THEORY §6 variants (Choice), phase 1b: levels that sum exactly, the choice of a route paid for,
costs attributed to every paying event, the Jensen minimum, key aliases, clear errors."""
import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.optimize import brentq

from bounds._route_terms import paper_terms
from plumbing.validation import InputError
from bounds.routes import Setup, evaluate_routes
from bounds.theorems import THEOREM_3
from bounds.variant_routes import VariantInputs, evaluate_chain, evaluate_variants, variant_values
from bounds.variants import VARIANT_SPECS, VARIANTS
from tests.bounds._toy_world import clopper_pearson, draw, with_levels
from tests.bounds.test_variants import EX, INPUTS, uniform_by_root


def _cost(r, term):
    return next(t for t in r.terms if t["term"] == term)


# ---------------------------------------------------------------- levels: exact sums, no fudge on the level
@given(st.floats(1e-6, 0.5), st.floats(1e-6, 0.5))
def test_default_level_shares_never_exceed_delta_plus_delta_prime(delta, delta_prime):
    """With every level at its default, the float failure probability is <= fl(delta + delta'), and not wasteful."""
    setup = Setup(**{**EX, "delta": delta, "delta_prime": delta_prime})
    inputs = VariantInputs(**{**INPUTS, "delta_mc": delta / 10})
    target = delta + delta_prime
    for name, r in evaluate_variants(setup, 1.0, inputs, any_route=False).variants.items():
        fail = float(r.failure_probability)
        assert target * (1 - 1e-14) <= fail <= target, (name, fail, target)


def test_a_float_sum_that_rounds_up_is_fitted_not_fudged():
    """delta + 3 (delta'/3) rounds above delta + delta' at (0.021, 0.008); the level is compared exactly."""
    delta, delta_prime = 0.021, 0.008
    assert delta + delta_prime / 3 + delta_prime / 3 + delta_prime / 3 > delta + delta_prime   # the trap
    setup = Setup(**{**EX, "delta": delta, "delta_prime": delta_prime, "delta_R": 1.0})
    r = evaluate_variants(setup, delta + delta_prime, any_route=False).variants["population_tight_hoeffding"]
    assert float(r.failure_probability) <= delta + delta_prime and bool(r.certified)
    # one ulp above the level is not certified (phase 1 compared with level * (1 + 1e-12))
    v = variant_values(setup, VariantInputs(), "population", "closed", delta + delta_prime)
    v["delta_T_old"] = v["delta_T_old"] + 4 * np.spacing(delta + delta_prime)
    over = evaluate_chain(VARIANTS["population_tight_hoeffding"], "population", v)
    assert float(over.failure_probability) > delta + delta_prime and not bool(over.certified)


# ---------------------------------------------------------------- costs and the events that pay them
def test_empirical_uniform_cost_is_paid_by_E_S_and_E_MC_together():
    r = evaluate_variants(Setup(**EX), 0.1, VariantInputs(**INPUTS), any_route=False).variants
    for name, term in (("population_tight_hoeffding_empirical", "eps_M1"), ("direct_tight_bernstein_empirical",
                                                                           "2*eps_M")):
        c = _cost(r[name], term)
        assert c["event"] == "E_S" and c["events"] == ["E_S", "E_MC"]
        assert float(c["level"]) == pytest.approx(0.05, rel=1e-12)        # (delta - delta_mc) + delta_mc
    closed = _cost(r["population_tight_hoeffding"], "eps_M1")
    assert closed["events"] == ["E_S"] and float(closed["level"]) == pytest.approx(0.05, rel=1e-12)


def test_paper_population_route_shows_its_two_hoeffding_costs():
    """Theorem 2 decomposed at t = Delta_R/4: the full gain Delta_R, and a cost Delta_R/4 on H_new and on H_old."""
    rep = evaluate_routes(Setup(**EX), 0.1)
    terms = paper_terms(Setup(**EX), rep.eps_M, rep.eps_K)["population_route"]
    hoeffding = [t for t in terms if t["term"] == "t"]
    assert [t["event"] for t in hoeffding] == ["H_new", "H_old"]
    tail = math.exp(-1e5 * 0.09**2 / (8 * 4.2**2))
    for t in hoeffding:
        assert float(t["value"]) == pytest.approx(0.09 / 4) and float(t["level"]) == pytest.approx(tail, rel=1e-12)
    assert float(next(t for t in terms if t["term"] == "-delta_R")["value"]) == pytest.approx(-0.09)
    assert sum(float(t["value"]) for t in terms) == pytest.approx(float(rep.population.bound), rel=1e-12)


def test_evaluate_chain_rejects_costs_that_are_not_tail_slacks():
    v = variant_values(Setup(**EX), VariantInputs(), "direct", "closed", 0.1)
    with pytest.raises(ValueError, match=r"costs \['2\*eps_K', '2\*eps_M'\] are not the slack of an event with a "
                                         r"Tail record"):
        evaluate_chain(THEOREM_3, "direct", v)
    with pytest.raises(ValueError, match=r"route == 'sideways'"):
        evaluate_chain(VARIANTS["direct_tight_hoeffding"], "sideways", v)


# ---------------------------------------------------------------- the empirical value: Jensen, computed error
def _eps_empirical(name, **extra):
    inputs = VariantInputs(**{**INPUTS, **extra})
    return float(_cost(evaluate_variants(Setup(**EX), 0.1, inputs, any_route=False).variants[name], "eps_M1")["value"])


def test_jensen_replaces_the_monte_carlo_value_when_smaller():
    """rad_S <= (nu_V/M) sqrt(d sum ||phi_i||^2) surely: the smaller of that and rad_hat + error is used."""
    name, rad_loss = "population_tight_hoeffding_empirical", lambda rad: 2.0 * 2.5 * rad   # sqrt2 L_loss L_top
    small, large = 2e5, 1.8e6            # Jensen 0.00253 < 0.0036 = rad_hat + error; 0.00759 > 0.0036
    jensen = 0.4 / 2e5 * math.sqrt(8 * small)
    assert jensen < 0.0035 + 1e-4 < 0.4 / 2e5 * math.sqrt(8 * large)
    assert _eps_empirical(name, phi_sq_sum=small) == pytest.approx(
        uniform_by_root(0.045, empirical=True, rad_loss=rad_loss(jensen)), rel=1e-12)
    assert _eps_empirical(name, phi_sq_sum=large) == pytest.approx(_eps_empirical(name), rel=1e-15)


def test_mc_error_is_computed_from_phi_sq_sum_and_n_draws():
    """Without rad_hat_mc_error: the McDiarmid root exp(-2 t^2 / sum c^2) = delta_mc, c_ik = 2 nu_V ||phi_i||/(M n)."""
    phi, n = 1.7e6, 50
    sum_c2 = 4 * 0.4**2 * 8 * phi / (2e5**2 * n)
    err = brentq(lambda t: math.exp(-2 * t * t / sum_c2) - 0.005, 0, 1, xtol=1e-16, rtol=1e-15)
    name = "population_tight_hoeffding_empirical"
    computed = _eps_empirical(name, rad_hat_mc_error=None, phi_sq_sum=phi, n_draws=n)
    assert computed == pytest.approx(_eps_empirical(name, rad_hat_mc_error=err, phi_sq_sum=None), rel=1e-12)
    # both given: the larger error is used (a smaller given one is not trusted)
    assert _eps_empirical(name, rad_hat_mc_error=err / 10, phi_sq_sum=phi, n_draws=n) == pytest.approx(computed)


# ---------------------------------------------------------------- key aliases
def test_old_level_key_names_are_aliases():
    new = evaluate_variants(Setup(**EX), 0.1, VariantInputs(delta_S_jump_pop=0.01, delta_T_jump_S=0.02))
    old = evaluate_variants(Setup(**EX), 0.1, VariantInputs(delta_S_jump=0.01, delta_T_jump=0.02))
    for name in new.variants:
        assert float(new.variants[name].bound) == float(old.variants[name].bound)
        assert float(new.variants[name].failure_probability) == float(old.variants[name].failure_probability)
    assert float(new.variants["population_tight_hoeffding"].levels["H_S_jump"]) == 0.01
    VariantInputs(delta_S_jump=0.01, delta_S_jump_pop=0.01).validate(Setup(**EX))      # same value: fine
    with pytest.raises(InputError, match=r"^variants\.delta_T_jump == 0\.03, must be equal to "
                                         r"variants\.delta_T_jump_S"):
        VariantInputs(delta_T_jump=0.03, delta_T_jump_S=0.02).validate(Setup(**EX))


# ---------------------------------------------------------------- the choice of a route
def test_use_fixes_the_certificate_before_the_data():
    inputs = VariantInputs(**INPUTS, use="population_tight_bernstein_empirical")
    rep = evaluate_variants(Setup(**EX), 0.1, inputs)
    assert rep.chosen is rep.variants["population_tight_bernstein_empirical"] and bool(rep.chosen.certified)
    assert rep.to_dict()["use"]["name"] == "population_tight_bernstein_empirical"
    paper = evaluate_variants(Setup(**EX), 0.1, VariantInputs(use="direct_route"))
    assert paper.chosen.theorem == "theorem3_direct_route" and not bool(paper.chosen.certified)
    with pytest.raises(InputError, match=r"^variants\.use == 'best', must be one of \['population_route'"):
        VariantInputs(use="best").validate(Setup(**EX))
    with pytest.raises(InputError, match=r"^variants\.use == 'direct_tight_bernstein', must be a route whose inputs"):
        evaluate_variants(Setup(**EX), 0.1, VariantInputs(use="direct_tight_bernstein"))


def _one_by_one(setup, inputs, level, factor):
    """Each route on its own with every level it spends times ``factor`` (an array allowed), computed by hand."""
    f = np.asarray(factor, dtype=np.float64)
    scaled = dataclasses.replace(setup, delta=np.asarray(setup.delta) * f, delta_prime=np.asarray(setup.delta_prime) * f)
    err = inputs.rad_hat_mc_error
    if err is not None:   # the McDiarmid error scales as sqrt(ln(1/level))
        err = err * np.sqrt(np.log(1 / (inputs.delta_mc * f)) / math.log(1 / inputs.delta_mc))
    levels = {k: (None if getattr(inputs, k) is None else getattr(inputs, k) * f)
              for k in ("delta_mc", "delta_S_jump_pop", "delta_T_new", "delta_T_old", "delta_T_jump_S")}
    scaled_inputs = dataclasses.replace(inputs, rad_hat_mc_error=err, **levels)
    paper = evaluate_routes(scaled, level)
    out = {"population_route": paper.population, "direct_route": paper.direct}
    out.update(evaluate_variants(scaled, level, scaled_inputs, any_route=False).variants)
    return out


def _hand_scale(setup, level, delta_mc):
    """The common factor, from the distinct events listed by hand (every route of EX with INPUTS taking part).

    Scaling levels: the paper's two-sided E_S (= the direct closed variants' E_S), the paper's E_T,
    the population closed variants' one-sided E_S, the empirical E_S of each route (delta - delta_mc),
    E_MC once; per tail kind (Hoeffding, Bernstein) the tails of one function on one sample once, at the
    larger level: f~_pop on S delta'/3, f_new on T max(delta'/3, delta'/2), f_old on T delta'/3, f~_S on T
    delta'/2. Total 4 delta - delta_mc + delta' + 2 (5/3) delta'.
    Fixed: the paper's two Hoeffding tails at t = Delta_R/4 (and E_R when given).
    """
    d, dp, v = setup.delta, setup.delta_prime, setup
    L = 4 * d - delta_mc + dp + 2 * (dp / 3 + dp / 2 + dp / 3 + dp / 2)
    F = 2 * math.exp(-v.K * v.delta_R**2 / (8 * v.B**2)) + (v.delta_R_failure or 0.0)
    return min(1.0, (level - F) / L)


@pytest.mark.parametrize("delta_R,failure", [(0.09, None), (0.2, 1e-3)], ids=["example", "large_margin_estimated"])
def test_any_route_is_one_union_of_every_routes_distinct_events(delta_R, failure):
    setup, inputs = Setup(**{**EX, "delta_R": delta_R, "delta_R_failure": failure}), VariantInputs(**INPUTS)
    rep = evaluate_variants(setup, 0.1, inputs)
    a = rep.any_route
    c = _hand_scale(setup, 0.1, INPUTS["delta_mc"])
    assert a.method == "scaled_union" and len(a.included) == 10 and float(a.scale) == pytest.approx(c, rel=1e-12)
    assert c > 1 / 10 + 0.02      # a shared event is paid once: better than Bonferroni over the 10 routes
    alone = _one_by_one(setup, inputs, 0.1, a.scale)
    for name, r in alone.items():
        assert bool(a.included[name]) and bool(r.failure_probability <= 0.1), name
        assert bool(a.certifying[name]) == bool(r.certified), name
    assert float(a.failure_probability) == pytest.approx(0.1, rel=1e-12) and float(a.failure_probability) <= 0.1
    assert bool(a.certified) == any(bool(a.certifying[k]) for k in a.certifying)
    if delta_R == 0.09:   # one variant certifies alone at its own level, none at level x c: the pick is not certified
        assert bool(rep.variants["population_tight_bernstein_empirical"].certified) and not bool(a.certified)
    else:
        assert bool(a.certified)


def test_any_route_leaves_out_a_vacuous_paper_route_before_the_data():
    setup = Setup(**{**EX, "delta_R": 1e-3})        # Theorem 2's Hoeffding tails ~ 2: it cannot take part
    a = evaluate_variants(setup, 0.1, VariantInputs(**INPUTS)).any_route
    assert not bool(a.included["population_route"]) and bool(a.included["direct_route"])
    assert float(a.scale) == pytest.approx(0.1 / (4 * 0.05 - INPUTS["delta_mc"] + 0.05 + 2 * 0.05 * 5 / 3), rel=1e-12)


def test_any_route_claim_holds_in_the_toy_world():
    """P(some taking-part route's bound at its scaled levels is violated) <= the union's failure probability (CP)."""
    draws = 400
    setup, inputs, observed, _ = draw(draws, seed=5, M=400, K=2000, n_class=200)
    setup, inputs = with_levels(setup, 0.2, 0.2, inputs)
    rep = evaluate_variants(setup, 0.4, inputs)
    violated = np.zeros(draws, dtype=bool)
    for name, r in _one_by_one(setup, inputs, 0.4, rep.any_route.scale).items():
        violated |= np.asarray(rep.any_route.included[name]) & (observed > r.bound)
    low, _ = clopper_pearson(int(violated.sum()), draws, 0.999)
    assert low <= float(np.max(rep.any_route.failure_probability)) <= 0.4


def test_union_counts_a_shared_event_once_and_needs_the_total_below_the_level():
    from types import SimpleNamespace as R

    from bounds.route_choice import RouteCandidate, union_of_routes

    a = RouteCandidate("a", R(failure_probability=0.06, certified=True), {"E_S": 0.05, "H": 0.01})
    b = RouteCandidate("b", R(failure_probability=0.07, certified=False), {"E_S": 0.05, "E_T": 0.02})
    u = union_of_routes([a, b], 0.1)
    assert float(u.failure_probability) == pytest.approx(0.08) and bool(u.certified)
    tight = union_of_routes([a, b], 0.075, share=0.075)
    assert not bool(tight.certified) and "failure probability 0.08 > 0.075" in tight.to_dict()["message"]


def test_every_variant_spec_is_evaluated_with_all_inputs():
    assert set(evaluate_variants(Setup(**EX), 0.1, VariantInputs(**INPUTS), any_route=False).variants) == set(
        VARIANT_SPECS)


def test_one_statistic_at_two_levels_is_paid_once_at_the_larger():
    """{X > t(p)} with t decreasing in p: the union of two such events is the one at the larger level."""
    from types import SimpleNamespace as R

    from bounds.route_choice import RouteCandidate, union_of_routes

    a = RouteCandidate("a", R(failure_probability=0.02, certified=False), {"T/hoeffding/f_new": 0.02})
    b = RouteCandidate("b", R(failure_probability=0.04, certified=True), {"T/hoeffding/f_new": 0.03, "E_T": 0.01})
    u = union_of_routes([a, b], 0.05)
    assert float(u.failure_probability) == pytest.approx(0.04) and bool(u.certified)
    only_a = union_of_routes([a, b], 0.05, included={"a": True, "b": False})
    assert float(only_a.failure_probability) == pytest.approx(0.02) and not bool(only_a.certified)
