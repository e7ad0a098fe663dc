"""``routes.any`` (union of the routes' failure events) and ``routes.population_risk``:
hand-derived numbers (THEORY §5-§6)."""
import math

import numpy as np
import pytest

from bounds.regimes import deepest_certified_depth, degenerate_regime
from bounds.routes import Setup, any_route, evaluate_routes, min_M_expression

# Round numbers: eps_M = 0.01, eps_K = 0.02 given, K Delta_R^2 / (8 B^2) = 1000 * 0.04 / 8 = 5.
ROUND = dict(L_test_old=1.0, delta_R=0.2, delta_erm=0.05, delta_test_R=0.15, M=1e4, K=1000, delta=0.03,
             delta_prime=0.03, B=1.0, L_loss=1.0, block=dict(d=1, L_top=1, rho_phi=1, nu_V=1), eps_M=0.01, eps_K=0.02)
TAILS = 2 * math.exp(-5)   # the two Hoeffding events at t = Delta_R / 4


def test_hand_derived_bounds_of_both_routes():
    rep = evaluate_routes(Setup(**ROUND), level=0.1)
    assert float(rep.population.bound) == pytest.approx(1 - 0.1 - 0.05 + 0.02, abs=1e-14)     # 0.87
    assert float(rep.direct.bound) == pytest.approx(1 - 0.15 - 0.05 + 0.06, abs=1e-14)        # 0.86
    assert float(rep.population.failure_probability) == pytest.approx(0.03 + TAILS, rel=1e-13)
    assert float(rep.direct.failure_probability) == pytest.approx(0.06, rel=1e-13)


@pytest.mark.parametrize("level,included,union,certified", [
    (0.1, {"population": True, "direct": True}, 0.03 + 0.03 + TAILS, True),    # E_S counted once
    (0.05, {"population": True, "direct": False}, 0.03 + TAILS, True),          # direct's own 0.06 > level
    (0.07, {"population": True, "direct": True}, 0.03 + 0.03 + TAILS, False),  # each certifies, the union does not
])
def test_any_route_counts_shared_events_once(level, included, union, certified):
    a = evaluate_routes(Setup(**ROUND), level=level).any_route
    assert {k: bool(v) for k, v in a.included.items()} == included
    assert float(a.failure_probability) == pytest.approx(union, rel=1e-13)
    assert bool(a.certified) is certified
    d = a.to_dict()
    assert d["certified"] is certified and d["failure_probability"] == pytest.approx(union, rel=1e-13)


def test_any_route_pays_for_an_estimated_delta_R():
    a = evaluate_routes(Setup(**ROUND, delta_R_failure=0.005), level=0.1).any_route
    assert float(a.failure_probability) == pytest.approx(0.03 + 0.03 + TAILS + 0.005, rel=1e-13)
    assert "E_R" in a.events


def test_vacuous_population_route_does_not_spoil_the_direct_route():
    # Delta_R -> 0: the population route's own failure probability is ~ delta + 2; it is
    # known before S and T are drawn, so "some route" may leave it out at no cost.
    rep = evaluate_routes(Setup(**{**ROUND, "delta_R": 1e-4}), level=0.1)
    a = rep.any_route
    assert not a.included["population"] and a.included["direct"]
    assert float(a.failure_probability) == pytest.approx(0.06, rel=1e-13)
    assert bool(a.certified) and bool(rep.direct.certified)
    assert set(a.events) == {"E_T", "E_S"}


def test_any_route_vectorised_matches_scalar():
    dRs = np.array([1e-4, 0.05, 0.2, 0.5])
    batch = evaluate_routes(Setup(**{**ROUND, "delta_R": dRs}), level=0.07).any_route
    for i, dr in enumerate(dRs):
        one = evaluate_routes(Setup(**{**ROUND, "delta_R": float(dr)}), level=0.07).any_route
        assert bool(batch.certified[i]) == bool(one.certified)
        assert float(batch.failure_probability[i]) == pytest.approx(float(one.failure_probability), rel=1e-13)


def test_any_route_rejects_inconsistent_events():
    from bounds import THEOREM_3, Event

    rep = evaluate_routes(Setup(**ROUND), level=0.1)
    other = THEOREM_3.replace(events=(Event("E_S", 2 * THEOREM_3.event_map["E_S"].probability, "doubled"),
                                      THEOREM_3.event_map["E_T"]))
    from bounds.routes import ANY_OF

    values = {**Setup(**ROUND).values(), "eps_M": 0.01, "eps_K": 0.02}
    with pytest.raises(ValueError, match="event 'E_S'"):
        any_route({"population": rep.population, "direct": rep.direct}, values, 0.1,
                  theorems={"population": ANY_OF["population"], "direct": other})


def test_population_risk_route_hand_derived():
    rep = evaluate_routes(Setup(**ROUND, R_old=0.9, delta_R_failure=0.001), level=0.1)
    r = rep.population_risk
    assert float(r.bound) == pytest.approx(0.9 - 0.2 - 0.05 + 0.02, abs=1e-14)          # 0.67
    assert float(r.failure_probability) == pytest.approx(0.031, rel=1e-13)                # delta + delta_R_failure
    assert float(r.improvement) == pytest.approx(0.23, abs=1e-14) and bool(r.certified)
    # min_M: Delta_R + Delta_ERM = 2 c_M / sqrt(M) with c_M = eps_M sqrt(M) = 1  ->  M = (2 / 0.25)^2 = 64
    assert float(r.min_M) == pytest.approx(64.0, rel=1e-12)
    assert str(min_M_expression("population_risk")) == "4*c_M**2/(delta_R + delta_erm)**2"


def test_population_risk_without_R_old_still_decides():
    rep = evaluate_routes(Setup(**ROUND), level=0.1)
    assert np.isnan(float(rep.population_risk.bound)) and bool(rep.population_risk.certified)
    assert any("R_old not given" in n for n in rep.notes)
    bad = evaluate_routes(Setup(**{**ROUND, "delta_R": 0.01, "delta_erm": 0.0}), level=0.1).population_risk
    assert not bool(bad.certified) and float(bad.improvement) == pytest.approx(0.01 - 0.02, abs=1e-14)


def test_degenerate_regime_and_deepest_depth_use_the_union():
    reg = degenerate_regime(Setup(**ROUND), 0.07)
    assert reg.population_certified and reg.direct_certified and not reg.any_certified
    assert reg.any_failure_probability == pytest.approx(0.06 + TAILS, rel=1e-13)
    assert "not certified" in reg.summary
    # depth 4: both certify alone at level 0.07 but not together; depth 8: only the population route
    setups = [Setup(**ROUND), Setup(**{**ROUND, "delta_prime": 0.05})]
    deepest, flags = deepest_certified_depth([4, 8], setups, 0.07)
    assert flags == [(True, True), (True, False)] and deepest == 8
    deepest, _ = deepest_certified_depth([4], setups[:1], 0.07)
    assert deepest is None
