"""Batched training of many readout blocks: equal to one-at-a-time training, caps per draw."""
import numpy as np
import pytest
import torch

from numerics.block_training import sample_risks, train_readout_blocks
from numerics.insertion import insert_block
from numerics.models import PostNormResMLP
from numerics.training import DivergenceError, empirical_risk, train


def _setup(at=2, n_out=1, B=3, M=300, seed=0):
    net = PostNormResMLP(3, 6, 2, n_out, seed=seed, eps_n=1e-3)
    for p in net.parameters():
        p.requires_grad_(False)
    ex = insert_block(net, at, "readout", width=5, seed=1)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, M, 3, generator=g, dtype=torch.float64)
    with torch.no_grad():
        u = torch.stack([net.bottom(xb, at) for xb in x])
    y = torch.randn(B, M, 1, generator=g, dtype=torch.float64) if n_out == 1 else torch.randint(0, n_out, (B, M), generator=g)
    return ex, u, y


class _OnStates(torch.nn.Module):
    def __init__(self, ex):
        super().__init__()
        self.ex = ex

    def forward(self, u):
        return self.ex.top_from_u(u)


@pytest.mark.parametrize("optimizer,at,n_out", [("sgd", 2, 1), ("adam", 1, 1), ("momentum", 2, 3)])
def test_one_draw_equals_the_reference_trainer(optimizer, at, n_out):
    # independent baseline: numerics.training.train on the same states, same seed
    ex, u, y = _setup(at=at, n_out=n_out, B=1)
    loss = "squared" if n_out == 1 else "cross_entropy"
    kw = dict(optimizer=optimizer, lr=0.05, steps=40, batch_size=64)
    res = train_readout_blocks(ex, u, y, loss=loss, caps=0.3, seeds=[11], **kw)
    ref = ex.with_V(torch.zeros_like(ex.block.V))
    ref.block.V.requires_grad_(True)
    out = train(_OnStates(ref), {"V": ref.block.V}, u[0], y[0], seed=11, loss=loss, caps={"V": 0.3}, **kw)
    np.testing.assert_allclose(res.V[0].numpy(), out.params["V"].numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.losses[0], out.losses, rtol=1e-10)
    assert res.projections[0] == out.projections


def test_batched_equals_one_at_a_time_and_caps_are_per_draw():
    ex, u, y = _setup(B=3)
    caps = [0.05, 0.5, 10.0]
    kw = dict(loss="squared", optimizer="adam", lr=0.05, steps=30, batch_size=50)
    together = train_readout_blocks(ex, u, y, caps=caps, seeds=[1, 2, 3], **kw)
    for b in range(3):
        alone = train_readout_blocks(ex, u[b:b + 1], y[b:b + 1], caps=caps[b], seeds=[b + 1], **kw)
        np.testing.assert_allclose(together.V[b].numpy(), alone.V[0].numpy(), rtol=1e-9, atol=1e-12)
    norms = together.V.reshape(3, -1).norm(dim=1)
    assert norms[0] <= 0.05 * (1 + 1e-12) and together.projections[0] > 0 and together.projections[2] == 0


def test_sample_risks_match_empirical_risk():
    ex, u, y = _setup(B=2, M=500)
    g = torch.Generator().manual_seed(5)
    Vs = torch.randn(2, 3, *ex.block.V.shape, generator=g, dtype=torch.float64) * 0.1
    risks = sample_risks(ex, u, y, Vs, "squared")
    for b in range(2):
        for c in range(3):
            want = empirical_risk(_OnStates(ex.with_V(Vs[b, c])), u[b], y[b], "squared")
            assert float(risks[b, c]) == pytest.approx(want, rel=1e-12)


def test_divergence_and_bad_arguments():
    ex, u, y = _setup(B=2)
    with pytest.raises(DivergenceError, match="at step"):
        train_readout_blocks(ex, u, y * 1e200, loss="squared", caps=1e300, seeds=[0, 1], lr=1e10, steps=50)
    with pytest.raises(ValueError, match="optimizer == 'lbfgs'"):
        train_readout_blocks(ex, u, y, loss="squared", caps=1.0, seeds=[0, 1], optimizer="lbfgs")
    with pytest.raises(ValueError, match="B seeds"):
        train_readout_blocks(ex, u, y, loss="squared", caps=1.0, seeds=[0])
