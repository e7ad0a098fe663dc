"""Side algebra: each check passes on :mod:`bounds` and rejects a wrong expression."""
import pytest
import sympy as sp

from bounds import THEOREM_1, THEOREM_1_OPTIMAL, THEOREM_2
from bounds import _symbols as s
from proofs_check import side_algebra as sa


@pytest.fixture(scope="module")
def checks():
    return {c.name: c for c in sa.side_algebra_checks()}


def test_all_side_algebra_passes(checks):
    assert len(checks) >= 16
    bad = {k: c.detail for k, c in checks.items() if c.status != "PASS"}
    assert not bad


def test_descent_optimum_rejects_wrong_optimal_step():
    wrong = THEOREM_1_OPTIMAL.replace(conclusion=sp.Ge(s.delta_R, s.G_sq / s.beta))
    c = sa.check_descent_optimum(THEOREM_1, wrong)
    assert c.status == "FAIL" and c.countermodel


def test_descent_optimum_rejects_wrong_gain():
    wrong = THEOREM_1.replace(conclusion=sp.Le(s.R_jump, s.R_old - s.eta * (1 - s.beta * s.eta) * s.G_sq))
    c = sa.check_descent_optimum(wrong, THEOREM_1_OPTIMAL)
    assert c.status == "FAIL" and "1/(2*beta)" in c.detail


def test_hoeffding_exponent_rejects_wrong_failure_probability():
    wrong = THEOREM_2.replace(failure_probability=s.delta + 2 * sp.exp(-s.K * s.delta_R**2 / (4 * s.B**2)))
    c = sa.check_hoeffding_exponent(paper=wrong)
    assert c.status == "FAIL" and c.countermodel["residual"] != 0


def test_eps_scaling_rejects_one_over_n():
    c = sa.check_eps_scaling("readout", s.B / s.M)
    assert c.status == "FAIL"


@pytest.mark.parametrize("route, wrong", [("population", 4 * sp.Symbol("c_M", positive=True) ** 2 / (s.delta_R + 2 * s.delta_erm) ** 2),
                                          ("direct", 16 * sp.Symbol("c_M", positive=True) ** 2 / (s.delta_erm + s.delta_test_R - 2 * s.eps_K) ** 2)])
def test_min_M_rejects_wrong_closed_form(route, wrong):
    c = sa.check_min_M(route, wrong)
    assert c.status == "FAIL" and c.countermodel


def test_min_K_rejects_wrong_closed_form():
    level = sp.Symbol("level", positive=True)
    c = sa.check_min_K_population(4 * s.B**2 * sp.log(2 / (level - s.delta)) / s.delta_R**2)
    assert c.status == "FAIL"


def test_integral_test_rejects_wrong_bounds():
    from bounds import appendix_m as am

    lo, hi = am.tail_sum_bounds(2 * am.alpha)
    assert sa.check_integral_test(lo * 2, hi).status == "FAIL"          # not the tail integral
    assert sa.check_integral_test(lo, hi - am.D ** (-2 * am.alpha) / 2).status == "FAIL"


def test_integral_grid_catches_a_violated_inequality():
    from bounds import appendix_m as am

    lo, hi = am.tail_sum_bounds(2 * am.alpha)
    status, _, cm = sa._integral_grid(lo, lo, am.D, am.alpha)  # upper = lower is violated
    assert status == "FAIL" and cm["tail_sum"] > cm["upper"]


def test_optimal_depth_rejects_wrong_exponent():
    from bounds import appendix_m as am

    wrong = (4 * am.A**2 * am.M * am.a**2 / am.c_g**2) ** (1 / (am.a + 1))
    assert sa.check_optimal_depth(wrong).status == "FAIL"
    assert sa.check_exponent("optimal_depth", wrong, am.M, 1 / (2 * am.a + 1)).status == "FAIL"


def test_deepest_depth_rejects_wrong_root():
    from bounds import appendix_m as am

    wrong = am.deepest_certified_depth() * 2
    assert sa.check_deepest_depth(wrong).status == "FAIL"


def test_exponent_of_the_excess_is_two_alpha_minus_one():
    from bounds import appendix_m as am

    assert sa.power_exponent(am.D ** (1 - 2 * am.alpha) * am.c_lo, am.D) == 1 - 2 * am.alpha
    c = sa.check_exponent("excess", am.D ** (-2 * am.alpha), am.D, 1 - 2 * am.alpha)
    assert c.status == "FAIL"


def test_u_statistic_unbiased_and_naive_estimator_biased():
    assert sa.check_u_statistic().status == "PASS"
    assert sa.check_u_statistic(n=4, dim=1).status == "PASS"
    naive = lambda xs: sum((sum(col) / len(xs)) ** 2 for col in zip(*xs))  # noqa: E731 ||mean||^2
    c = sa.check_u_statistic(naive)
    assert c.status == "FAIL" and c.countermodel["bias"] == pytest.approx(2 / 3)


def test_u_statistic_matches_numerics_implementation():
    """The sympy formula checked above is the one numerics computes (THEORY §8)."""
    torch = pytest.importorskip("torch")
    from numerics.estimators import u_statistic_sq_norm
    from tests._tolerances import TOL

    gen = torch.Generator().manual_seed(0)
    m, phi = torch.randn(5, 3, generator=gen, dtype=torch.float64), torch.randn(5, 2, generator=gen, dtype=torch.float64)
    xs = [[sp.Float(v) for v in (m[i, :, None] * phi[i, None, :]).flatten().tolist()] for i in range(5)]
    expected = float(sa.u_statistic(xs))
    assert u_statistic_sq_norm(m, phi) == pytest.approx(expected, rel=TOL["float64"]["rtol"], abs=TOL["float64"]["atol"])
