"""Networks beyond the post-norm MLP/CNN, for Paper B's scan and growth on any network (THEORY §8).

* :class:`CharGPT` -- a GPT-2-style pre-norm decoder (token + position embeddings,
  ``x + attn(LN x)``, ``x + mlp(LN x)``, final LN, linear head) for character-level
  language modelling; sites on the residual stream between blocks.
* :class:`GroupNormResNet` -- a pre-activation ResNet with GroupNorm
  (``x + conv(relu(GN(conv(relu(GN x)))))``), global average pool, linear head.

Both expose ``site_names()`` (the block boundaries, :mod:`numerics.sites`) and are built
under a forked, seeded RNG (the caller's global RNG is untouched).
"""
from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F

from numerics.models import _build, _check_dims

__all__ = ["CharGPT", "GroupNormResNet"]


class _Attention(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        n, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.reshape(n, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(n, t, d))


class GPTBlock(nn.Module):
    """Pre-norm GPT-2 block: ``x + attn(LN1 x)`` then ``+ mlp(LN2 x)``."""

    def __init__(self, d: int, heads: int, mlp_ratio: int = 4):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(d), _Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, mlp_ratio * d), nn.GELU(), nn.Linear(mlp_ratio * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    """GPT-2-style character model: ``(n, T)`` token ids -> logits ``(n, T, vocab)``.

    Args:
        vocab: vocabulary size; d_model: width ``d``; depth: number of blocks;
        heads: attention heads (divide ``d``); seq_len: maximum ``T``.

    Example:
        >>> net = CharGPT(11, 16, 2, heads=2, seq_len=8)
        >>> net(torch.zeros(3, 8, dtype=torch.long)).shape, net.site_names()
        (torch.Size([3, 8, 11]), ['embed_out', 'blocks.0', 'blocks.1'])
    """

    def __init__(self, vocab: int, d_model: int, depth: int, *, heads: int = 4, seq_len: int = 64,
                 mlp_ratio: int = 4, seed: int = 0, dtype: torch.dtype = torch.float32):
        super().__init__()
        _check_dims(vocab=vocab, d_model=d_model, heads=heads, seq_len=seq_len)
        if d_model % heads:
            raise ValueError(f"heads == {heads}, must divide d_model == {d_model}.")
        self.depth, self.width, self.seq_len = depth, d_model, seq_len

        def build():
            self.tok, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(seq_len, d_model)
            self.embed_out = nn.Identity()   # the stream z_0 (a shape-preserving site)
            self.blocks = nn.ModuleList(GPTBlock(d_model, heads, mlp_ratio) for _ in range(depth))
            self.ln_f, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab)
            for blk in self.blocks:   # GPT-2's scaled init of the residual projections
                for lin in (blk.attn.proj, blk.mlp[2]):
                    nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * max(depth, 1)))

        _build(seed, build)
        self.to(dtype)

    def site_names(self) -> list[str]:
        return ["embed_out"] + [f"blocks.{j}" for j in range(self.depth)]

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        if t > self.seq_len:
            raise ValueError(f"sequence length == {t}, must be <= seq_len == {self.seq_len}.")
        z = self.embed_out(self.tok(idx) + self.pos(torch.arange(t, device=idx.device)))
        for blk in self.blocks:
            z = blk(z)
        return self.head(self.ln_f(z))


class _ResBlock(nn.Module):
    def __init__(self, c: int, groups: int):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(groups, c), nn.Conv2d(c, c, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(groups, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.c2(torch.relu(self.n2(self.c1(torch.relu(self.n1(x))))))


class GroupNormResNet(nn.Module):
    """Pre-activation GroupNorm ResNet on ``(n, C_in, H, W)`` images.

    Example:
        >>> net = GroupNormResNet(1, 8, 2, 10, groups=2, dtype=torch.float64)
        >>> net(torch.zeros(2, 1, 8, 8, dtype=torch.float64)).shape, net.site_names()
        (torch.Size([2, 10]), ['stem_out', 'blocks.0', 'blocks.1'])
    """

    def __init__(self, in_channels: int, channels: int, depth: int, n_out: int, *, groups: int = 4,
                 seed: int = 0, dtype: torch.dtype = torch.float64):
        super().__init__()
        _check_dims(in_channels=in_channels, channels=channels, n_out=n_out, groups=groups)
        if channels % groups:
            raise ValueError(f"groups == {groups}, must divide channels == {channels}.")
        self.depth, self.width = depth, channels

        def build():
            self.stem = nn.Conv2d(in_channels, channels, 3, padding=1)
            self.stem_out = nn.Identity()   # the stream z_0 (a shape-preserving site)
            self.blocks = nn.ModuleList(_ResBlock(channels, groups) for _ in range(depth))
            self.norm, self.head = nn.GroupNorm(groups, channels), nn.Linear(channels, n_out)

        _build(seed, build)
        self.to(dtype)

    def site_names(self) -> list[str]:
        return ["stem_out"] + [f"blocks.{j}" for j in range(self.depth)]

    def forward(self, x):
        z = self.stem_out(self.stem(x))
        for blk in self.blocks:
            z = blk(z)
        return self.head(torch.relu(self.norm(z)).mean(dim=(2, 3)))
