"""A 1-D post-norm residual CNN for signals ``(N, C_in, L)`` such as MNIST-1D (THEORY §1, §10).

``z_0 = N_0(stem(x))``, ``z_j = N_j(z_{j-1} + conv_j2(relu(conv_j1(z_{j-1}))))`` for
``j = 1..depth``, ``f(x) = head(mean_L z_depth)``. **Choice**: the stem ends with a
normalisation ``N_0`` (as :mod:`numerics.models`), so every site's state is normalised,
including ``z_0``. The state is channels-first
``(N, width, L)``: a block acts on the channel vector at each of the ``L`` positions
(``d = width``, THEORY §10). Sites: ``"stem_out"`` and ``"blocks.<j>"`` (the blocks are an
``nn.ModuleList`` named ``blocks``, so the pattern ``"blocks.*"`` selects them all).

Norms (``norm=``): ``"group"`` (``nn.GroupNorm``: channels of a group and all positions
together), ``"layer"`` (LayerNorm over the channel vector at each position) or ``"rms"``
(RMSNorm over the channel vector at each position). None couples samples.
"""
from __future__ import annotations

import torch
from torch import nn
import torch.nn.functional as F

__all__ = ["CNN1D_NORMS", "ChannelNorm", "ResBlock1d", "ResCNN1d"]

CNN1D_NORMS = ("group", "layer", "rms")


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} == {value!r}, must be an int >= {low}.")
    return value


class ChannelNorm(nn.Module):
    """LayerNorm or RMSNorm of the channel vector at each position of ``(N, C, L)``."""

    def __init__(self, channels: int, kind: str, eps: float = 1e-5):
        super().__init__()
        self.kind, self.eps = kind, float(eps)
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels)) if kind == "layer" else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.transpose(1, 2)   # (N, L, C): normalise the last axis
        c = (z.shape[-1],)
        z = F.layer_norm(z, c, self.weight, self.bias, self.eps) if self.kind == "layer" \
            else F.rms_norm(z, c, self.weight, self.eps)
        return z.transpose(1, 2)


def _make_norm(kind: str, channels: int, groups: int) -> nn.Module:
    return nn.GroupNorm(groups, channels) if kind == "group" else ChannelNorm(channels, kind)


class ResBlock1d(nn.Module):
    """``x -> Norm(x + conv2(relu(conv1(x))))`` on ``(N, C, L)`` (length-preserving convs)."""

    def __init__(self, channels: int, kernel_size: int, norm: str, groups: int):
        super().__init__()
        pad = kernel_size // 2
        self.conv1 = nn.Conv1d(channels, channels, kernel_size, padding=pad)
        self.conv2 = nn.Conv1d(channels, channels, kernel_size, padding=pad)
        self.norm = _make_norm(norm, channels, groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class ResCNN1d(nn.Module):
    """1-D post-norm residual CNN: ``(N, in_channels, L)`` -> logits ``(N, n_out)``.

    Args:
        in_channels: input channels (1 for MNIST-1D).
        width: channels ``C`` of the residual stream (``d = C``).
        depth: number of residual blocks, ``>= 0`` (0: stem, norm, pool, head).
        n_out: outputs (10 classes for MNIST-1D).
        kernel_size: odd kernel size of every conv (length-preserving).
        norm: one of :data:`CNN1D_NORMS`.
        groups: GroupNorm groups (divides ``width``; ``norm="group"`` only).
        seed: initial weights are drawn under a forked torch RNG seeded by it (the
            caller's global RNG is untouched).
        dtype, device: of the parameters (float32 by default).

    Example:
        >>> net = ResCNN1d(1, 8, 2, 10, groups=2)
        >>> net(torch.zeros(3, 1, 40)).shape, net.site_names()
        (torch.Size([3, 10]), ['stem_out', 'blocks.0', 'blocks.1'])
    """

    def __init__(self, in_channels: int = 1, width: int = 32, depth: int = 4, n_out: int = 10, *,
                 kernel_size: int = 5, norm: str = "group", groups: int = 4, seed: int = 0,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None):
        super().__init__()
        for name, value, low in (("in_channels", in_channels, 1), ("width", width, 1), ("depth", depth, 0),
                                 ("n_out", n_out, 1), ("kernel_size", kernel_size, 1), ("groups", groups, 1),
                                 ("seed", seed, 0)):
            _check_int(name, value, low)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size == {kernel_size}, must be odd (length-preserving convs).")
        if norm not in CNN1D_NORMS:
            raise ValueError(f"norm == {norm!r}, must be one of {list(CNN1D_NORMS)}.")
        if norm == "group" and width % groups:
            raise ValueError(f"groups == {groups}, must divide width == {width}.")
        self.depth, self.width, self.norm_kind = depth, width, norm
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.stem = nn.Conv1d(in_channels, width, kernel_size, padding=kernel_size // 2)
            self.stem_norm = _make_norm(norm, width, groups)
            self.stem_out = nn.Identity()   # the stream z_0 (a shape-preserving site)
            self.blocks = nn.ModuleList(ResBlock1d(width, kernel_size, norm, groups) for _ in range(depth))
            self.head = nn.Linear(width, n_out)
        self.to(device=device, dtype=dtype)

    def site_names(self) -> list[str]:
        """``["stem_out", "blocks.0", ..., "blocks.<depth-1>"]``."""
        return ["stem_out"] + [f"blocks.{j}" for j in range(self.depth)]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The residual stream after the last block, ``(N, width, L)``."""
        z = self.stem_out(self.stem_norm(self.stem(x)))
        for block in self.blocks:
            z = block(z)
        return z

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits ``(N, n_out)`` of ``x (N, in_channels, L)``."""
        return self.head(self.features(x).mean(dim=2))
