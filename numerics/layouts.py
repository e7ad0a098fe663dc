"""State layouts at a site (THEORY §10): declared, or inferred from the module at the site.

Used by the public API (:mod:`depthcert.api`); a study builds a site's block in its layout with
``ProtocolBlock(..., layout=resolve_layout(None, module_at(net, site), state_shape, site))``.

A site's state ``u`` of one sample is read as

* ``"ND"`` -- ``(d,)`` features (``P = 1``);
* ``"NLD"`` -- ``(T, d)`` tokens / channels-last positions, the block acts on the last axis;
* ``"NCL"`` -- ``(C, L)`` channels-first 1-D conv state, ``d = C``, ``P = L``;
* ``"NCHW"`` -- ``(C, H, W)`` channels-first image, ``d = C``, ``P = H W``;
* ``"NHWC"`` -- ``(H, W, C)`` channels-last image (declared, never inferred), ``d = C``, ``P = H W``.

Inference (**Choice**, ours): a 1-D state is ``"ND"``; a block inserted by depthcert keeps the
layout it was built for. Otherwise the module at the site and
its submodules are read: the channel counts of convolutions, group-norms and batch-norms
(axis 1, channels-first) and the feature counts of linear layers, layer/RMS norms and
attention (last axis). The state is channels-first iff its first axis matches a channel
count and its last axis matches no feature count, and channels-last (``"NLD"``) iff the
reverse; anything else (neither, both, or a channels-last image) is ambiguous and an error
asking for ``layout=`` -- never a guess.
"""
from __future__ import annotations

from typing import Sequence

from torch import nn

from numerics.families import LAYOUTS

__all__ = ["LAYOUTS", "infer_layout", "positions", "resolve_layout"]

_CHANNEL_MODULES = (nn.Conv1d, nn.Conv2d, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)
_FEATURE_MODULES = (nn.Linear, nn.LayerNorm, nn.MultiheadAttention) + ((nn.RMSNorm,) if hasattr(nn, "RMSNorm") else ())


def _channels(mod: nn.Module) -> tuple[set, set]:
    first, last = set(), set()
    for m in mod.modules():
        if isinstance(m, (nn.Conv1d, nn.Conv2d)):
            first.add(m.out_channels)
        elif isinstance(m, nn.GroupNorm):
            first.add(m.num_channels)
        elif isinstance(m, nn.modules.batchnorm._BatchNorm):
            first.add(m.num_features)
        elif isinstance(m, nn.Linear):
            last.add(m.out_features)
        elif isinstance(m, nn.MultiheadAttention):
            last.add(m.embed_dim)
        elif isinstance(m, _FEATURE_MODULES) and getattr(m, "normalized_shape", None):
            last.add(int(m.normalized_shape[-1]))
    return first, last


def infer_layout(module: nn.Module, state_shape: Sequence[int], site: str) -> str:
    """The layout of a per-sample state ``state_shape`` at ``site`` (docstring of ``numerics.layouts``).

    Raises:
        ValueError: the layout is ambiguous (names the site, the shape and what was found).

    Example:
        >>> infer_layout(nn.Conv1d(8, 8, 3, padding=1), (8, 40), "blocks.0")
        'NCL'
    """
    shape = tuple(state_shape)
    if len(shape) == 1:
        return "ND"
    own = {getattr(m, "layout", None) for m in module.modules()} & {k for k, v in LAYOUTS.items() if v == len(shape)}
    if len(own) == 1:   # a block inserted by depthcert records the layout it was built for
        return own.pop()
    first, last = _channels(module)
    cf, cl = shape[0] in first, shape[-1] in last
    if cf and not cl:
        return "NCL" if len(shape) == 2 else "NCHW"
    if cl and not cf and len(shape) == 2:
        return "NLD"
    raise ValueError(f"layout is None at site {site!r} with state (N, {', '.join(map(str, shape))}): ambiguous "
                     f"(channel counts {sorted(first)}, feature counts {sorted(last)} in the module); "
                     f"must be declared, one of {list(LAYOUTS)}.")


def resolve_layout(layout, module: nn.Module, state_shape: Sequence[int], site: str) -> str:
    """A declared layout, checked against the state's rank, or :func:`infer_layout`.

    Raises:
        ValueError: an unknown layout, or one that does not fit the state's rank.
    """
    if layout is None:
        return infer_layout(module, state_shape, site)
    if layout not in LAYOUTS:
        raise ValueError(f"layout == {layout!r}, must be one of {list(LAYOUTS)} or None.")
    if LAYOUTS[layout] != len(state_shape):
        raise ValueError(f"layout == {layout!r} at site {site!r}, must fit a state of shape "
                         f"(N, {', '.join(map(str, state_shape))}) (a {LAYOUTS[layout] + 1}-axis layout).")
    _check_declared(layout, module, tuple(state_shape), site)
    return layout


def _check_declared(layout: str, module: nn.Module, shape: tuple, site: str) -> None:
    """Refuse a declared layout the module at the site contradicts: channels-first (``NCL``, ``NCHW``) where the
    state's last axis is a feature count of the module and its first axis no channel count, or channels-last
    (``NLD``, ``NHWC``) where the reverse holds -- the evidence :func:`infer_layout` reads, decisive either way."""
    if len(shape) < 2:
        return
    first, last = _channels(module)
    cf, cl = shape[0] in first, shape[-1] in last
    channels_first = layout in ("NCL", "NCHW")
    if (channels_first and cl and not cf) or (not channels_first and cf and not cl):
        other = "channels-last (NLD / NHWC)" if channels_first else "channels-first (NCL / NCHW)"
        raise ValueError(f"layout == {layout!r} at site {site!r} with state (N, {', '.join(map(str, shape))}), "
                         f"must agree with the module there, which reads the state {other} (channel counts "
                         f"{sorted(first)}, feature counts {sorted(last)}); declare the layout the module uses.")


def positions(layout: str, state_shape: Sequence[int]) -> tuple[int, int]:
    """``(d, P)``: the block's dimension and the number of positions it acts at."""
    s = tuple(state_shape)
    if layout == "ND":
        return s[0], 1
    if layout == "NLD":
        return s[1], s[0]
    if layout == "NCL":
        return s[0], s[1]
    if layout == "NHWC":
        return s[2], s[0] * s[1]
    return s[0], s[1] * s[2]
