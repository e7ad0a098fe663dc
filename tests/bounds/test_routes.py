"""Routes of THEORY §5-§6: hand-computed numbers and properties."""
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, strategies as st

from bounds import THEOREM_2, THEOREM_3, _symbols as s
from bounds.parameters import PARAMETERS
from plumbing.validation import InputError
from bounds.routes import Setup, evaluate_routes, improvement_expression, min_K_expression, min_M_expression
from tests._tolerances import TOL

EXAMPLE = dict(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5,
               delta=0.05, delta_prime=0.05, B=4.2, L_loss=math.sqrt(2), family="readout",
               block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))


def test_example_setup_matches_hand_derived_numbers():
    # Worked by hand from THEORY §4-§6 (not through the implementation):
    #   eps_n = 2 sqrt(2) L_l L_top nu_V sqrt(d) rho_phi / sqrt(n) + B sqrt(ln(2/delta)/(2n))
    #         = 4 * 2.5 * 0.4 * sqrt(8) * 3 / sqrt(n) + 4.2 sqrt(ln(40)/(2n))   (L_l = sqrt 2)
    #   n = 2e5: 0.0758947 + 0.0127546 = 0.0886493;  n = 1e5: 0.1073313 + 0.0180377 = 0.1253690
    #   population: 0.62 - 0.045 - 0.004 + 2 * 0.0886493 = 0.7482985; failure 0.05 + 2 e^{-2.87} = 0.0564308
    #   direct:     0.62 - 0.085 - 0.004 + 2 * (0.0886493 + 0.1253690) = 0.9590365; failure 0.1
    #   min_M: (2 * 0.0886493 * sqrt(2e5) / 0.049)^2 = 2.61847e6
    rep = evaluate_routes(Setup(**EXAMPLE), level=0.1)
    assert float(rep.eps_M) == pytest.approx(0.0886493, rel=1e-6)
    assert float(rep.eps_K) == pytest.approx(0.1253690, rel=1e-6)
    assert float(rep.population.bound) == pytest.approx(0.7482985, rel=1e-6)
    assert float(rep.population.failure_probability) == pytest.approx(0.0564308, rel=1e-6)
    assert float(rep.direct.bound) == pytest.approx(0.9590365, rel=1e-6)
    assert float(rep.direct.failure_probability) == pytest.approx(0.1, rel=1e-12)
    assert not rep.population.certified and not rep.direct.certified
    assert float(rep.population.min_M) == pytest.approx(2.61847e6, rel=1e-5)
    assert rep.population.min_K is None or np.isnan(rep.population.min_K)  # margin < 0: no K helps


def test_round_number_eps_is_exact():
    # d = 4, nu_V = rho_phi = L_top = 1, L_l = 1/sqrt(2), B = 1, n = 400, delta = 2 e^-2:
    # Rademacher term 2 sqrt(2) (1/sqrt(2)) * 1 * sqrt(4)/sqrt(400) = 0.2; confidence sqrt(2/800) = 0.05
    d2 = 2 * math.exp(-2)
    st_ = Setup(L_test_old=1.0, delta_R=0.6, delta_erm=0.1, delta_test_R=0.5, M=400, K=400, delta=d2,
                delta_prime=d2, B=1.0, L_loss=2 ** -0.5, block=dict(d=4, L_top=1, rho_phi=1, nu_V=1))
    rep = evaluate_routes(st_, level=0.9)
    assert float(rep.eps_M) == pytest.approx(0.25, rel=1e-13) and float(rep.eps_K) == pytest.approx(0.25, rel=1e-13)
    assert float(rep.population.bound) == pytest.approx(1 - 0.3 - 0.1 + 0.5, rel=1e-13)
    assert float(rep.direct.bound) == pytest.approx(1 - 0.5 - 0.1 + 1.0, rel=1e-13)


