"""Tests for numerics.estimators (gradients, smoothness, Lipschitz, loss constants), THEORY §1-§3.

Each estimator is checked against an independent computation: a per-sample backward loop,
autograd gradients w.r.t. V, closed forms, finite differences, exact Jacobian SVDs.
"""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

import numerics.estimators as est
from numerics._numerics import per_sample_loss
from numerics.insertion import insert_block
from numerics.models import PostNormResCNN, PostNormResMLP
from tests._tolerances import TOL

F64 = torch.float64


T64 = TOL["float64"]


def _data(n=24, d_in=3, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d_in, generator=g, dtype=F64), torch.randint(0, n_cls, (n,), generator=g)


def test_public_names_exist():
    for name in est.__all__:
        assert callable(getattr(est, name)), name


@pytest.mark.parametrize("loss", ["cross_entropy", "squared"])
def test_activation_gradients_match_per_sample_backward_loop(loss):
    net = PostNormResMLP(3, 8, 3, 4, norm="layer", seed=2)
    x, y = _data()
    if loss == "squared":
        y = torch.randn(24, 4, dtype=F64)
    m = est.activation_gradients(net, x, y, [0, 1, 3], loss)
    for i in (0, 5, 23):
        for at in (0, 1, 3):
            u = net.bottom(x[i:i + 1], at).detach().requires_grad_(True)
            (g,) = torch.autograd.grad(per_sample_loss(net.top(u, at), y[i:i + 1], loss).sum(), u)
            torch.testing.assert_close(m[at][i], g[0], **T64)


def test_activation_gradients_cnn_flattened():
    net = PostNormResCNN(1, 4, 2, 3, image_size=5, groups=2)
    x, y = torch.randn(4, 1, 5, 5, dtype=F64), torch.tensor([0, 1, 2, 0])
    m = est.activation_gradients(net, x, y, 1)[1]
    u = net.bottom(x[2:3], 1).detach().requires_grad_(True)
    (g,) = torch.autograd.grad(per_sample_loss(net.top(u, 1), y[2:3], "cross_entropy").sum(), u)
    assert m.shape == (4, 100)
    torch.testing.assert_close(m[2], g.flatten(), **T64)


def test_expanded_model_gradient_equals_base_at_theta_zero():
    net = PostNormResMLP(3, 8, 2, 4)
    x, y = _data()
    new = insert_block(net, 1, "readout", 5)
    torch.testing.assert_close(est.activation_gradients(new, x, y, 1)[1],
                               est.activation_gradients(net, x, y, 1)[1], **T64)
    with pytest.raises(ValueError, match="insertion point 1"):
        est.activation_gradients(new, x, y, 2)


def test_soft_targets_give_the_conditional_mean_gradient():
    net = PostNormResMLP(3, 8, 2, 4)
    x, _ = _data(n=6)
    probs = torch.softmax(torch.randn(6, 4, dtype=F64), dim=1)
    m_bar = est.activation_gradients(net, x, probs, 2)[2]
    by_label = [est.activation_gradients(net, x, torch.full((6,), k), 2)[2] for k in range(4)]
    expected = sum(probs[:, k:k + 1] * by_label[k] for k in range(4))
    torch.testing.assert_close(m_bar, expected, **T64)


@pytest.mark.parametrize("family", ["readout", "full", "linear"])
def test_cross_gradient_is_the_autograd_gradient_in_V(family):
    """THEORY §1: grad_V g(0) = G = E[m phi^T] (and grad in U, b vanishes for full)."""
    net = PostNormResMLP(3, 8, 2, 4, seed=3)
    x, y = _data(n=40)
    new = insert_block(net, 1, family, 5)
    risk = per_sample_loss(new(x), y, "cross_entropy").mean()
    grads = torch.autograd.grad(risk, new.block_parameters())
    m = est.activation_gradients(net, x, y, 1)[1]
    G = est.cross_gradient(m, new.block.features(net.bottom(x, 1)))
    torch.testing.assert_close(G, grads[0], **T64)
    for g in grads[1:]:
        assert float(g.abs().max()) == 0.0


