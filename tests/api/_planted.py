"""A planted problem for the predicted-vs-observed and trial-insertion tests: one site is known best.

``x ~ N(0, I_4)``, ``y = a x_0 + b tanh(x_2) tanh(x_3) + sigma eps``; the network embeds ``x`` into the first four
of 8 coordinates, ``blocks.0`` is a linear layer (the identity), ``blocks.1`` keeps only coordinates
0 and 1 (a fixed mask), ``blocks.2`` is the identity again, and the head reads ``a`` times coordinate 0.
So the network computes ``a x_0``, the best function of ``(x_0, x_1)`` and the best linear function of
``x`` (``E[tanh(x_2) tanh(x_3) | x_0, x_1] = 0`` and ``E[tanh(x_2) tanh(x_3) x_j] = 0``): a block after
``blocks.1`` or ``blocks.2`` sees only ``x_0, x_1`` and cannot gain (its population gain is <= 0), tuning
the linear layer ``blocks.0`` keeps the network linear (gain <= 0), and only a nonlinear block after
``blocks.0`` -- before the mask -- can learn ``b tanh(x_2) tanh(x_3)``: ``blocks.0`` is the best site, by
construction. (**Choice**: the bounded ``tanh`` product keeps the per-sample gains light-tailed; with the
plain product ``x_2 x_3`` (``draw(..., heavy=True)``) the gains are heavily skewed and the Student-t
held-out interval undercovers: ``benchmarks/bench_trial_coverage.py``, ``docs/trial-coverage/coverage.json``.)
"""
import torch
from torch import nn

A, B, SIGMA = 1.0, 2.0, 0.5


class Mask(nn.Module):
    """``u -> u * m`` with ``m`` keeping coordinates 0 and 1 (no parameters)."""

    def __init__(self, d=8):
        super().__init__()
        m = torch.zeros(d)
        m[:2] = 1.0
        self.register_buffer("m", m)

    def forward(self, u):
        return u * self.m


class Planted(nn.Module):
    """``head(blocks(embed(x)))`` computing ``A x_0`` (module docstring)."""

    def __init__(self, d=8):
        super().__init__()
        self.embed = nn.Linear(4, d, bias=False)
        self.blocks = nn.ModuleList([nn.Linear(d, d), Mask(d), nn.Linear(d, d)])
        self.head = nn.Linear(d, 1, bias=False)
        with torch.no_grad():
            self.embed.weight.copy_(torch.eye(d, 4))
            for k in (0, 2):
                self.blocks[k].weight.copy_(torch.eye(d))
                self.blocks[k].bias.zero_()
            self.head.weight.zero_()
            self.head.weight[0, 0] = A

    def forward(self, x):
        u = self.embed(x)
        for b in self.blocks:
            u = b(u)
        return self.head(u)


def squared(out, y):
    """Per-sample squared error ``(out_0 - y)^2``, shape ``(n,)``."""
    return (out[:, 0] - y) ** 2


def draw(n: int, seed: int, heavy: bool = False):
    """``(x, y)``: ``n`` independent samples of the planted problem (``heavy``: the target ``x_2 x_3``
    with ``B = 1`` instead of ``B tanh(x_2) tanh(x_3)``: heavy-tailed per-sample gains)."""
    g = torch.Generator().manual_seed(int(seed))
    x = torch.randn(n, 4, generator=g)
    planted = x[:, 2] * x[:, 3] if heavy else B * torch.tanh(x[:, 2]) * torch.tanh(x[:, 3])
    return x, A * x[:, 0] + planted + SIGMA * torch.randn(n, generator=g)
