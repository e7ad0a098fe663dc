"""The streamed scan of every site of a user's network (THEORY §8, §10).

One forward (zero tensors added at every site, :class:`numerics.sites.SiteProbe`) and one
backward of the summed per-sample loss per batch give ``m_i`` at every site; each site's
protocol features ``phi`` (read in the site's layout) are folded into a
:class:`numerics.estimators.SiteAccumulator` (sums in float64 on the model's device), so
memory does not depend on the probe size.
"""
from __future__ import annotations

import contextlib
import zlib
from typing import Mapping

import torch
from torch import nn

from numerics.user_network._data import DataStream, model_device_dtype
from numerics.layouts import positions, resolve_layout
from numerics.user_network._loss import check_per_sample
from numerics.user_network._outputs import resolve_named_sites
from numerics.estimators import SiteAccumulator
from numerics.families import ProtocolBlock, to_tokens
from numerics.sites import SiteProbe, module_at

__all__ = ["accumulate", "eval_mode", "site_blocks", "site_seed", "step_gradients"]


@contextlib.contextmanager
def eval_mode(model: nn.Module):
    """``model.eval()`` inside the context; every module's ``training`` flag restored after."""
    flags = {m: m.training for m in model.modules()}
    model.eval()
    try:
        yield model
    finally:
        for m, flag in flags.items():
            m.training = flag


def site_seed(seed: int, site: str) -> int:
    """The seed of a site's features: fixed by ``seed`` and the site's name, before any gradient."""
    return (int(seed) * 1_000_003 + zlib.crc32(site.encode())) % (2**31 - 1)


def _layout_for(layout, site: str):
    if isinstance(layout, Mapping):
        return layout.get(site)
    return layout


def site_blocks(model: nn.Module, sites, layout, x_example: torch.Tensor, families, width: int,
                seed: int) -> dict[str, ProtocolBlock]:
    """``{site: ProtocolBlock}`` in each site's layout, on the model's device and dtype.

    Args:
        sites: module paths / ``"name.*"`` patterns (None: the model's block boundaries).
        layout: None (inferred per site), one layout for every site, or ``{site: layout}``.
        x_example: a small batch (one no-grad forward reads the states' shapes).

    Raises:
        ValueError: unknown / shape-changing site, batch-norm in train mode, ambiguous layout.
    """
    names = resolve_named_sites(model, sites, x_example, key="sites")   # its errors list what would match
    with torch.no_grad(), SiteProbe(model, names) as probe:
        model(x_example)
        shapes = {s: tuple(probe.states[s].shape[1:]) for s in names}
    device, dtype = model_device_dtype(model)
    blocks = {}
    for s in names:
        lay = resolve_layout(_layout_for(layout, s), module_at(model, s), shapes[s], s)
        blk = ProtocolBlock(shapes[s], families, width, site_seed(seed, s), dtype, layout=lay).to(device)
        blk.positions = positions(lay, shapes[s])[1]
        blocks[s] = blk
    return blocks


def accumulate(model: nn.Module, stream: DataStream, blocks: Mapping[str, ProtocolBlock], loss, *,
               n_chunks: int = 16, b: float | None = None) -> dict[str, SiteAccumulator]:
    """Streaming statistics of every site over ``stream`` (one forward + one backward per batch).

    Returns:
        ``{site: SiteAccumulator}`` (``G`` of shape ``(d, r)`` per site).

    Raises:
        ValueError: the loss does not return per-sample values.
    """
    if hasattr(stream, "accumulate"):   # a rank's shard under torch.distributed (numerics.user_network._sharded.ShardedProbe)
        return stream.accumulate(model, blocks, loss, n_chunks=n_chunks, b=b)
    names, n = list(blocks), len(stream)
    device, _ = model_device_dtype(model)
    accs = {s: SiteAccumulator(blocks[s].d, blocks[s].r, n, n_chunks, b, device=device) for s in names}
    with SiteProbe(model, names) as probe:
        first = getattr(stream, "start", 0)
        for x, y in stream:
            probe.reset()
            values = check_per_sample(loss(model(x), y), x.shape[0], loss, first)
            first += x.shape[0]
            ms = probe.grads(values.sum())   # one backward, every site
            with torch.no_grad():
                for s, acc in accs.items():
                    acc.update(to_tokens(ms[s], blocks[s].layout), blocks[s].phi(probe.states[s]))
            del values, ms   # nothing of this batch lives on into the next forward (issue 38: peak memory)
            probe.reset()
    return accs


def step_gradients(model: nn.Module, x: torch.Tensor, y: torch.Tensor, blocks: Mapping[str, ProtocolBlock], loss,
                   batch_size: int = 256) -> tuple[dict[str, torch.Tensor], float]:
    """``({site: G_x}, R_x)`` on a sample ``(x, y)``: every site's cross-gradient ``(1/n) sum_i X_i``
    (``(d, r)``, float64) and the mean loss, from one forward + one backward per batch (in eval mode:
    the slope ``<G_x, D^>`` of every direction at every site then costs no pass)."""
    names, n = list(blocks), x.shape[0]
    sums = {s: torch.zeros(blocks[s].d, blocks[s].r, dtype=torch.float64, device=x.device) for s in names}
    total = 0.0
    with eval_mode(model), SiteProbe(model, names) as probe:
        for i in range(0, n, batch_size):
            probe.reset()
            values = check_per_sample(loss(model(x[i:i + batch_size]), y[i:i + batch_size]),
                                      x[i:i + batch_size].shape[0], loss, i)
            total += float(values.detach().double().sum())
            ms = probe.grads(values.sum())
            with torch.no_grad():
                for s in names:
                    m, phi = to_tokens(ms[s], blocks[s].layout), blocks[s].phi(probe.states[s])
                    sums[s] += (m.reshape(-1, m.shape[-1]).T @ phi.reshape(-1, phi.shape[-1])).double()
            del values, ms
            probe.reset()
    return {s: g / max(n, 1) for s, g in sums.items()}, total / max(n, 1)
