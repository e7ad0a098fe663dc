"""Coverage of the empirical-Bernstein lower bound, with power: wrong variants are caught.

Each bound is applied to many independent samples of a known distribution; the failure
rate (bound above the true mean) is tested against the level 0.05 with a one-sided exact
binomial test (scipy) at test level 0.01. The true bound must pass in every setting; each
wrong variant -- the variance term dropped, the range term dropped, a plain 1.645
standard-error bound -- must be rejected in at least one setting.
"""
import math

import numpy as np
import pytest
from scipy.stats import binomtest

from bounds.confidence import empirical_bernstein_lower

LEVEL, TEST_LEVEL, REPS = 0.05, 0.01, 3000


def _no_variance(mean, var, n, R, level):
    return mean - 7 * R * math.log(2 / level) / (3 * (n - 1))


def _no_range(mean, var, n, R, level):
    return mean - np.sqrt(2 * var * math.log(2 / level) / n)


def _normal(mean, var, n, R, level):
    return mean - 1.645 * np.sqrt(var / n)


def _symmetric(rng, n):
    """Z = +-1 with equal probability: mean 0, range 2 (large variance: the variance term matters)."""
    return rng.choice([-1.0, 1.0], size=(REPS, n)), 0.0, 2.0


def _rare_loss(rng, n):
    """Z = -1 with probability 1/n, else 0: mean -1/n, range 1 (often no -1 is seen: the range term matters)."""
    return -(rng.random((REPS, n)) < 1 / n).astype(float), -1 / n, 1.0


SETTINGS = {"symmetric": (_symmetric, 200), "rare_loss": (_rare_loss, 100)}


def _rejected(bound, setting, seed=0) -> bool:
    gen, n = SETTINGS[setting]
    z, true_mean, R = gen(np.random.default_rng(seed), n)
    lows = bound(z.mean(1), z.var(1, ddof=1), n, R, LEVEL)
    fails = int(np.sum(lows > true_mean))
    return binomtest(fails, REPS, LEVEL, alternative="greater").pvalue < TEST_LEVEL


@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_empirical_bernstein_covers(setting):
    assert not _rejected(empirical_bernstein_lower, setting)


@pytest.mark.parametrize("variant", [_no_variance, _no_range, _normal], ids=lambda f: f.__name__)
def test_wrong_variants_are_caught(variant):
    assert any(_rejected(variant, setting) for setting in SETTINGS), variant.__name__
