"""``TrainingArm.advance`` freezes the network's other parameters while it trains and restores them after: the
trained parameters follow exactly a hand-written Adam loop on the same minibatches, and no gradient reaches
(or is left on) a parameter the arm does not train."""
import copy

import torch
from torch import nn

from numerics.trial import TrainingArm


def _loss(o, t):
    return (o[:, 0] - t) ** 2


def test_advance_trains_its_parameters_only_and_restores_the_flags():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x, y = torch.randn(40, 3), torch.randn(40)
    ref = copy.deepcopy(net)
    init = net[2].weight.detach().clone()
    arm = TrainingArm(net, net[2].parameters(), x, y, _loss, lr=0.05, batch_size=8, seed=3)
    arm.advance(6)
    assert all(p.requires_grad for p in net.parameters())            # restored
    assert all(p.grad is None for p in net[0].parameters())          # backward stopped above them
    assert torch.equal(net[0].weight, ref[0].weight)
    # the same steps by hand (independent loop, same generator seed and minibatches)
    opt = torch.optim.Adam(ref[2].parameters(), lr=0.05)
    g = torch.Generator().manual_seed(3)
    for _ in range(6):
        idx = torch.randint(0, 40, (8,), generator=g)
        opt.zero_grad()
        _loss(ref(x[idx]), y[idx]).mean().backward()
        opt.step()
    assert torch.allclose(net[2].weight, ref[2].weight, atol=1e-6) and torch.allclose(net[2].bias, ref[2].bias, atol=1e-6)
    assert not torch.allclose(net[2].weight, init)                  # it did train
