"""Tests for numerics.models: the split, norm bounds against autograd, refusals (THEORY §1-§2)."""
import math

import pytest
import torch
from hypothesis import given, settings, strategies as st

from numerics.models import PostNorm, PostNormResCNN, PostNormResMLP, check_per_sample
from tests._tolerances import TOL

F64 = torch.float64




def _x(n=7, d=3, seed=0, scale=1.0):
    return scale * torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_mlp_split_is_bitwise_the_forward(norm):
    net = PostNormResMLP(3, 8, 3, 4, norm=norm, seed=1)
    x = _x()
    for at in range(4):
        assert torch.equal(net.top(net.bottom(x, at), at), net(x))


def test_cnn_split_and_shapes():
    net = PostNormResCNN(1, 4, 2, 3, image_size=6, groups=2)
    x = torch.randn(2, 1, 6, 6, dtype=F64)
    assert net.bottom(x, 1).shape == (2, 4, 6, 6)
    for at in range(3):
        assert torch.equal(net.top(net.bottom(x, at), at), net(x))


def test_seed_determines_parameters():
    a, b, c = (PostNormResMLP(3, 8, 2, 4, seed=s) for s in (5, 5, 6))
    x = _x()
    assert torch.equal(a(x), b(x)) and not torch.equal(a(x), c(x))


def test_forward_collect_states_match_bottom():
    net = PostNormResMLP(3, 8, 3, 4, norm="layer")
    x = _x()
    logits, states = net.forward_collect(x, [0, 2, 3])
    assert torch.equal(logits, net(x))
    for at, z in states.items():
        assert torch.equal(z, net.bottom(x, at))


@pytest.mark.parametrize("kw, key", [
    (dict(norm="batch"), "norm"), (dict(eps_n=-1.0), "eps_n"), (dict(width=0), "width")])
def test_mlp_rejects_bad_arguments(kw, key):
    args = dict(d_in=3, width=8, depth=2, n_out=4)
    args.update(kw)
    with pytest.raises(ValueError, match=key):
        PostNormResMLP(**args)


def test_bad_insertion_point_rejected():
    with pytest.raises(ValueError, match=r"at == 5, must be an int in \[0, 2\]"):
        PostNormResMLP(3, 8, 2, 4).bottom(_x(), 5)


def test_batch_norm_is_refused_for_per_sample_quantities():
    net = PostNormResCNN(1, 4, 1, 3, image_size=5, norm="batch")
    net(torch.randn(4, 1, 5, 5, dtype=F64))  # training use is allowed
    with pytest.raises(ValueError, match="batch-norm couples samples"):
        check_per_sample(net)
    check_per_sample(PostNormResCNN(1, 4, 1, 3, image_size=5, norm="group", groups=2))


@pytest.mark.parametrize("norm", ["rms", "layer"])
def test_state_norms_never_exceed_rho(norm):
    net = PostNormResMLP(3, 16, 2, 4, norm=norm, gain=1.7)
    with torch.no_grad():
        net.norms[0].gamma.uniform_(-2, 2)
        if net.norms[0].beta is not None:
            net.norms[0].beta.uniform_(-1, 1)
        for at in range(3):
            z = net.bottom(_x(50, scale=10.0), at)
            assert float(z.norm(dim=1).max()) <= net.rho(at) * (1 + TOL["float64"]["rtol"])


def _jacobian_norm(norm, x):
    jac = torch.autograd.functional.jacobian(lambda v: norm(v[None])[0], x)
    return float(torch.linalg.matrix_norm(jac.reshape(x.numel(), x.numel()), 2))


@settings(max_examples=25)
@given(kind=st.sampled_from(["rms", "layer"]), log_scale=st.floats(-4, 2), seed=st.integers(0, 10**6),
       eps=st.sampled_from([0.0, 1e-5, 1e-2]))
def test_norm_lipschitz_bound_dominates_autograd_jacobian(kind, log_scale, seed, eps):
    """Claimed constant ||gamma||_inf / sqrt(s^2 + eps) >= ||J_N(x)||_2 at every x."""
    norm = PostNorm(6, kind, eps, 1.0).to(F64)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        norm.gamma.copy_(torch.randn(6, generator=gen, dtype=F64))
    x = torch.randn(6, generator=gen, dtype=F64) * 10**log_scale
    scale = float(norm.pre_norm_scale(x[None]))
    assert _jacobian_norm(norm, x) <= norm.lipschitz_bound(scale) * (1 + 1e-9)


def test_group_norm_lipschitz_bound_dominates_autograd_jacobian():
    norm = PostNorm(4, "group", 1e-5, 1.3, groups=2).to(F64)
    x = torch.randn(4, 3, 3, dtype=F64)
    x[:2] *= 1e-2  # one small group: its scale sets the bound
    scale = float(norm.pre_norm_scale(x[None]))
    assert _jacobian_norm(norm, x) <= norm.lipschitz_bound(scale) * (1 + 1e-9)


def test_norm_bound_is_tight_enough_to_fail_when_misstated():
    """A constant without the 1/scale factor (||gamma||_inf) is violated at small inputs."""
    norm = PostNorm(6, "rms", 1e-8, 1.0).to(F64)
    x = torch.randn(6, dtype=F64) * 1e-2
    assert _jacobian_norm(norm, x) > 1.0  # the mis-stated constant 1 would be wrong here


def test_eps_route_requires_positive_eps():
    with pytest.raises(ValueError, match="eps_n == 0.0, must be > 0"):
        PostNorm(4, "rms", 0.0, 1.0).lipschitz_bound(None)


def test_cnn_conv_bound_dominates_exact_operator_norm():
    net = PostNormResCNN(2, 3, 1, 2, image_size=4, groups=1)
    conv = net.branches[0][0]
    n_in = 3 * 4 * 4
    jac = torch.autograd.functional.jacobian(
        lambda v: torch.nn.functional.conv2d(v.reshape(1, 3, 4, 4), conv.weight, None, padding=1).flatten(),
        torch.zeros(n_in, dtype=F64))
    exact = float(torch.linalg.matrix_norm(jac, 2))
    from numerics.models import _conv_bound
    assert exact <= _conv_bound(conv.weight) * (1 + 1e-12)


def test_cnn_head_bound_matches_pooling():
    net = PostNormResCNN(1, 4, 0, 3, image_size=4, groups=2)
    expected = float(torch.linalg.matrix_norm(net.head.weight.detach(), 2)) / 4.0
    assert math.isclose(net.head_lipschitz_bound(), expected, **{"rel_tol": TOL["float64"]["rtol"]})


def test_construction_leaves_the_global_rng_untouched():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    PostNormResMLP(3, 8, 2, 4, seed=9)
    assert torch.equal(torch.rand(3), expected)