def test_round_number_setup_with_overrides():
    st_ = Setup(L_test_old=1.0, delta_R=0.2, delta_erm=0.05, delta_test_R=0.15, M=1e4, K=1000, delta=0.05,
                delta_prime=0.05, B=1.0, L_loss=1.0, block=dict(d=1, L_top=1, rho_phi=1, nu_V=1),
                eps_M=0.01, eps_K=0.02)
    rep = evaluate_routes(st_, level=0.2)
    assert rep.population.bound == pytest.approx(0.87, abs=1e-12)
    assert rep.direct.bound == pytest.approx(0.86, abs=1e-12)
    assert rep.population.failure_probability == pytest.approx(0.05 + 2 * math.exp(-5), abs=1e-12)
    assert rep.population.certified and rep.direct.certified
    assert rep.population.min_M == pytest.approx(16 / 0.09, rel=1e-12)   # c_M = 1
    # min_K: 0.05 + 2 exp(-K 0.04/8) = 0.2
    assert rep.population.min_K == pytest.approx(200 * math.log(2 / 0.15), rel=1e-12)
    assert any("1/sqrt(n)" in n for n in rep.notes)


def test_full_family_closed_form():
    blk = dict(d=4, L_top=1.5, rho=2.0, nu_U=0.5, nu_V=0.3)
    rep = evaluate_routes(Setup(**{**EXAMPLE, "family": "full", "block": blk}), level=0.1)
    rad_vec = 4 * math.sqrt(5) * 0.5 * 0.3 * (math.sqrt(4 * math.log(2)) + 1) / math.sqrt(2e5)
    hand = 2 * math.sqrt(2) * math.sqrt(2) * 1.5 * rad_vec + 4.2 * math.sqrt(math.log(40) / 4e5)
    np.testing.assert_allclose(rep.eps_M, hand, **TOL["float64"])


def test_vacuous_failure_probability_is_reported():
    rep = evaluate_routes(Setup(**{**EXAMPLE, "delta_R": 1e-4}), level=0.1)
    assert rep.population.failure_probability > 1 and rep.population.vacuous
    assert "VACUOUS" in rep.population.to_dict()["message"]


def test_nonpositive_delta_R_is_not_applicable():
    rep = evaluate_routes(Setup(**{**EXAMPLE, "delta_R": -0.01}), level=0.1)
    assert rep.population.failure_probability == pytest.approx(2.05)
    assert not rep.population.certified and any("does not apply" in n for n in rep.notes)


# ---------------------------------------------------------------- properties (hypothesis)
pos = st.floats(1e-3, 10.0)
setups = st.fixed_dictionaries(dict(
    L_test_old=st.floats(0.0, 5.0), delta_R=st.floats(1e-3, 2.0), delta_erm=st.floats(0.0, 1.0),
    delta_test_R=st.floats(-0.5, 2.0), M=st.floats(10, 1e8), K=st.floats(10, 1e8),
    delta=st.floats(1e-6, 0.5), delta_prime=st.floats(1e-6, 0.5), B=pos, L_loss=pos,
    block=st.fixed_dictionaries(dict(d=st.integers(1, 64), L_top=pos, rho_phi=pos, nu_V=pos)),
))


@given(setups, st.floats(1.5, 10.0))
def test_bounds_tighten_with_M_and_K(cfg, factor):
    a = evaluate_routes(Setup(**cfg), 0.5)
    b = evaluate_routes(Setup(**{**cfg, "M": cfg["M"] * factor, "K": cfg["K"] * factor}), 0.5)
    assert b.population.bound < a.population.bound
    assert b.direct.bound < a.direct.bound
    assert b.population.failure_probability <= a.population.failure_probability


@given(setups, st.floats(0.01, 0.9))
def test_bounds_loosen_as_delta_shrinks(cfg, shrink):
    a = evaluate_routes(Setup(**cfg), 0.5)
    b = evaluate_routes(Setup(**{**cfg, "delta": cfg["delta"] * shrink, "delta_prime": cfg["delta_prime"] * shrink}), 0.5)
    assert b.population.bound > a.population.bound and b.direct.bound > a.direct.bound


