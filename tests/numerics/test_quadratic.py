"""Exact readout-at-top risks and the trust-region supremum, against independent computations."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from scipy.optimize import minimize

from numerics.estimators import MomentAccumulator, ReadoutMoments, risk_from_moments, sup_deviation, trust_region_max


def _objective(h, g):
    return lambda x: float(np.sum(h * x * x) + 2 * np.sum(g * x))


def _scipy_max(H, g, radius, restarts, rng):
    """Independent: SLSQP on the dense quadratic from many random starts in the ball."""
    f = lambda x: -(x @ H @ x + 2 * g @ x)   # noqa: E731
    jac = lambda x: -(2 * H @ x + 2 * g)     # noqa: E731
    cons = [{"type": "ineq", "fun": lambda x: radius**2 - x @ x, "jac": lambda x: -2 * x}]
    best = -math.inf
    for _ in range(restarts):
        x0 = rng.normal(size=g.size)
        x0 *= radius * rng.uniform() ** (1 / g.size) / np.linalg.norm(x0)
        res = minimize(f, x0, jac=jac, constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
        x = res.x * min(1.0, radius / np.linalg.norm(res.x))   # back into the ball (SLSQP may overshoot)
        best = max(best, -f(x))
    return best


def test_hard_case_hand_derived():
    # min -x1^2 + 2 x2^2 + 2 x2 on the unit disk: b = (0, 1) is orthogonal to the eigenvector of
    # p_min = -1, lambda = 1, x2 = -1/3, x1 = +-sqrt(8/9): q = -8/9 + 2/9 - 2/3 = -4/3.
    value, x = trust_region_max(np.array([1.0, -2.0]), np.array([0.0, -1.0]), 1.0)
    assert value == pytest.approx(4 / 3, rel=1e-13)
    assert x[1] == pytest.approx(-1 / 3, rel=1e-12) and abs(x[0]) == pytest.approx(math.sqrt(8 / 9), rel=1e-12)


def test_interior_and_zero_radius():
    # concave h < 0: the unconstrained maximiser x = -g/h lies inside
    value, x = trust_region_max(np.array([-2.0, -1.0]), np.array([0.2, -0.1]), 1.0)
    np.testing.assert_allclose(x, [0.1, -0.1], rtol=1e-13)
    assert value == pytest.approx(0.02 + 0.01, rel=1e-12)
    assert trust_region_max(np.array([1.0]), np.array([1.0]), 0.0)[0] == 0.0


@given(st.integers(1, 2), st.integers(0, 2**31 - 1))
@settings(max_examples=25)
def test_matches_brute_force_on_the_disk(dim, seed):
    rng = np.random.default_rng(seed)
    h, g, radius = rng.normal(size=dim), rng.normal(size=dim) * rng.choice([0.0, 1e-3, 1.0], size=dim), rng.uniform(0.1, 3)
    value, x = trust_region_max(h, g, radius)
    f = _objective(h, g)
    assert np.linalg.norm(x) <= radius * (1 + 1e-12) and f(x) == pytest.approx(value, rel=1e-10, abs=1e-12)
    if dim == 1:
        grid = np.linspace(-radius, radius, 20001)[:, None]
    else:
        r, t = np.meshgrid(np.linspace(0, radius, 401), np.linspace(0, 2 * np.pi, 1601))
        grid = np.stack([(r * np.cos(t)).ravel(), (r * np.sin(t)).ravel()], axis=1)
    brute = float(np.max(grid**2 @ h + 2 * grid @ g))
    assert brute <= value + 1e-12 * (1 + abs(value))
    assert value - brute <= 1e-4 * (1 + abs(value))          # the grid gets close to the exact maximum


@pytest.mark.parametrize("seed", range(6))
def test_matches_scipy_with_restarts_in_a_rotated_basis(seed):
    rng = np.random.default_rng(seed)
    n = 5
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    eig = rng.normal(size=n)
    if seed % 2:                                 # hard case: g orthogonal to the top eigenvector
        eig[0] = eig.max() + 1.0
    H = Q @ np.diag(eig) @ Q.T
    g_t = rng.normal(size=n) * 0.1
    if seed % 2:
        g_t[0] = 0.0
    g = Q @ g_t
    value, x_t = trust_region_max(eig, g_t, 1.0)
    x = Q @ x_t
    assert x @ H @ x + 2 * g @ x == pytest.approx(value, rel=1e-10)
    best = _scipy_max(H, g, 1.0, 40, rng)
    assert best <= value + 1e-9 and best >= value - 1e-6


def _moments(a, phi, extra=0.0):
    acc = MomentAccumulator(a.shape[1], phi.shape[1])
    for i in range(0, a.shape[0], 7):
        acc.add(a[i:i + 7], phi[i:i + 7], extra)
    return acc.result()


def test_risk_from_moments_is_the_mean_loss():
    g = torch.Generator().manual_seed(0)
    n, d, r, k = 50, 4, 3, 2
    u, phi = torch.randn(n, d, generator=g, dtype=torch.float64), torch.rand(n, r, generator=g, dtype=torch.float64)
    y, A, c = (torch.randn(n, k, generator=g, dtype=torch.float64), torch.randn(k, d, generator=g, dtype=torch.float64),
               torch.randn(k, generator=g, dtype=torch.float64))
    V = torch.randn(d, r, generator=g, dtype=torch.float64)
    direct = ((((u + phi @ V.T) @ A.T + c) - y) ** 2).sum(1).mean()
    mom = _moments(u @ A.T + c - y, phi)
    assert risk_from_moments(mom, A, V) == pytest.approx(float(direct), rel=1e-12)


@pytest.mark.parametrize("seed,k", [(0, 1), (1, 1), (2, 3)])
def test_sup_deviation_against_dense_solver_and_random_points(seed, k):
    g = torch.Generator().manual_seed(seed)
    d, r, n = 3, 4, 40
    A = torch.randn(k, d, generator=g, dtype=torch.float64)

    def sample(n_rows):
        u, phi = torch.randn(n_rows, d, generator=g, dtype=torch.float64), torch.rand(n_rows, r, generator=g, dtype=torch.float64)
        return _moments(u @ A.T - torch.randn(n_rows, k, generator=g, dtype=torch.float64), phi)

    pop, smp = sample(5000), sample(n)
    nu = 0.7
    out = sup_deviation(pop, smp, A, nu)
    dev = lambda V: risk_from_moments(pop, A, V) - risk_from_moments(smp, A, V)  # noqa: E731
    assert abs(dev(out["V"])) == pytest.approx(out["sup"], rel=1e-9)
    assert np.linalg.norm(out["V"]) <= nu * (1 + 1e-12)
    # dense, independent: vec(V) (column-major) with H = Delta ⊗ A^T A, then SLSQP with restarts
    An = A.numpy()
    H = np.kron(pop.Sigma - smp.Sigma, An.T @ An)
    gv = (An.T @ (pop.C - smp.C)).ravel(order="F")
    rng = np.random.default_rng(seed)
    best_up = _scipy_max(H, gv, nu, 30, rng) + pop.m0 - smp.m0
    best_down = _scipy_max(-H, -gv, nu, 30, rng) - pop.m0 + smp.m0
    assert max(best_up, best_down) == pytest.approx(out["sup"], rel=1e-6)
    pts = rng.normal(size=(2000, d, r))
    pts *= nu * rng.uniform(size=(2000, 1, 1)) ** (1 / (d * r)) / np.linalg.norm(pts, axis=(1, 2), keepdims=True)
    AV = np.einsum("kd,ndr->nkr", An, pts)                     # all random points at once
    devs = (pop.m0 - smp.m0 + 2 * np.einsum("dr,ndr->n", An.T @ (pop.C - smp.C), pts)
            + np.einsum("nkr,rs,nks->n", AV, pop.Sigma - smp.Sigma, AV))
    assert float(np.abs(devs).max()) <= out["sup"] * (1 + 1e-12)
    assert devs[0] == pytest.approx(dev(pts[0]), rel=1e-10)


def test_moment_accumulator_validates():
    acc = MomentAccumulator(1, 2)
    with pytest.raises(ValueError, match="expected a"):
        acc.add(torch.zeros(3, 1), torch.zeros(4, 2))
    with pytest.raises(ValueError, match="no rows"):
        acc.result()
    with pytest.raises(ValueError, match="radius == -1"):
        trust_region_max(np.ones(2), np.ones(2), -1.0)
    assert isinstance(ReadoutMoments(1, 0.0, np.zeros((1, 1)), np.zeros((1, 1))).m0, float)
