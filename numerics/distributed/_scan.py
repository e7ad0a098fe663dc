"""The data-parallel streamed scan: each rank reads its own shard, the statistics are combined by collectives.

Same forward and backward per batch as ``numerics.user_network._scan.accumulate`` (one forward with a zero tensor
at every site, one backward to the sites); each site's sums go to a :class:`ShardSums`, indexed by the
global position of every sample in the union of the shards, and :func:`~numerics.distributed._shards.combine`
returns every site's one-process :class:`~numerics.estimators.SiteAccumulator` on every rank.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import torch
from torch import nn

from numerics.distributed import _comm
from numerics.distributed._shards import ShardSums, bet_parts, combine, directions, reduce_sums, second_pass_parts
from numerics.families import ProtocolBlock, to_tokens
from numerics.sites import SiteProbe

__all__ = ["sharded_accumulate"]


def _passes(model, batches, blocks, loss, check, visit) -> None:
    """One forward + one backward per batch ``(x, y, first)``; ``visit(site, m, phi, first)`` per site."""
    names = list(blocks)
    with SiteProbe(model, names) as probe:
        for x, y, first in batches():
            probe.reset()
            values = check(loss(model(x), y), x.shape[0], loss, first)
            ms = probe.grads(values.sum())
            with torch.no_grad():
                for s in names:
                    visit(s, to_tokens(ms[s], blocks[s].layout), blocks[s].phi(probe.states[s]), first)


def sharded_accumulate(model: nn.Module, batches: Callable[[], Iterable], blocks: Mapping[str, ProtocolBlock], loss,
                       n_total: int, *, n_chunks: int = 16, b: float | None = None, check: Callable,
                       buffer_bytes: int, batch_size: int | None = None) -> dict:
    """``{site: SiteAccumulator}`` of the union of every rank's shard (a collective call: every rank calls it).

    Args:
        batches: a callable giving this rank's batches ``(x, y, first)`` in order, ``first`` the global index
            (in the union, rank order) of the batch's first sample; called twice where the bets' factors do
            not fit ``buffer_bytes``.
        buffer_bytes: what this rank may keep of the bets' factors, all sites together (``dc.saturation``
            passes ``numerics.distributed.BUFFER_BYTES``).
        batch_size: the one-process scan's batch size (its batches start at the multiples of it in the
            union): where a rank boundary cuts one of its parts, the subsample of ``E[m m^T]`` continues there.
        n_total: the union's number of samples.
        check: ``check(values, n, loss, first) -> values`` (per-sample losses, finite).

    Returns:
        Every site's accumulator, equal on every rank to the one-process scan of the union
        (up to float rounding of the sums).
    """
    p = next(model.parameters())
    device = _comm.comm_device(p.device)
    per_site = int(buffer_bytes) // max(len(blocks), 1)   # a rank's budget, shared by its sites
    sums = {s: ShardSums(blk.d, blk.r, n_total, n_chunks, b, device=p.device, buffer_bytes=per_site,
                      batch_size=batch_size)
            for s, blk in blocks.items()}
    with _comm.together():   # an error on one rank (its data, the loss) is raised on every rank, none left waiting
        _passes(model, batches, blocks, loss, check, lambda s, m, phi, first: sums[s].update(m, phi, first))
    reduced = {s: reduce_sums(v, device) for s, v in sums.items()}
    dirs = {s: directions(v, reduced[s][0]) for s, v in sums.items()}
    again = _comm.all_max(torch.tensor([float(any(v.needs_second_pass for v in sums.values()))], dtype=torch.float64),
                          device)
    if bool(again[0]):   # some rank could not keep the bets' factors: every rank passes again (collectives in step)
        zs: dict = {s: [] for s in sums}
        with _comm.together():
            _passes(model, batches, blocks, loss, check, lambda s, m, phi, first: zs[s].append(
                bet_parts(sums[s], second_pass_parts(sums[s], m, phi, first), dirs[s])))
        local = {s: torch.cat(zs[s]) if zs[s] else torch.zeros(0, dtype=torch.float64, device=p.device) for s in sums}
    else:
        local = {s: bet_parts(v, v.kept, dirs[s]) for s, v in sums.items()}
    return {s: combine(v, reduced[s], dirs[s], local[s], device) for s, v in sums.items()}
