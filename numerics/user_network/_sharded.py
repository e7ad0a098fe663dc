"""``dc.saturation`` under ``torch.distributed``: each rank's ``data`` is its own shard of one probe.

The union of the shards, in rank order, is the data of the one-process scan that every rank's report
equals (**Choice**): its first samples are the curvature sample (when ``curvature_data`` is None) and the
rest the probe, cut into the same global chunks and batches. The curvature sample comes from rank 0's
shard (or rank 0's ``curvature_data``) and is broadcast, so the curvature, the insertion check and the
sites' blocks are the same on every rank. Every check that could fail on one rank only is decided by all
ranks together (so no rank is left waiting in a collective): a network whose weights differ between ranks, shards that
are copies of each other,
``curvature_data`` passed on some ranks only or different between ranks, a rank 0 shard smaller than the
curvature sample, and any error a rank's own data or the loss raise while it is read or scanned
(:func:`numerics.distributed.together`).
"""
from __future__ import annotations

import hashlib

import torch

from numerics.user_network._data import DataStream, as_stream
from numerics.user_network._loss import check_per_sample
from numerics import distributed as dist

__all__ = ["ShardedProbe", "split_sharded"]


class ShardedProbe:
    """This rank's part ``[lo, hi)`` of the union's probe (``len`` is the union's probe size), read in the
    union's batch grid; :meth:`accumulate` is the collective scan (:func:`numerics.distributed.sharded_accumulate`)."""

    def __init__(self, local: DataStream, first: int, n_total: int):
        self.local, self.first, self.n_total = local, int(first), int(n_total)

    def __len__(self) -> int:
        return self.n_total

    def batches(self):
        """``(x, y, first)``: batches cut at the union probe's multiples of ``batch_size`` (as its one-process stream)."""
        B, m = self.local.batch_size, len(self.local)
        head = min((-self.first) % B, m)
        first = self.first
        for part in (self.local.part(0, head), self.local.part(head, m)):
            for x, y in (part if len(part) else ()):
                yield x, y, first
                first += x.shape[0]

    def accumulate(self, model, blocks, loss, *, n_chunks: int = 16, b: float | None = None) -> dict:
        """``{site: SiteAccumulator}`` of the union (every rank calls it)."""
        return dist.sharded_accumulate(model, self.batches, blocks, loss, self.n_total, n_chunks=n_chunks, b=b,
                                       check=check_per_sample, buffer_bytes=dist.BUFFER_BYTES,
                                       batch_size=self.local.batch_size)


def _agree(ok: bool, message: str) -> None:
    """Raises ValueError on every rank if ``ok`` is false on any (each rank's message, by rank)."""
    flags = dist.gather_objects((bool(ok), message))
    bad: dict = {}
    for r, (f, m) in enumerate(flags):
        if not f:
            bad.setdefault(m, []).append(r)
    if bad:
        raise ValueError("; ".join(f"ranks {rs}: {m}" if len(rs) > 1 else f"rank {rs[0]}: {m}" for m, rs in bad.items()))


def _fingerprint(stream: DataStream) -> str | None:
    """A hash of the shard's first samples (None when empty): two ranks with equal ones hold the same data."""
    if not len(stream):
        return None
    x, y = stream.take(8)
    h = hashlib.sha256()
    for t in (x, y):
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def _check_distinct(stream: DataStream) -> None:
    with dist.together():
        mine = _fingerprint(stream)
    prints = dist.gather_objects(mine)
    seen: dict = {}
    for r, p in enumerate(prints):
        if p is not None and p in seen:
            raise ValueError(f"data on ranks {seen[p]} and {r} starts with the same samples, must be each rank's own "
                             "shard under torch.distributed (the scan's probe is the union of the shards; the same "
                             "samples twice are not independent). Give each rank its part (e.g. x.tensor_split(world)[rank] "
                             "or a Subset of the dataset), or call it inside "
                             "numerics.distributed.local_only() to scan the same data on one rank.")
        if p is not None:
            seen[p] = r