@settings(max_examples=30)
@given(n=st.integers(2, 12), d=st.integers(1, 5), r=st.integers(1, 5), seed=st.integers(0, 10**6))
def test_u_statistic_equals_naive_materialised_form(n, d, r, seed):
    g = torch.Generator().manual_seed(seed)
    m, phi = torch.randn(n, d, generator=g, dtype=F64), torch.randn(n, r, generator=g, dtype=F64)
    X = m[:, :, None] * phi[:, None, :]
    naive = sum(float((X[i] * X[j]).sum()) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    assert math.isclose(est.u_statistic_sq_norm(m, phi), naive, rel_tol=1e-9, abs_tol=1e-12)


def _signal_samples(n, reps, noise, seed):
    """m = a + noise, phi = c + noise (independent): G = a c^T exactly, ||G||^2 = ||a||^2 ||c||^2."""
    g = torch.Generator().manual_seed(seed)
    a, c = torch.tensor([0.3, -0.2, 0.1], dtype=F64), torch.tensor([0.5, 0.25], dtype=F64)
    m = a + noise * torch.randn(reps, n, 3, generator=g, dtype=F64)
    phi = c + noise * torch.randn(reps, n, 2, generator=g, dtype=F64)
    return m, phi, float(a.pow(2).sum() * c.pow(2).sum())


def _clt_consistent(values, truth, z=3.29):
    """Two-sided CLT test at 99.9% confidence (z_{0.9995} = 3.29) that E[values] == truth."""
    se = values.std(unbiased=True) / math.sqrt(len(values))
    return abs(float(values.mean()) - truth) <= z * float(se)


def test_u_statistic_is_unbiased_and_naive_plug_in_is_not():
    m, phi, truth = _signal_samples(n=10, reps=4000, noise=1.0, seed=11)
    u_stats = torch.tensor([est.u_statistic_sq_norm(m[k], phi[k]) for k in range(len(m))])
    plug_in = torch.tensor([float(est.cross_gradient(m[k], phi[k]).pow(2).sum()) for k in range(len(m))])
    assert _clt_consistent(u_stats, truth)
    assert not _clt_consistent(plug_in, truth)  # biased by tr Cov(X)/n: the test must reject it


def test_gradient_estimators_reject_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\(4, 2\) and \(3, 2\)"):
        est.cross_gradient(torch.ones(4, 2), torch.ones(3, 2))
    with pytest.raises(ValueError, match="n == 1"):
        est.u_statistic_sq_norm(torch.ones(1, 2), torch.ones(1, 2))


def _quadratic_setup():
    """at = D: f_top is the linear head, the squared loss is exactly quadratic in V."""
    net = PostNormResMLP(3, 6, 2, 2, seed=4)
    x = _data(n=60)[0]
    y = torch.randn(60, 2, dtype=F64, generator=torch.Generator().manual_seed(1))
    new = insert_block(net, 2, "readout", 4)
    u = net.bottom(x, 2)
    phi = new.block.features(u)
    G = est.cross_gradient(est.activation_gradients(net, x, y, 2, "squared")[2], phi)
    g_hat = G / G.norm()
    A = net.head.weight.detach()
    closed = float(2 * ((phi @ g_hat.T) @ A.T).pow(2).sum(dim=1).mean())
    return net, new, x, y, G, closed


def test_beta_equals_closed_form_curvature_for_quadratic_loss():
    net, new, x, y, G, closed = _quadratic_setup()
    report = est.smoothness_beta_report(new, x, y, G, "squared")
    assert report.self_consistent
    assert math.isclose(report.beta, closed, rel_tol=1e-8)


def test_theorem1_exact_for_quadratic_and_fails_with_underestimated_beta():
    net, new, x, y, G, closed = _quadratic_setup()
    beta = est.smoothness_beta(new, x, y, G, "squared")
    gain = est.delta_r(net, est.jumpboard(new, G, beta), x, y, "squared")
    bound = est.delta_r_lower_bound(G, beta)
    assert math.isclose(gain, bound, rel_tol=1e-7)  # equality for an exact quadratic
    # An underestimated beta (half) makes the claimed bound false: the check can fail.
    half = beta / 2
    assert est.delta_r(net, est.jumpboard(new, G, half), x, y, "squared") < est.delta_r_lower_bound(G, half)


@pytest.mark.parametrize("family", ["readout", "full"])
def test_theorem1_holds_for_cross_entropy(family):
    net = PostNormResMLP(3, 16, 2, 4, seed=5)
    x, y = _data(n=400, seed=3)
    new = insert_block(net, 1, family, 8)
    G = est.cross_gradient(est.activation_gradients(net, x, y, 1)[1], new.block.features(net.bottom(x, 1)))
    beta = est.smoothness_beta(new, x, y, G)
    assert est.delta_r(net, est.jumpboard(new, G, beta), x, y) >= est.delta_r_lower_bound(G, beta)


def test_curvature_matches_finite_differences():
    net = PostNormResMLP(3, 8, 2, 4, seed=6)
    x, y = _data(n=100)
    new = insert_block(net, 1, "readout", 5)
    G = est.cross_gradient(est.activation_gradients(net, x, y, 1)[1], new.block.features(net.bottom(x, 1)))
    report = est.smoothness_beta_report(new, x, y, G, max_iter=1)
    h = 1e-3 * float(G.norm())
    g_hat = G / G.norm()
    vals = [est.mean_loss(new.with_V(k * h * g_hat), x, y) for k in (-1, 0, 1)]
    fd = (vals[0] - 2 * vals[1] + vals[2]) / h**2
    assert math.isclose(report.curvature_at_zero, fd, rel_tol=1e-4)


def test_smoothness_rejects_zero_direction_and_jumpboard_bad_beta():
    net = PostNormResMLP(3, 8, 2, 4)
    new = insert_block(net, 1, "readout", 5)
    x, y = _data()
    with pytest.raises(ValueError, match="C1"):
        est.smoothness_beta(new, x, y, torch.zeros(8, 5, dtype=F64))
    with pytest.raises(ValueError, match="beta == -1"):
        est.jumpboard(new, torch.ones(8, 5, dtype=F64), -1)


def test_margins_are_differences_of_mean_losses():
    net = PostNormResMLP(3, 8, 2, 4)
    new = insert_block(net, 1, "readout", 5)
    jump = new.with_V(0.1 * torch.ones(8, 5, dtype=F64))
    x, y = _data()
    old_loss, jump_loss = est.mean_loss(net, x, y), est.mean_loss(jump, x, y)
    assert est.delta_test_r(net, jump, x, y) == pytest.approx(old_loss - jump_loss, rel=1e-12)
    assert est.delta_erm(jump, net, x, y) == pytest.approx(jump_loss - old_loss, rel=1e-12)


def _exact_top_jacobian_max(net, at, u):
    jac = torch.func.vmap(torch.func.jacrev(lambda v: net.top(v[None], at)[0]))(u)
    return float(torch.linalg.matrix_norm(jac.detach().reshape(u.shape[0], jac.shape[1], -1), 2).max())


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_empirical_lipschitz_matches_exact_jacobian_svd(norm):
    net = PostNormResMLP(3, 8, 2, 3, norm=norm, seed=7)
    u = net.bottom(_data(n=15)[0], 1).detach()
    exact = _exact_top_jacobian_max(net, 1, u)
    assert math.isclose(est.lipschitz_top_empirical(net, 1, u, iters=100), exact, rel_tol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: PostNormResMLP(3, 8, 3, 3, norm="rms", seed=8),
    lambda: PostNormResMLP(3, 8, 3, 3, norm="layer", seed=9, gain=1.5),
    lambda: PostNormResCNN(1, 4, 2, 3, image_size=4, groups=2, seed=1),
])
def test_certified_lipschitz_dominates_empirical(make):
    net = make()
    x = _data(n=20)[0] if isinstance(net, PostNormResMLP) else torch.randn(6, 1, 4, 4, dtype=F64)
    r_min = est.norm_diagnostics(net, x)["r_min"]
    for at in range(net.depth + 1):
        u = net.bottom(x, at).detach()
        emp = est.lipschitz_top_empirical(net, at, u)
        assert est.lipschitz_top_certified(net, at, r_min) >= emp * (1 - T64["rtol"])  # rounding only
        assert est.lipschitz_top_certified(net, at) >= est.lipschitz_top_certified(net, at, r_min)