@given(setups)
def test_min_M_makes_the_margin_zero(cfg):
    rep = evaluate_routes(Setup(**cfg), 0.99)
    for route in (rep.population, rep.direct):
        if np.isfinite(route.min_M):
            at = evaluate_routes(Setup(**{**cfg, "M": float(route.min_M)}), 0.99, validate=False)
            r = at.population if route.route == "population" else at.direct
            assert abs(float(r.improvement)) <= 1e-9 * (1 + float(r.bound))


def test_failure_probability_hand_derived():
    # K Delta_R^2 / (8 B^2) = 800 * 0.01 / 8 = 1: failure delta + 2/e; at 4x K: delta + 2 e^-4
    base = {**EXAMPLE, "K": 800.0, "delta_R": 0.1, "B": 1.0}
    assert float(evaluate_routes(Setup(**base), 0.5).population.failure_probability) == \
        pytest.approx(0.05 + 2 / math.e, rel=1e-14)
    assert float(evaluate_routes(Setup(**{**base, "K": 3200.0}), 0.5).population.failure_probability) == \
        pytest.approx(0.05 + 2 * math.exp(-4), rel=1e-14)


@given(setups)
def test_failure_probabilities_are_union_bounds(cfg):
    # properties of a union bound with two Hoeffding tails in (0, 1]: between delta and delta + 2,
    # decreasing in K; the direct route's does not depend on Delta_R or K
    rep = evaluate_routes(Setup(**cfg), 0.5)
    more_K = evaluate_routes(Setup(**{**cfg, "K": cfg["K"] * 4}), 0.5)
    fp = float(rep.population.failure_probability)
    assert cfg["delta"] <= fp <= cfg["delta"] + 2
    assert float(more_K.population.failure_probability) <= fp
    other = evaluate_routes(Setup(**{**cfg, "delta_R": cfg["delta_R"] * 2, "K": cfg["K"] * 3}), 0.5)
    assert float(other.direct.failure_probability) == float(rep.direct.failure_probability)
    assert bool(rep.population.vacuous) == (fp >= 1)


def test_population_failure_tends_to_delta_plus_two():
    assert sp.limit(THEOREM_2.failure_probability, s.delta_R, 0, "+") == s.delta + 2
    vals = [evaluate_routes(Setup(**{**EXAMPLE, "delta_R": dr}), 0.1).population.failure_probability
            for dr in (1e-2, 1e-4, 1e-6)]
    assert vals[-1] == pytest.approx(2.05, abs=1e-6) and vals[0] < vals[1] < vals[2]


@given(setups)
def test_symbolic_and_lambdified_agree(cfg):
    rep = evaluate_routes(Setup(**cfg), 0.5)
    sym = {getattr(s, k): v for k, v in cfg.items() if k != "block"}
    sym.update({s.eps_M: float(rep.eps_M), s.eps_K: float(rep.eps_K)})
    for T, got in ((THEOREM_2, rep.population), (THEOREM_3, rep.direct)):
        assert float(T.bound.subs(sym)) == pytest.approx(float(got.bound), rel=1e-10, abs=1e-12)
        assert float(T.failure_probability.subs(sym)) == pytest.approx(float(got.failure_probability), rel=1e-10)


def test_vectorised_matches_scalar():
    rng = np.random.default_rng(0)
    n = 50
    batch = {**EXAMPLE, "M": rng.uniform(1e3, 1e7, n), "delta_R": rng.uniform(0.01, 0.5, n)}
    rep = evaluate_routes(Setup(**batch), 0.1)
    fields = ("bound", "failure_probability", "improvement", "certified", "vacuous", "min_M", "min_K")
    for i in (0, 17, 49):
        one = evaluate_routes(Setup(**{**EXAMPLE, "M": batch["M"][i], "delta_R": batch["delta_R"][i]}), 0.1)
        for route in ("population", "direct"):
            for f in fields:
                got, want = getattr(getattr(rep, route), f)[i], getattr(getattr(one, route), f)
                np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float),
                                           rtol=1e-12, equal_nan=True, err_msg=f"{route}.{f}")


