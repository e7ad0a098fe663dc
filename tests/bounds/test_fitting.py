"""Scaling-law fits (bounds.fitting): exactness on noiseless data, bootstrap coverage, bad input."""
import numpy as np
import pytest
from scipy import optimize, stats

from bounds.fitting import (
    bootstrap_indices,
    bootstrap_scaling_law,
    fit_scaling_law,
    huber,
)


@pytest.mark.parametrize("E, A, alpha", [(0.5, 2.0, 1.5), (1e-3, 0.2, 0.6), (0.02, 5.0, 2.5)])
def test_noiseless_fit_matches_curve_fit(E, A, alpha):
    """On exact data the Huber/log-space fit and least squares on y (curve_fit) agree."""
    x = np.array([1.0, 2, 3, 4, 6, 8, 12, 16, 24, 32])
    y = E + A * x**-alpha
    fit = fit_scaling_law(x, y)
    ref, _ = optimize.curve_fit(lambda t, e, a, al: e + a * t**-al, x, y, p0=[y.min() / 2, y.max(), 1.0],
                                maxfev=20000, xtol=1e-14, ftol=1e-14)
    np.testing.assert_allclose([fit.E, fit.A, fit.alpha], ref, rtol=1e-6)
    np.testing.assert_allclose([fit.E, fit.A, fit.alpha], [E, A, alpha], rtol=1e-6)
    assert fit.converged


def test_noiseless_pure_power_law_matches_curve_fit():
    x = np.arange(1.0, 9.0)
    y = 0.3 * x**-0.75
    fit = fit_scaling_law(x, y, offset=False)
    ref, _ = optimize.curve_fit(lambda t, a, al: a * t**-al, x, y, p0=[1.0, 1.0], xtol=1e-14, ftol=1e-14)
    np.testing.assert_allclose([fit.A, fit.alpha], ref, rtol=1e-7)
    assert fit.E == 0.0


def test_grid_of_starts_escapes_a_bad_basin():
    # a steep law (alpha = 4) far from the alpha = 1 start: only the grid finds it
    x = np.array([1.0, 1.5, 2, 3, 4, 6])
    fit = fit_scaling_law(x, 0.01 + 3.0 * x**-4.0)
    assert fit.alpha == pytest.approx(4.0, rel=1e-6)


def test_huber_is_quadratic_then_linear():
    r = np.array([-2.0, -1e-3, 0.0, 5e-4, 3.0])
    np.testing.assert_allclose(huber(r, 1e-3), [1e-3 * (2 - 5e-4), 5e-7, 0.0, 1.25e-7, 1e-3 * (3 - 5e-4)])


def test_robust_to_one_outlier():
    x = np.arange(1.0, 13.0)
    y = 0.1 + x**-1.0
    y[5] *= 3.0                                     # one corrupted cell
    assert fit_scaling_law(x, y).alpha == pytest.approx(1.0, abs=0.05)


def _coverage(offset, confidence, n_boot, draws=100, alpha=1.2, sigma=0.05):
    """How many of ``draws`` synthetic curves have their interval covering ``alpha``, and
    how many would with the interval shrunk by half around the estimate (a wrong variant)."""
    x = np.repeat(np.arange(1.0, 13.0), 2)          # 12 depths x 2 seeds
    rng = np.random.default_rng(123)
    hits = shrunk = 0
    for d in range(draws):
        y = ((0.05 if offset else 0.0) + 0.5 * x**-alpha) * np.exp(rng.normal(0.0, sigma, x.size))
        bf = bootstrap_scaling_law(x, y, offset=offset, n_boot=n_boot, seed=d, confidence=confidence)
        c, (lo, hi) = bf.fit.alpha, bf.alpha_interval
        hits += lo <= alpha <= hi
        shrunk += (c + 0.5 * (lo - c)) <= alpha <= (c + 0.5 * (hi - c))
    return hits, shrunk


def _cp(hits, draws, level=0.99):
    """Two-sided Clopper-Pearson interval of a binomial rate at ``level``."""
    ci = stats.binomtest(hits, draws).proportion_ci(confidence_level=level, method="exact")
    return ci.low, ci.high


def test_bootstrap_coverage_light():
    """100 draws (pure power law, 80% intervals, 50 resamples): the 99% Clopper-Pearson
    interval of the coverage contains 0.8; intervals shrunk by half are flagged (power)."""
    hits, bad = _coverage(offset=False, confidence=0.8, n_boot=50)
    lo, hi = _cp(hits, 100)
    assert lo <= 0.8 <= hi, hits
    assert _cp(bad, 100)[1] < 0.8, bad


@pytest.mark.slow
def test_bootstrap_coverage_with_offset_95():
    """Same with the offset E fitted, 95% intervals, 400 resamples (~1-2 min)."""
    hits, bad = _coverage(offset=True, confidence=0.95, n_boot=400)
    lo, hi = _cp(hits, 100)
    assert lo <= 0.95 <= hi, hits
    assert _cp(bad, 100)[1] < 0.95, bad


def test_bootstrap_indices_pairs_keep_three_distinct_x():
    x = np.array([1.0, 2.0, 3.0])
    idx = bootstrap_indices(x, 200, seed=1)
    assert all(np.unique(x[row]).size == 3 for row in idx)   # redrawn until fittable
    assert not np.array_equal(bootstrap_indices(x, 5, 1), bootstrap_indices(x, 5, 2))


@pytest.mark.parametrize("x, y, match", [
    ([1, 2], [1, 2], "at least 3 distinct"),
    ([1, 1, 1, 2], [1, 2, 3, 4], "at least 3 distinct"),
    ([1, 2, 3], [1, -2, 3], "> 0"),
    ([1, 2, 3], [1, 2], "same length"),
    ([0, 2, 3], [1, 2, 3], "> 0"),
])
def test_bad_data_rejected(x, y, match):
    with pytest.raises(ValueError, match=match):
        fit_scaling_law(x, y)


@pytest.mark.parametrize("kw, match", [({"n_boot": 5}, "n_boot == 5"), ({"confidence": 1.0}, "confidence == 1.0")])
def test_bad_bootstrap_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_scaling_law([1, 2, 3, 4], [4, 3, 2, 1], **kw)