def test_certified_lipschitz_refusals():
    net = PostNormResMLP(3, 8, 2, 3, eps_n=0.0)
    with pytest.raises(ValueError, match="eps_n == 0.0"):
        est.lipschitz_top_certified(net, 0)
    with pytest.raises(ValueError, match="length D \\+ 1 == 3"):
        est.lipschitz_top_certified(net, 0, [1.0])
    bn = PostNormResCNN(1, 4, 1, 3, image_size=4, norm="batch")
    with pytest.raises(ValueError, match="batch"):
        est.lipschitz_top_certified(bn, 0, 1.0)


def test_loss_constants_bound_every_observed_loss_and_gradient():
    net = PostNormResMLP(3, 8, 2, 4, seed=10, gain=2.0)
    x = _data(n=300)[0] * 50
    y = torch.randint(0, 4, (300,))
    B, L = est.loss_constants(net, "cross_entropy")
    logits = net(x).detach().requires_grad_(True)
    losses = per_sample_loss(logits, y, "cross_entropy")
    (grad,) = torch.autograd.grad(losses.sum(), logits)
    assert float(losses.detach().max()) <= B and float(grad.norm(dim=1).max()) <= L
    target = torch.randn(300, 4, dtype=F64)
    Y = float(target.norm(dim=1).max())
    B2, L2 = est.loss_constants(net, "squared", target_bound=Y)
    logits = net(x).detach().requires_grad_(True)
    losses = per_sample_loss(logits, target, "squared")
    (grad,) = torch.autograd.grad(losses.sum(), logits)
    assert float(losses.detach().max()) <= B2 and float(grad.norm(dim=1).max()) <= L2
    with pytest.raises(ValueError, match="target_bound"):
        est.loss_constants(net, "squared")
    with pytest.raises(ValueError, match="loss == 'hinge'"):
        est.loss_constants(net, "hinge")