def test_every_result_field_has_the_batch_shape():
    rep = evaluate_routes(Setup(**{**EXAMPLE, "K": np.array([1e4, 1e5, 1e6])}), 0.1)   # only K batched
    for route in (rep.population, rep.direct):
        for f in ("bound", "failure_probability", "certified", "min_M", "min_K"):
            assert np.shape(getattr(route, f)) == (3,), f


def test_block_entries_cannot_shadow_top_level_quantities():
    bad = {**EXAMPLE["block"], "M": 1e12}
    with pytest.raises(InputError, match="block.M == "):
        evaluate_routes(Setup(**{**EXAMPLE, "block": bad}), 0.1)
    assert "M" not in Setup(**{**EXAMPLE, "block": bad}).values() or \
        Setup(**{**EXAMPLE, "block": bad}).values()["M"] == 2e5


# ---------------------------------------------------------------- solvers must reject mis-stated roots
def _is_root(margin, root, var):
    """Substitute ``root`` for ``var``: the margin must vanish identically (numeric spot check)."""
    rng = np.random.default_rng(1)
    e = margin.subs(var, root)
    syms = sorted(e.free_symbols, key=lambda x: x.name)
    for _ in range(5):
        # a regime where the route can certify: margins above the costs, level above delta
        ranges = {"eps_M": (1e-3, 1e-2), "eps_K": (1e-3, 1e-2), "delta": (0.01, 0.1), "delta_prime": (0.01, 0.1)}
        vals = {x: rng.uniform(*ranges.get(x.name, (0.1, 0.3) if x.name.startswith("delta") else (0.5, 3)))
                for x in syms}
        if "level" in {x.name for x in syms}:
            vals[next(x for x in syms if x.name == "level")] = vals.get(s.delta, 0.05) + 0.5
        if abs(float(e.subs(vals))) > 1e-9:
            return False
    return True


from bounds.routes import c_K, c_M, level  # noqa: E402

SOLVERS = [
    ("population", "M", lambda: improvement_expression("population").subs(s.eps_M, c_M / sp.sqrt(s.M)), s.M,
     lambda: min_M_expression("population")),
    ("direct", "M", lambda: improvement_expression("direct").subs(s.eps_M, c_M / sp.sqrt(s.M)), s.M,
     lambda: min_M_expression("direct")),
    ("population", "K", lambda: THEOREM_2.failure_probability - level, s.K, lambda: min_K_expression("population")),
    ("direct", "K", lambda: improvement_expression("direct").subs(s.eps_K, c_K / sp.sqrt(s.K)), s.K,
     lambda: min_K_expression("direct")),
]


@pytest.mark.parametrize("route,which,margin,var,root", SOLVERS, ids=[f"{a}-{b}" for a, b, *_ in SOLVERS])
def test_solver_root_is_exact_and_misstated_root_is_rejected(route, which, margin, var, root):
    assert _is_root(margin(), root(), var)
    for wrong in (2 * root(), root() / 4, sp.sqrt(root())):   # factor slips, sqrt(n) for n
        assert not _is_root(margin(), wrong, var)


def test_min_M_closed_form_matches_numeric_root():
    from scipy.optimize import brentq

    rep = evaluate_routes(Setup(**EXAMPLE), 0.1)
    def f(M): return float(evaluate_routes(Setup(**{**EXAMPLE, "M": M}), 0.1, validate=False).population.improvement)
    assert brentq(f, 1e3, 1e9, xtol=1e-6, rtol=1e-13) == pytest.approx(float(rep.population.min_M), rel=1e-9)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("key", sorted(PARAMETERS))
