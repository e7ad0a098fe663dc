"""The digits 2-D ResNet's hand-derived constants (``examples/digits_resnet2d.py``) hold, and halved they fail.

``rho`` (head input after GroupNorm and the mean pool) is checked on arbitrary states fed to the
last GroupNorm (random, and constant across positions, where it is attained); ``B`` (cross-entropy
of the linear head on ``||w|| <= rho + radius``) on random inputs of that ball and at the pair of
classes that maximises it (where the loss exceeds ``B - log C``, so ``B / 2`` is exceeded).
"""
import importlib.util
import math
from pathlib import Path

import torch

_spec = importlib.util.spec_from_file_location("digits_resnet2d", Path(__file__).parents[2] / "examples" /
                                               "digits_resnet2d.py")
digits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(digits)


def _net():
    torch.manual_seed(1)
    net = digits.ResNet2d().double()
    with torch.no_grad():
        gn = net.blocks[-1].norm
        gn.weight.uniform_(0.5, 1.5)
        gn.bias.normal_(0, 0.3)
    return net


def test_rho_bounds_the_head_input_and_is_attained():
    net = _net()
    c = digits.constants(net, 0.0)
    gn = net.blocks[-1].norm
    z = torch.randn(4000, 16, 8, 8, dtype=torch.float64) * torch.rand(4000, 1, 1, 1, dtype=torch.float64) * 10
    flat = torch.randn(4000, 16, 1, 1, dtype=torch.float64).expand(-1, -1, 8, 8)     # constant across positions
    with torch.no_grad():
        h = torch.cat([gn(z), gn(flat)]).mean(dim=(2, 3))
    top = float(h.norm(dim=1).max())
    assert top <= c["rho"] * (1 + 1e-12)
    with torch.no_grad():     # gamma = 1, beta = 0: rho = sqrt(C), attained by a position-constant state
        gn.weight.fill_(1.0)
        gn.bias.zero_()
        peak = float(gn(flat).mean(dim=(2, 3)).norm(dim=1).max())
    assert peak > digits.constants(net, 0.0)["rho"] / 2 and peak <= math.sqrt(16) * (1 + 1e-12)


def test_B_bounds_the_cross_entropy_on_the_ball_and_halved_fails():
    net = _net()
    radius = 0.7
    c = digits.constants(net, radius)
    A, b = net.head.weight.detach(), net.head.bias.detach()
    R = c["rho"] + radius
    w = torch.randn(20000, 16, dtype=torch.float64)
    w = w / w.norm(dim=1, keepdim=True) * R * torch.rand(20000, 1, dtype=torch.float64) ** 0.1
    y = torch.randint(0, 10, (20000,))
    losses = torch.nn.functional.cross_entropy(w @ A.T + b, y, reduction="none")
    assert float(losses.max()) <= c["B"]
    gaps = torch.cdist(A, A) * R + (b[:, None] - b[None, :])
    j, k = divmod(int(gaps.argmax()), 10)
    w_star = R * (A[j] - A[k]) / (A[j] - A[k]).norm()
    worst = float(torch.nn.functional.cross_entropy((w_star @ A.T + b)[None], torch.tensor([k])))
    assert c["B"] - math.log(10) <= worst <= c["B"] and worst > c["B"] / 2
