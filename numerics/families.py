"""Paper B's protocol families at a site of any shape: features ``phi``, zero-output blocks ``h = V phi`` (THEORY §1, §8).

Vocabulary: these are *protocol families* (:data:`PROTOCOL_FAMILIES`, config key
``saturation.families``): the directions a first-order saturation test scores at a site. They are
not the *residual block families* of a certificate (``readout``/``full``,
:data:`bounds.families.RESIDUAL_FAMILIES`, config key ``insertion.family``), although the
protocol family ``readout`` uses the same random features as the residual family ``readout``.

A state ``u`` of one sample is a vector ``(d,)``, a sequence ``(T, d)`` or an image
``(C, H, W)``. **Choice** (ours): the block acts position-wise on *tokens* -- ``(1, d)``,
``(T, d)`` or ``(H W, C)`` (a 1x1 convolution for images) -- with parameters shared over
positions, so ``G = E[sum_t m_t phi_t^T]`` and ``Sigma_phi = E[sum_t phi_t phi_t^T]``; with
``T = 1`` these are THEORY §8's formulas. Features may look at neighbours (attention,
3x3 convolution); the tangent space at ``V = 0`` is still ``{u -> V phi(u)}``.

Families (``h_V(u) = V phi(u)``, ``V`` starts at 0, so ``h_0 = 0``):

* ``linear``: ``phi(u) = u``; ``affine``: ``phi(u) = (u, 1)``;
* ``readout``: random features ``relu(U0 u + b0)`` of width ``r`` (THEORY §1);
* ``block``: the features of the model's own kind of block -- for sequences a parallel
  pre-norm transformer block (GPT-NeoX style: ``W_o attn(LN u) + W_2 gelu(W_1 LN u + b_1)``
  is linear in ``(W_o, W_2)``), for images ``relu(conv3x3(u))`` (a 1x1-projected conv
  block), for vectors random ReLU features (a two-layer MLP block).

:class:`ProtocolBlock` concatenates the features of the requested families (the protocol
block; ``linear`` is shared by ``linear`` and ``affine``) and records which columns belong
to which family, so one pass gives every family's score. Its feature parameters are drawn
once from a seed (fixed before any gradient is seen) and trained only when a grown block
is trained (the ``full`` family of THEORY §1).
"""
from __future__ import annotations

import math
from typing import Sequence

import torch
from torch import nn
import torch.nn.functional as F

from plumbing.validation import InputError

__all__ = ["FAMILIES", "LAYOUTS", "PROTOCOL_FAMILIES", "ProtocolBlock", "from_tokens", "to_tokens", "token_dim"]

#: Paper B's protocol families (``saturation.families``), module docstring.
PROTOCOL_FAMILIES = ("linear", "affine", "readout", "block")
#: The same tuple under its first name (a contract of the saturation and growth studies and the API).
FAMILIES = PROTOCOL_FAMILIES
#: state layouts (THEORY §10) and the rank of one sample's state in each.
LAYOUTS = {"ND": 1, "NLD": 2, "NCL": 2, "NCHW": 3, "NHWC": 3}


def to_tokens(u: torch.Tensor, layout: str | None = None) -> torch.Tensor:
    """``(n, d) -> (n, 1, d)``, ``(n, T, d)`` unchanged, ``(n, C, H, W) -> (n, H W, C)``;
    with ``layout="NCL"`` a channels-first 1-D conv state ``(n, C, L) -> (n, L, C)`` (THEORY §10:
    the block acts on the channel vector at each position). ``layout=None``: by rank as above.

    Example:
        >>> to_tokens(torch.zeros(2, 3, 4, 5)).shape, to_tokens(torch.zeros(2, 3, 4), "NCL").shape
        (torch.Size([2, 20, 3]), torch.Size([2, 4, 3]))
    """
    if layout == "NCL":
        return u.transpose(1, 2)
    if layout == "NHWC":                 # channels-last image: positions in the same order as NCHW's
        return u.flatten(1, 2)
    if u.dim() == 2:
        return u.unsqueeze(1)
    if u.dim() == 3:
        return u
    if u.dim() == 4:
        return u.flatten(2).transpose(1, 2)
    raise ValueError(f"expected a state of shape (n, d), (n, T, d) or (n, C, H, W), got {tuple(u.shape)}.")


