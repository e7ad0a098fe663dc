"""Statistics of the validity study against independent implementations (scipy), and their power."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy.stats import binom, binomtest

from numerics.studies.validity._stats import clopper_pearson, exceedance_p_value, rate_entry


@given(st.integers(1, 300).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.01, 0.05, 0.1]))
def test_clopper_pearson_matches_scipy(kn, level):
    k, n = kn
    ci = binomtest(k, n).proportion_ci(confidence_level=1 - level, method="exact")
    assert clopper_pearson(k, n, level) == pytest.approx((ci.low, ci.high), abs=1e-10)


@given(st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.floats(1e-4, 0.9))
def test_equal_probabilities_give_the_binomial_test(kn, p):
    k, n = kn
    assert exceedance_p_value(k, [p] * n) == pytest.approx(binom.sf(k - 1, n, p), rel=1e-9, abs=1e-14)


def test_unequal_probabilities_against_monte_carlo():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 0.2, size=30)
    draws = (rng.random((200_000, 30)) < p).sum(axis=1)
    for k in (2, 4, 7):
        mc = float(np.mean(draws >= k))
        assert exceedance_p_value(k, p) == pytest.approx(mc, abs=4 * np.sqrt(mc * (1 - mc) / 200_000) + 1e-4)


def test_the_test_has_its_level_and_power():
    # under a true rate equal to the stated one the test rejects at most ~level of the time;
    # at 3x the stated rate with 200 draws it rejects most of the time
    rng = np.random.default_rng(1)
    stated, n, level = 0.02, 200, 0.05
    null = [rate_entry(rng.random(n) < stated, [stated] * n, level)["significant"] for _ in range(800)]
    alt = [rate_entry(rng.random(n) < 3 * stated, [stated] * n, level)["significant"] for _ in range(300)]
    lo, hi = clopper_pearson(int(np.sum(null)), len(null), 0.01)
    assert lo <= level                      # size (discrete test: conservative)
    assert np.mean(alt) > 0.8               # power


def test_weakened_uniform_flags_only_beyond_the_truth_error():
    """A weakened sup-guarantee whose threshold sits inside the check sample's error cannot be
    flagged by that error; the true one is still counted at its threshold (conservative)."""
    from numerics.studies.validity._power import _uniform

    rec = {"values": {"eps_M": 0.01, "delta": 0.02}, "truth": {"moment_error": 2e-4},
           "deviations": {"E_S": {"sup": 3e-4}}}
    weak, true = _uniform("E_S", "eps_M", "delta", 0.01), _uniform("E_S", "eps_M", "delta", 1.0)
    assert weak(rec) == (False, 0.02)                                   # 3e-4 <= 1e-4 + 2e-4
    rec["deviations"]["E_S"]["sup"] = 3.5e-4
    assert weak(rec) == (True, 0.02)                                    # beyond threshold + error
    rec["deviations"]["E_S"]["sup"] = 0.0100001
    assert true(rec) == (True, 0.02)                                    # no margin for a true guarantee


def test_holm_step_down_against_hand_computed_thresholds():
    from numerics.studies.validity._summary import holm_family

    # m = 4 at level 0.05: thresholds 0.0125, 0.0167, 0.025, 0.05 in p order
    out = holm_family({"a": 0.01, "b": 0.015, "c": 0.03, "d": 0.2, "e": None}, 0.05)
    assert out["tests"] == 4 and out["rejected"] == ["a", "b"] and out["significant"]
    assert holm_family({"a": 0.013, "b": 0.001}, 0.05)["rejected"] == ["b", "a"]      # 0.001 <= .025, .013 <= .05
    assert not holm_family({"a": 0.02, "b": 0.03, "c": 0.04}, 0.05)["significant"]     # 0.02 > 0.0167: stop