def _check_same_model(model) -> None:
    """Refuses, on every rank, a network whose weights differ between ranks (each tensor's sum and sum of
    squares, float64: one small all-gather; DDP and a shared checkpoint give equal ones)."""
    with torch.no_grad():
        sig = torch.stack([torch.stack([t.detach().double().sum(), t.detach().double().pow(2).sum()])
                           for t in model.state_dict().values() if t.is_floating_point()]).cpu()
    sigs = dist.gather_objects(sig)
    differ = [r for r, other in enumerate(sigs) if other.shape != sig.shape or not bool(torch.equal(other, sigs[0]))]
    if differ:
        raise ValueError(f"model's weights on ranks {differ} differ from rank 0's, must be the same network on every "
                         "rank under torch.distributed (load the same checkpoint, or broadcast rank 0's state_dict).")


def _broadcast_pair(pair, model) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank 0's ``(x, y)`` on every rank, on the model's device."""
    device = next(model.parameters()).device
    xc, yc = dist.broadcast_object(tuple(t.cpu() for t in pair) if pair is not None else None)
    return xc.to(device), yc.to(device)


def _given_curvature(curvature_data, model, batch_size: int, curvature_n: int, sizes) -> tuple:
    with dist.together():
        mine = as_stream(curvature_data, "curvature_data", model, batch_size).take(curvature_n)
    xc, yc = _broadcast_pair(mine if dist.rank() == 0 else None, model)
    same = mine[0].shape == xc.shape and mine[1].shape == yc.shape and bool(torch.equal(mine[0], xc)) \
        and bool(torch.equal(mine[1], yc))
    _agree(same, "curvature_data differs from rank 0's, must be the same sample on every rank")
    note = (f"curvature_data (its first {xc.shape[0]} samples; rank 0's, the same on all {len(sizes)} ranks); "
            f"probe: the union of {len(sizes)} ranks' shards {sizes}, in rank order")
    return (xc, yc), 0, note


def _leading_curvature(stream: DataStream, model, curvature_n: int, n_chunks: int, sizes) -> tuple:
    N = sum(sizes)
    k = min(curvature_n, N // 4)   # the one-process rule on the union (**Choice** of _saturation._split)
    if N - k < max(4, 2 * n_chunks) or k < 2:
        raise ValueError(f"data has {N} samples on {len(sizes)} ranks {sizes}, must leave >= {max(4, 2 * n_chunks)} "
                         f"probe samples and >= 2 curvature samples (n - min(curvature_n, n // 4) == {N - k}, "
                         f"n // 4 == {k}) when curvature_data is None (a disjoint part of data is the curvature sample).")
    if k > sizes[0]:
        raise ValueError(f"rank 0's data has {sizes[0]} samples, must hold the curvature sample (the first "
                         f"min(curvature_n, n // 4) == {k} samples of the union of the {len(sizes)} ranks' shards "
                         f"{sizes}) when curvature_data is None: give rank 0 at least {k} samples, or pass "
                         "curvature_data (the same on every rank).")
    with dist.together():
        pair = stream.take(k) if dist.rank() == 0 else None
    note = (f"a disjoint part of data: its first {k} samples (of the union of {len(sizes)} ranks' shards {sizes}, "
            "in rank order: rank 0's, broadcast)")
    return _broadcast_pair(pair, model), k, note


def split_sharded(data, curvature_data, model, batch_size: int, curvature_n: int, n_chunks: int):
    """``(ShardedProbe, curvature (x, y), statement)``: ``_saturation._split`` on the union of the ranks' shards."""
    with dist.together():   # a bad shard on one rank stops every rank, none left waiting
        stream = as_stream(data, "data", model, batch_size)
    sizes = dist.all_gather_ints(len(stream), dist.comm_device(next(model.parameters()).device))
    _check_same_model(model)
    _check_distinct(stream)
    flags = dist.gather_objects(curvature_data is not None)   # before any branch: every rank takes the same one
    _agree(len(set(flags)) == 1, f"curvature_data is given on ranks {[r for r, f in enumerate(flags) if f]} only, "
           "must be given on every rank (the same sample) or on none")
    if curvature_data is not None:
        curv, k, note = _given_curvature(curvature_data, model, batch_size, curvature_n, sizes)
    else:
        curv, k, note = _leading_curvature(stream, model, curvature_n, n_chunks, sizes)
    offset = sum(sizes[:dist.rank()])
    lo = min(max(k - offset, 0), len(stream))   # the union's [k, N) on this rank
    probe = ShardedProbe(stream.part(lo, len(stream)), offset + lo - k, sum(sizes) - k)
    return probe, curv, note
