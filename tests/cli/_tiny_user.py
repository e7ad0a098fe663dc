"""A tiny network and data for the CLI's help tests (``--model tests/cli/_tiny_user.py:model --data ...:data``)."""
import torch
from torch import nn


class _Block(nn.Module):
    def __init__(self, d, norm):
        super().__init__()
        self.fc, self.norm = nn.Linear(d, d), norm

    def forward(self, x):
        return self.norm(x + torch.relu(self.fc(x)))


class Tiny(nn.Module):
    """``x -> embed -> 2 blocks x = norm(x + relu(fc(x))) -> linear head`` (3 classes)."""

    def __init__(self, bn=False, d=6):
        super().__init__()
        self.embed = nn.Linear(4, d)
        self.blocks = nn.ModuleList(_Block(d, nn.BatchNorm1d(d) if bn else nn.LayerNorm(d)) for _ in range(2))
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        x = self.embed(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def model():
    torch.manual_seed(0)
    return Tiny().double()


def bn_model():
    """Batch norm, as ``nn.Module`` returns it: in train mode."""
    torch.manual_seed(0)
    return Tiny(bn=True).double()


def bn_model_eval():
    torch.manual_seed(0)
    return Tiny(bn=True).double().eval()


def _draw(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g, dtype=torch.float64)
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()


def data():
    sizes = {"probe": 160, "signal": 150, "S": 120, "T": 120, "train": 200}
    return {role: _draw(n, seed) for seed, (role, n) in enumerate(sizes.items(), start=1)}