def test_invalid_values_are_named(key):
    iv = PARAMETERS[key]
    bad = [float("nan"), float("inf")] + ([iv.low - 1] if iv.low is not None else []) + \
          ([iv.high + 1] if iv.high is not None else [])
    for value in bad:
        with pytest.raises(InputError, match=rf"^{key} == "):
            evaluate_routes(Setup(**{**EXAMPLE, key: value}), 0.1)


def test_level_and_family_are_validated():
    with pytest.raises(InputError, match="level == 1.5"):
        evaluate_routes(Setup(**EXAMPLE), 1.5)
    with pytest.raises(InputError, match="block.family == 'wide'"):
        evaluate_routes(Setup(**{**EXAMPLE, "family": "wide"}), 0.1)
    with pytest.raises(InputError, match="block.nu_V is missing"):
        evaluate_routes(Setup(**{**EXAMPLE, "block": dict(d=8, L_top=2.5, rho_phi=3.0)}), 0.1)


def test_min_K_closed_form_matches_numeric_root():
    from scipy.optimize import brentq

    cfg = {**EXAMPLE, "M": 2e7}
    rep = evaluate_routes(Setup(**cfg), 0.1)
    def f(K): return float(evaluate_routes(Setup(**{**cfg, "K": K}), 0.1, validate=False).population.failure_probability) - 0.1
    assert brentq(f, 10, 1e9, xtol=1e-9, rtol=1e-13) == pytest.approx(float(rep.population.min_K), rel=1e-9)


def test_theorem1_evaluators():
    from bounds import jumpboard_lower_bound, jumpboard_risk_bound

    assert float(jumpboard_lower_bound(3.0, 2.0)) == pytest.approx(0.75)
    # at eta = 1/beta the risk bound is R_old - ||G||^2/(2 beta)
    assert float(jumpboard_risk_bound(1.0, 3.0, 2.0, 0.5)) == pytest.approx(1.0 - 0.75)
    etas = np.linspace(0.01, 0.5, 50)
    assert np.argmin(jumpboard_risk_bound(1.0, 3.0, 2.0, etas)) == 49   # best step is 1/beta


def test_estimated_delta_R_pays_its_failure_probability():
    cfg = {**EXAMPLE, "M": 2e7}
    exact = evaluate_routes(Setup(**cfg), 0.1)
    est = evaluate_routes(Setup(**cfg, delta_R_failure=0.01), 0.1)
    assert est.population.failure_probability == pytest.approx(exact.population.failure_probability + 0.01)
    assert est.direct.failure_probability == exact.direct.failure_probability    # the direct route does not use it
    assert est.population.bound == exact.population.bound
    # min_K still makes the (larger) failure probability equal to the level
    at = evaluate_routes(Setup(**{**cfg, "K": float(est.population.min_K)}, delta_R_failure=0.01), 0.1)
    assert at.population.failure_probability == pytest.approx(0.1, rel=1e-9)
    assert float(est.population.min_K) > float(exact.population.min_K)
    with pytest.raises(InputError, match="delta_R_failure == 1.0"):
        evaluate_routes(Setup(**cfg, delta_R_failure=1.0), 0.1)


def test_empirical_bernstein_lower_bound():
    from bounds.confidence import empirical_bernstein_lower

    # written out: mean - sqrt(2 V ln(2/l)/n) - 7 R ln(2/l)/(3(n-1))
    got = float(empirical_bernstein_lower(0.3, 0.04, 10_000, 2.0, 1e-3))
    L = math.log(2 / 1e-3)
    assert got == pytest.approx(0.3 - math.sqrt(2 * 0.04 * L / 10_000) - 7 * 2.0 * L / (3 * 9_999), rel=1e-12)
    with pytest.raises(InputError):
        empirical_bernstein_lower(0.0, 1.0, 1, 1.0, 0.05)
