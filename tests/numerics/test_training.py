"""Tests for numerics.training: determinism, divergence, caps, optimisers, (C2) fallback."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from numerics.training import (
    DivergenceError,
    empirical_risk,
    project_to_caps,
    train,
    train_block_with_fallback,
)
from tests._tolerances import TOL


def _linear_problem(n=256, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    w_true = torch.randn(d, 1, generator=g, dtype=torch.float64)
    y = x @ w_true + 0.01 * torch.randn(n, 1, generator=g, dtype=torch.float64)
    return x, y, w_true


def _fresh_linear(d=5):
    w = torch.zeros(d, 1, dtype=torch.float64, requires_grad=True)
    return w, (lambda x: x @ w)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_same_seed_identical_tensors(optimizer):
    x, y, _ = _linear_problem()
    outs = []
    for _ in range(2):
        w, model = _fresh_linear()
        res = train(model, {"w": w}, x, y, optimizer=optimizer, lr=0.01, steps=30, batch_size=32, seed=7)
        outs.append(res)
    assert torch.equal(outs[0].params["w"], outs[1].params["w"])
    assert np.array_equal(outs[0].losses, outs[1].losses)


def test_different_seed_different_batches():
    x, y, _ = _linear_problem()
    res = []
    for seed in (1, 2):
        w, model = _fresh_linear()
        res.append(train(model, [w], x, y, optimizer="sgd", lr=0.01, steps=10, batch_size=16, seed=seed))
    assert not torch.equal(res[0].params["0"], res[1].params["0"])


@pytest.mark.parametrize("optimizer,lr", [("sgd", 0.1), ("momentum", 0.02), ("adam", 0.05)])
def test_optimisers_reach_least_squares(optimizer, lr):
    x, y, _ = _linear_problem()
    w, model = _fresh_linear()
    res = train(model, {"w": w}, x, y, optimizer=optimizer, lr=lr, steps=800, loss="squared")
    w_ls = torch.linalg.lstsq(x, y).solution
    r_ls = empirical_risk(lambda z: z @ w_ls, x, y, "squared")
    assert res.final_loss <= r_ls * (1 + 1e-3) + 1e-8
    np.testing.assert_allclose(res.final_loss, empirical_risk(model, x, y, "squared"), **TOL["float64"])


def test_divergence_names_step():
    x, y, _ = _linear_problem()
    w, model = _fresh_linear()
    with pytest.raises(DivergenceError, match=r"loss became (nan|inf) at step \d+ \(lr=1e\+06\)") as info:
        train(model, {"w": w}, x * 1e3, y, optimizer="sgd", lr=1e6, steps=50)
    assert 0 < info.value.step < 50


def test_nan_input_diverges_at_step_0():
    x, y, _ = _linear_problem()
    x[3, 0] = math.nan
    w, model = _fresh_linear()
    with pytest.raises(DivergenceError, match="at step 0"):
        train(model, {"w": w}, x, y, optimizer="adam", lr=0.1, steps=5)


def test_only_given_params_are_updated():
    x, y, _ = _linear_problem()
    lin = nn.Linear(5, 1).double()
    frozen_before = lin.bias.detach().clone()
    train(lin, {"weight": lin.weight}, x, y, optimizer="adam", lr=0.1, steps=20)
    assert torch.equal(lin.bias.detach(), frozen_before)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(cap=st.floats(0.0, 3.0), scale=st.floats(0.01, 10.0))
def test_project_to_caps_property(cap, scale):
    t = torch.randn(4, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * scale
    before = float(t.norm())
    active = project_to_caps({"V": t}, {"V": cap})
    assert float(t.norm()) <= cap * (1 + 1e-12) + 1e-15
    assert active == (before > cap)


def test_caps_hold_during_training():
    x, y, w_true = _linear_problem()
    w, model = _fresh_linear()
    cap = 0.25 * float(w_true.norm())
    res = train(model, {"w": w}, x, y, optimizer="adam", lr=0.1, steps=100, caps={"w": cap})
    assert float(res.params["w"].norm()) <= cap * (1 + 1e-12)
    assert res.projections > 0


@pytest.mark.parametrize("bad,match", [
    (dict(optimizer="rmsprop"), "optimizer == 'rmsprop', must be one of"),
    (dict(lr=-1.0), r"lr == -1.0, must be a finite number > 0"),
    (dict(steps=-3), r"steps == -3, must be an integer >= 0"),
    (dict(loss="hinge"), "loss == 'hinge', must be one of"),
    (dict(caps={"nope": 1.0}), "caps key == 'nope'"),
    (dict(batch_size=0), r"batch_size == 0, must be None or an integer >= 1"),
    (dict(caps={"w": -1.0}), r"caps\['w'\] == -1.0"),
])
def test_bad_arguments_rejected(bad, match):
    x, y, _ = _linear_problem()
    w, model = _fresh_linear()
    kw = dict(optimizer="sgd", lr=0.1, steps=1)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        train(model, {"w": w}, x, y, **kw)


class _Expanded(nn.Module):
    """A minimal stand-in with the ExpandedModel training interface: f(x) = x @ V."""

    def __init__(self, V):
        super().__init__()
        self.V = nn.Parameter(V.clone())

    def forward(self, x):
        return x @ self.V

    def block_parameters(self):
        return {"V": self.V}


def test_fallback_returns_jumpboard_when_training_is_worse():
    x, y, w_true = _linear_problem()
    expanded = _Expanded(torch.zeros(5, 1, dtype=torch.float64))
    jump = _Expanded(0.5 * w_true)
    # lr tiny: training cannot beat the jumpboard halfway to the truth
    model, info = train_block_with_fallback(expanded, jump, (x, y), optimizer="sgd", lr=1e-6, steps=3)
    assert info["jumpboard_returned"] and model is jump and info["returned"] == "jumpboard_0"
    assert info["delta_erm"] == [0.0]
    assert empirical_risk(model, x, y, "squared") <= info["R_S_trained"]


def test_fallback_keeps_trained_and_c2_holds_for_every_jumpboard():
    x, y, w_true = _linear_problem()
    expanded = _Expanded(torch.zeros(5, 1, dtype=torch.float64))
    boards = [_Expanded(0.5 * w_true), _Expanded(0.2 * w_true)]
    model, info = train_block_with_fallback(expanded, boards, (x, y), optimizer="adam", lr=0.05, steps=300)
    assert model is expanded and not info["jumpboard_returned"]
    r_new = empirical_risk(model, x, y, "squared")
    for rb, de in zip(info["R_S_jumpboards"], info["delta_erm"]):
        assert de >= 0
        np.testing.assert_allclose(rb - r_new, de, **TOL["float64"])


@pytest.mark.slow
def test_compiled_training_matches_eager():
    """``compile=True`` (torch.compile) trains the same model to the same numbers (float64)."""
    from numerics.models import PostNormResMLP

    x = torch.randn(256, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 3, (256,), generator=torch.Generator().manual_seed(1))
    runs = []
    for compile_ in (False, True):
        net = PostNormResMLP(3, 16, 2, 3, seed=0)
        res = train(net, dict(net.named_parameters()), x, y, optimizer="sgd", lr=0.1, steps=20, batch_size=64,
                    seed=0, loss="cross_entropy", compile=compile_)
        runs.append(res.losses)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-9, atol=1e-12)