def test_certified_lipschitz_counts_the_post_norm_of_an_expanded_model():
    net = PostNormResMLP(3, 8, 2, 3, seed=12)
    new = insert_block(net, 1, "readout", 4, post_norm=True).with_V(0.3 * torch.ones(8, 4, dtype=F64))
    x = _data(n=20)[0]
    u = net.bottom(x, 1).detach()
    emp = est.lipschitz_top_empirical(new, 1, u)
    assert est.lipschitz_top_certified(new, 1) >= emp
    assert est.lipschitz_top_certified(new, 1) > est.lipschitz_top_certified(net, 1)


def test_cnn_loss_constants_bound_observed_losses():
    net = PostNormResCNN(1, 4, 2, 3, image_size=5, groups=2, gain=1.5)
    x, y = 30 * torch.randn(50, 1, 5, 5, dtype=F64), torch.randint(0, 3, (50,))
    B, L = est.loss_constants(net, "cross_entropy")
    with torch.no_grad():
        assert float(per_sample_loss(net(x), y, "cross_entropy").max()) <= B


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_theorem1_holds_for_cross_entropy_many_seeds_large_sample(seed):
    """Heavy variant of test_theorem1_holds_for_cross_entropy (n = 4000, 5 seeds, deeper net)."""
    net = PostNormResMLP(5, 32, 4, 6, seed=seed, norm="layer")
    x, y = _data(n=4000, d_in=5, n_cls=6, seed=seed)
    new = insert_block(net, 2, "readout", 16, seed=seed)
    G = est.cross_gradient(est.activation_gradients(net, x, y, 2)[2], new.block.features(net.bottom(x, 2)))
    beta = est.smoothness_beta(new, x, y, G, n_grid=17)
    assert est.delta_r(net, est.jumpboard(new, G, beta), x, y) >= est.delta_r_lower_bound(G, beta)


def test_curvature_is_independent_of_chunking():
    from numerics.estimators._smoothness import _direction_curvature
    net = PostNormResMLP(3, 8, 2, 4, seed=13)
    x, y = _data(n=50)
    new = insert_block(net, 1, "readout", 5)
    G = torch.randn(8, 5, dtype=F64, generator=torch.Generator().manual_seed(0))
    whole = _direction_curvature(new, x, y, G, "cross_entropy")(0.7)
    chunked = _direction_curvature(new, x, y, G, "cross_entropy", chunk=7)(0.7)
    assert math.isclose(whole, chunked, rel_tol=1e-10)


@pytest.mark.parametrize("beta_floor", [0.0, -1.0, math.nan, math.inf])
def test_smoothness_beta_floor_is_validated(beta_floor):
    """``beta_floor`` starts ``beta`` (and divides the segment ``1 / beta``: 0 with ``curvature(0) <= 0``
    divided by zero): anything but a finite number > 0 is refused in one line; a positive one is accepted."""
    net, new, x, y, G, closed = _quadratic_setup()
    with pytest.raises(ValueError, match=rf"^beta_floor == {beta_floor!r}, must be a finite number > 0\.$"):
        est.smoothness_beta(new, x, y, G, "squared", beta_floor=beta_floor)
    assert est.smoothness_beta(new, x, y, G, "squared", beta_floor=10 * closed) == 10 * closed
