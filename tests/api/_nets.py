"""Small user-style networks for the API tests (written as a user would, outside the package)."""
import torch
from torch import nn


class Block(nn.Module):
    """``x = GroupNorm(x + conv(relu(conv(x))))`` on a channels-first state ``(N, C, L)``."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.conv2, self.norm = nn.Conv1d(c, c, 3, padding=1), nn.Conv1d(c, c, 3, padding=1), nn.GroupNorm(4, c)

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class ResCNN(nn.Module):
    """Stem conv to ``c`` channels, ``depth`` blocks, mean pool, linear head; input ``(N, 1, L)``."""

    def __init__(self, c=8, depth=2, classes=3):
        super().__init__()
        self.stem = nn.Conv1d(1, c, 3, padding=1)
        self.blocks = nn.ModuleList(Block(c) for _ in range(depth))
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=2))


class BlockLast(nn.Module):
    """The same block on a channels-last state ``(N, L, C)`` (same parameters)."""

    def __init__(self, blk: Block):
        super().__init__()
        self.inner = blk

    def forward(self, x):
        return self.inner(x.transpose(1, 2)).transpose(1, 2)


class ResCNNLast(nn.Module):
    """:class:`ResCNN` written channels-last between the blocks (shares ``net``'s modules)."""

    def __init__(self, net: ResCNN):
        super().__init__()
        self.stem, self.head = net.stem, net.head
        self.blocks = nn.ModuleList(BlockLast(b) for b in net.blocks)

    def forward(self, x):
        x = self.stem(x).transpose(1, 2)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=1))


def synthetic(n, length=16, classes=3, seed=0, dtype=torch.float64):
    """``(x (n, 1, L), y (n,))``: a class-dependent bump plus noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    t = torch.arange(length, dtype=dtype)
    centre = (y.to(dtype) + 0.5) * length / classes
    x = torch.exp(-((t - centre[:, None]) ** 2) / 4.0) + 0.5 * torch.randn(n, length, generator=g, dtype=dtype)
    return x[:, None, :], y
