"""Tests for numerics.insertion: bitwise function preservation, V handling, post-norm report (THEORY §1)."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from numerics.insertion import insert_block, post_norm_function_preserving, post_norm_report
from numerics.models import PostNormResCNN, PostNormResMLP

F64 = torch.float64




@settings(max_examples=20)
@given(family=st.sampled_from(["readout", "full", "linear"]), at=st.integers(0, 3),
       width=st.integers(1, 12), seed=st.integers(0, 1000), norm=st.sampled_from(["rms", "layer"]))
def test_insertion_is_bitwise_function_preserving(family, at, width, seed, norm):
    net = PostNormResMLP(4, 8, 3, 5, norm=norm, seed=seed)
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(seed), dtype=F64)
    with torch.no_grad():
        assert torch.equal(insert_block(net, at, family, width, seed=seed)(x), net(x))


@pytest.mark.parametrize("family", ["readout", "full", "linear"])
def test_cnn_insertion_is_bitwise_function_preserving(family):
    net = PostNormResCNN(1, 4, 2, 3, image_size=5, groups=2)
    x = torch.randn(3, 1, 5, 5, dtype=F64)
    for at in range(3):
        assert torch.equal(insert_block(net, at, family, 6)(x), net(x))


def test_block_parameters_by_family():
    net = PostNormResMLP(4, 8, 2, 5)
    shapes = {f: [tuple(p.shape) for p in insert_block(net, 1, f, 3).block_parameters()]
              for f in ("readout", "full", "linear")}
    assert shapes == {"readout": [(8, 3)], "full": [(8, 3), (3, 8), (3,)], "linear": [(8, 8)]}
    assert not any(p.requires_grad for p in net.parameters())  # base frozen


def test_with_V_changes_the_function_and_not_the_original():
    net = PostNormResMLP(4, 8, 2, 5)
    new = insert_block(net, 1, "readout", 3)
    x = torch.randn(6, 4, dtype=F64)
    moved = new.with_V(torch.ones(8, 3, dtype=F64))
    with torch.no_grad():
        assert not torch.equal(moved(x), net(x))
        assert torch.equal(new(x), net(x)) and float(new.block.V.abs().max()) == 0.0
        u = net.bottom(x, 1)
        expected = net.top(u + new.block.features(u) @ torch.ones(3, 8, dtype=F64), 1)
        assert torch.equal(moved(x), expected)
    assert moved.base is net
    with pytest.raises(ValueError, match=r"expected V of shape \(8, 3\), got \(3, 8\)"):
        new.with_V(torch.ones(3, 8, dtype=F64))


def test_readout_features_are_frozen_and_full_are_trained():
    net = PostNormResMLP(4, 8, 2, 5)
    readout, full = insert_block(net, 1, "readout", 3), insert_block(net, 1, "full", 3)
    assert not readout.block.U.requires_grad and full.block.U.requires_grad


@pytest.mark.parametrize("kw, match", [(dict(family="conv"), "family"), (dict(width=0), "width"),
                                       (dict(at=9), "at == 9")])
def test_insert_block_rejects_bad_input(kw, match):
    args = dict(at=1, family="readout", width=3)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        insert_block(PostNormResMLP(4, 8, 2, 5), **args)


def test_post_norm_report_true_only_for_idempotent_norm():
    x = torch.randn(32, 4, dtype=F64)
    exact = PostNormResMLP(4, 8, 2, 5, eps_n=0.0)
    rep = post_norm_report(exact, 1, x)
    assert rep["function_preserving"] and rep["max_abs_output_change"] < 1e-12
    for kw in (dict(eps_n=1e-2), dict(eps_n=0.0, gain=2.0)):
        net = PostNormResMLP(4, 8, 2, 5, **kw)
        rep = post_norm_report(net, 1, x)
        assert not rep["function_preserving"] and rep["max_abs_output_change"] > 1e-6
    assert not post_norm_function_preserving(PostNormResMLP(4, 8, 2, 5, eps_n=1e-5), 2)


def test_post_norm_insertion_changes_output_when_not_idempotent():
    net = PostNormResMLP(4, 8, 2, 5, eps_n=0.0, gain=0.5)
    new = insert_block(net, 1, "readout", 3, post_norm=True)
    x = torch.randn(8, 4, dtype=F64)
    with torch.no_grad():
        assert float((new(x) - net(x)).abs().max()) > 1e-3


def test_post_norm_function_preserving_accepts_an_expanded_model():
    exact = PostNormResMLP(4, 8, 2, 5, eps_n=0.0)
    assert post_norm_function_preserving(insert_block(exact, 2, "readout", 3, post_norm=True))
    assert not post_norm_function_preserving(insert_block(PostNormResMLP(4, 8, 2, 5), 2, "readout", 3))
    with pytest.raises(ValueError, match="at == None"):
        post_norm_function_preserving(exact)