def from_tokens(h: torch.Tensor, like: torch.Tensor, layout: str | None = None) -> torch.Tensor:
    """Inverse of :func:`to_tokens` for ``h`` of shape ``(n, T, d)`` into ``like``'s shape."""
    if layout == "NHWC":
        return h.reshape(like.shape)
    if like.dim() == 4 or layout == "NCL":
        return h.transpose(1, 2).reshape(like.shape)
    return h.reshape(like.shape)


def token_dim(state_shape: Sequence[int]) -> int:
    """Feature dimension ``d`` of one token for a per-sample state shape."""
    return int(state_shape[0] if len(state_shape) == 3 else state_shape[-1])


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed))


class _Identity(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.dim = d

    def forward(self, u):
        return to_tokens(u)


class _Bias(nn.Module):
    dim = 1

    def forward(self, u):
        tok = to_tokens(u)
        return torch.ones(tok.shape[0], tok.shape[1], 1, dtype=tok.dtype, device=tok.device)


class _ReLU(nn.Module):
    """``relu(U u + b)`` per token, He-scaled ``U`` (as :class:`numerics.insertion.ResidualBlock`)."""

    def __init__(self, d: int, r: int, seed: int, dtype):
        super().__init__()
        g = _gen(seed)
        self.dim = r
        self.U = nn.Parameter(torch.randn(r, d, generator=g, dtype=dtype) * math.sqrt(2.0 / d))
        self.b = nn.Parameter(torch.randn(r, generator=g, dtype=dtype) * 0.1)

    def forward(self, u):
        return torch.relu(to_tokens(u) @ self.U.T + self.b)


class _Conv(nn.Module):
    """``relu(conv3x3(u))`` on images, as tokens ``(n, H W, r)``."""

    def __init__(self, c: int, r: int, seed: int, dtype):
        super().__init__()
        g = _gen(seed)
        self.dim = r
        self.W = nn.Parameter(torch.randn(r, c, 3, 3, generator=g, dtype=dtype) * math.sqrt(2.0 / (9 * c)))
        self.b = nn.Parameter(torch.randn(r, generator=g, dtype=dtype) * 0.1)

    def forward(self, u):
        return to_tokens(torch.relu(F.conv2d(u, self.W, self.b, padding=1)))


class _Attention(nn.Module):
    """Causal multi-head self-attention outputs before the output projection: ``(n, T, d)``."""

    def __init__(self, d: int, heads: int, seed: int, dtype):
        super().__init__()
        g = _gen(seed)
        self.dim, self.heads = d, heads
        self.qkv = nn.Parameter(torch.randn(3 * d, d, generator=g, dtype=dtype) / math.sqrt(d))

    def forward(self, u):
        n, t, d = u.shape
        x = F.layer_norm(u, (d,))
        q, k, v = (x @ self.qkv.T).split(d, dim=2)
        shape = (n, t, self.heads, d // self.heads)
        q, k, v = (z.reshape(shape).transpose(1, 2) for z in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(n, t, d)


class _MLP(nn.Module):
    """``gelu(W_1 LN(u) + b_1)``: the hidden layer of a transformer MLP, ``(n, T, r)``."""

    def __init__(self, d: int, r: int, seed: int, dtype):
        super().__init__()
        g = _gen(seed)
        self.dim = r
        self.W1 = nn.Parameter(torch.randn(r, d, generator=g, dtype=dtype) / math.sqrt(d))
        self.b1 = nn.Parameter(torch.zeros(r, dtype=dtype))

    def forward(self, u):
        return F.gelu(F.layer_norm(u, (u.shape[-1],)) @ self.W1.T + self.b1)


def _heads(d: int) -> int:
    return next(h for h in (4, 2, 1) if d % h == 0)


def _block_features(rank: int, d: int, r: int, seed: int, dtype) -> list[nn.Module]:
    if rank == 2:
        return [_Attention(d, _heads(d), seed, dtype), _MLP(d, r, seed + 1, dtype)]
    if rank == 3:
        return [_Conv(d, r, seed, dtype)]
    return [_ReLU(d, r, seed, dtype)]


class ProtocolBlock(nn.Module):
    """``h(u) = V phi(u)`` with ``phi`` the concatenated features of ``families`` (THEORY §8 protocol).

    Args:
        state_shape: per-sample state shape ``(d,)``, ``(T, d)``, ``(C, L)`` or ``(C, H, W)``.
        families: subset of :data:`FAMILIES`.
        width: ``r`` of the random-feature families.
        seed: seed of the feature parameters (drawn once, before any gradient).
        dtype: parameter dtype.
        layout: one of :data:`LAYOUTS` or None (by rank: ``(T, d)`` is a token stream). ``"NCL"``
            reads ``(C, L)`` channels-first, ``d = C``; its features are those of an image
            ``(C, L, 1)`` (the ``block`` family a 3-tap convolution, never attention).

    Attributes:
        V: ``(d, r_total)``, zeros (the block is the zero function).
        slices: ``{family: list of column indices of phi}``.

    Example:
        >>> blk = ProtocolBlock((4,), ["linear", "affine", "readout"], width=3, seed=0, dtype=torch.float64)
        >>> blk.phi(torch.ones(2, 4, dtype=torch.float64)).shape, blk.slices["affine"]
        (torch.Size([2, 1, 8]), [0, 1, 2, 3, 4])
        >>> bool(torch.all(blk(torch.ones(2, 4, dtype=torch.float64)) == 0))
        True
    """

    def __init__(self, state_shape: Sequence[int], families: Sequence[str], width: int, seed: int,
                 dtype: torch.dtype = torch.float64, layout: str | None = None):
        super().__init__()
        bad = [f for f in families if f not in FAMILIES]
        if bad or not families:
            raise InputError("families", f"a non-empty list from {list(FAMILIES)}", list(families))
        if layout is not None and LAYOUTS.get(layout) != len(state_shape):
            raise InputError("layout", f"one of {list(LAYOUTS)} matching a state of shape {tuple(state_shape)}", layout)
        shape = (*state_shape, 1) if layout == "NCL" else tuple(state_shape)   # (C, L) as an image (C, L, 1)
        if layout == "NHWC":                 # (H, W, C) as the image (C, H, W)
            shape = (state_shape[2], state_shape[0], state_shape[1])
        rank, d = len(shape), token_dim(shape)
        self.state_shape, self.families, self.d, self.layout = tuple(state_shape), list(families), d, layout
        self.width = width   # r of the random-feature families (a block of one family re-built from the scan's)
        mods: dict[str, list[nn.Module]] = {}
        if {"linear", "affine"} & set(families):
            mods["linear"] = [_Identity(d)]
        if "affine" in families:
            mods["bias"] = [_Bias()]
        if "readout" in families:
            mods["readout"] = [_ReLU(d, width, seed, dtype)]
        if "block" in families:
            mods["block"] = _block_features(rank, d, width, seed + 7919, dtype)
        self.features = nn.ModuleList(m for group in mods.values() for m in group)
        cols, start = {}, 0
        for key, group in mods.items():
            size = sum(m.dim for m in group)
            cols[key] = list(range(start, start + size))
            start += size
        self.r = start
        self.slices = {f: (cols["linear"] + cols["bias"] if f == "affine" else cols[f]) for f in families}
        self.V = nn.Parameter(torch.zeros(d, self.r, dtype=dtype))

    def phi(self, u: torch.Tensor) -> torch.Tensor:
        """Features ``(n, T, r_total)`` of the state ``u``."""
        u = u.unsqueeze(-1) if self.layout == "NCL" else u.permute(0, 3, 1, 2) if self.layout == "NHWC" else u
        return torch.cat([f(u) for f in self.features], dim=2)

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return from_tokens(self.phi(u) @ self.V.T, u, self.layout)
