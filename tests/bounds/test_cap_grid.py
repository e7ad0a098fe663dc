"""A post-hoc cap grid (``n_grid > 1``) and Paper A's population route (THEORY §4-§5).

Theorem 2's Hoeffding tails at ``t = Delta_R/4`` pay no grid: they hold given ``S`` (``f_new``
and ``Delta_R`` of a cap chosen with ``S`` are fixed given ``S``). Paying ``n_grid`` copies would
not rescue a cap chosen with ``T`` (the threshold itself depends on the cap), so the toolkit's
rule is: the cap is chosen with ``S``. The checker says so (a FINDING), ``depthcert bounds``
says so, and a simulation shows the rule is needed: the same statement fails significantly
more often than stated once the cap is chosen with ``T``.
"""
import math

import numpy as np

from bounds.routes import Setup, evaluate_routes
from tests.bounds._toy_world import clopper_pearson


def _tail_p_value(k: int, n: int, p: float) -> float:
    from scipy.stats import binom

    return float(binom.sf(k - 1, n, p))


def test_hoeffding_tail_holds_for_a_cap_chosen_with_S_and_fails_for_one_chosen_with_T():
    rng = np.random.default_rng(3)
    draws, caps, K, risk = 4000, 64, 200, 0.3
    stated = 0.05
    t = math.sqrt(math.log(1 / stated) / (2 * K))            # exp(-2 K t^2 / B^2) = stated, B = 1
    deviation = rng.binomial(K, risk, size=(draws, caps)) / K - risk   # L_test(f_new^c) - R(f_new^c), losses in {0, 1}
    with_S = deviation[np.arange(draws), rng.integers(0, caps, draws)] > t   # the cap does not look at T
    with_T = deviation.max(axis=1) > t                                         # the cap that looks worst on T
    assert _tail_p_value(int(with_S.sum()), draws, stated) > 0.05              # not above the stated rate
    assert clopper_pearson(int(with_S.sum()), draws, 0.05)[0] <= stated
    assert _tail_p_value(int(with_T.sum()), draws, stated) < 1e-6               # flagged


def test_bounds_says_the_cap_must_be_chosen_with_S():
    st = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5, delta=0.05,
               delta_prime=0.05, B=4.2, L_loss=2**0.5, block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4), n_grid=4)
    notes = evaluate_routes(st, 0.1).notes
    assert any("chosen with S" in n and "never with T" in n for n in notes)
    one = evaluate_routes(Setup(**{**st.__dict__, "n_grid": 1}), 0.1).notes
    assert not any("never with T" in n for n in one)
