"""The saturation scan split over the ranks of ``torch.distributed`` (data parallel).

Where ``torch.distributed`` is initialised with more than one rank (``torchrun``, Lightning, accelerate),
``dc.saturation(model, data)`` reads ``data`` as this rank's own shard of the probe: each rank scans its
shard once and the statistics are combined by collectives (sums and maxima all-reduced in float64, the
betting scalars gathered in rank order), so that every rank returns the report of the one-process scan
of the union of the shards, concatenated in rank order (:mod:`numerics.distributed._shards`). Nothing
here runs, and nothing but ``torch.distributed`` is imported, where no process group is initialised.
"""
from numerics.distributed._comm import (
    active,
    all_gather_ints,
    all_max,
    all_sum,
    broadcast_object,
    comm_device,
    gather_objects,
    local_only,
    raise_together,
    rank,
    together,
    world_size,
)
from numerics.distributed._scan import sharded_accumulate
from numerics.distributed._shards import ShardSums

#: **Choice**: the bytes of per-sample factors of the bets (``X_i``, or ``m_i`` and ``phi_i``) a rank keeps, all sites
#: together, on the model's device; beyond them every rank makes a second forward+backward pass over its shard
#: instead (a chunk's bets wait for the directions that all earlier shards fix). Set it before the call.
BUFFER_BYTES = 1 << 30

__all__ = ["BUFFER_BYTES", "ShardSums", "active", "all_gather_ints", "all_max", "all_sum", "broadcast_object",
           "comm_device", "gather_objects", "local_only", "raise_together", "rank", "refuse", "sharded_accumulate",
           "together", "world_size"]


def refuse(what: str, missing: str) -> None:
    """Raises RuntimeError where :func:`active` (a process group of several ranks): ``what`` does not run
    data-parallel, because ``missing``; says how to run it in one process instead."""
    if active():
        raise RuntimeError(
            f"{what} does not run under torch.distributed (a process group of {world_size()} ranks is initialised; "
            f"this is rank {rank()}): {missing}. Run it in one process: outside the process group, or on one rank "
            "inside `with numerics.distributed.local_only():` (that rank then uses only its own data). "
            "dc.saturation is data-parallel: it scans each rank's shard and combines them.")
