"""Run by ``torchrun`` from ``tests/api/test_distributed_scan.py`` (2 ``gloo`` ranks on CPU); its model and
data are also imported by the test for the one-process reports on the union of the shards.

Each rank writes, under ``argv[1]``: ``rank{r}.json`` (the scan of its shard, the bets' factors kept),
``rank{r}_pass2.json`` (the same with ``BUFFER_BYTES = 0``: the bets from a second pass), ``rank{r}_curv.json``
(``curvature_data`` given, the same on both ranks), ``rank{r}_local.json`` (the whole union on each rank
inside ``numerics.distributed.local_only()``), ``rank{r}_unreduced.json`` (a wrong variant: the sums
not all-reduced), ``rank{r}_reversed.json`` (a wrong variant: the bets' scalars gathered in reversed rank
order, as an arrival order could) and ``rank{r}_errors.json`` (what each refused call said).
"""
from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

import torch
from torch import nn

SIZES = (200, 400)   # unequal shards: rank 1's part of the probe starts off the batch grid, inside a chunk before the last refresh
KW = dict(sites=["blocks.0", "blocks.1", "wide"], layout={"blocks.0": "NLD", "blocks.1": "NLD", "wide": "NLD"},
          curvature_n=64, batch_size=64)


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(d, d), nn.Tanh())

    def forward(self, h):
        return h + self.f(h)


class Net(nn.Module):
    """Tokens (n, 4, 5) -> two residual blocks on (n, 4, 12) -> a block on (n, 4, 136) -> mean -> 3 logits: token
    sites (T = 4), one with d > 128 (E estimated from the first 128 token rows of each batch part)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(5, 12)
        self.blocks = nn.ModuleList([Block(12), Block(12)])
        self.lift = nn.Linear(12, 136)
        self.wide = Block(136)
        self.head = nn.Linear(136, 3)

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = b(h)
        return self.head(self.wide(self.lift(h)).mean(dim=1))


def model() -> nn.Module:
    torch.manual_seed(0)
    return Net().double()


def union(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """The data of both ranks, concatenated in rank order (float64)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(sum(SIZES), 4, 5, generator=g, dtype=torch.float64)
    y = ((x[:, :, 0].sum(dim=1) > 0).long() + (x[:, 0, 1] > 0.5).long()) % 3
    return x, y


def shard(rank: int, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = union(seed)
    lo = sum(SIZES[:rank])
    return x[lo: lo + SIZES[rank]], y[lo: lo + SIZES[rank]]


def curvature() -> tuple[torch.Tensor, torch.Tensor]:
    x, y = union(seed=2)
    return x[:80], y[:80]


def _nudged(rank: int) -> nn.Module:
    """The test's network, with one weight changed by 1e-9 on rank 1."""
    net = model()
    if rank == 1:
        with torch.no_grad():
            net.head.weight[0, 0] += 1e-9
    return net


def _refusals(dc, net, rank: int) -> dict:
    out = {}
    x, y = shard(rank)
    cases = {
        "same_data": lambda: dc.saturation(net, union(), **KW),
        "small_rank0": lambda: dc.saturation(net, (x[:10], y[:10]) if rank == 0 else (x, y), **KW),
        "curvature_on_rank0_only": lambda: dc.saturation(net, (x, y), curvature_data=curvature() if rank == 0 else None, **KW),
        "nan_on_rank1": lambda: dc.saturation(net, (x.index_fill(0, torch.tensor([100]), float("nan")) if rank == 1 else x, y),
                                              **KW),
        "different_model": lambda: dc.saturation(_nudged(rank), (x, y), **KW),
        "grow": lambda: dc.grow(net, train=(x, y), probe=(x, y), sites=["wide"], max_blocks=1, steps=1, curvature_n=16),
        "certify_insertion": lambda: dc.certify_insertion(net, "wide", (x[:100], y[:100]), (x[100:200], y[100:200]),
                                                          (x[200:], y[200:])),
    }
    for name, call in cases.items():
        try:
            call()
            out[name] = None
        except (ValueError, RuntimeError) as e:
            out[name] = f"{type(e).__name__}: {e}"
    return out


def _pieces(gather, t, device) -> list:
    """Each rank's part of ``gather(t)``, in rank order."""
    from numerics.distributed import all_gather_ints

    counts, whole = all_gather_ints(t.numel(), device), gather(t, device)
    return list(torch.split(whole, counts))


def main(out: Path) -> None:
    import torch.distributed as dist

    import depthcert as dc
    import numerics.distributed._comm as comm
    import numerics.distributed._scan as dscan
    import numerics.distributed as nd

    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))   # a rank left waiting fails, not hangs
    rank, net = dist.get_rank(), model()
    data = shard(rank)
    dc.saturation(net, data, **KW).to_json(out / f"rank{rank}.json")
    dc.saturation(net, data, curvature_data=curvature(), **KW).to_json(out / f"rank{rank}_curv.json")
    budget, nd.BUFFER_BYTES = nd.BUFFER_BYTES, 0
    dc.saturation(net, data, **KW).to_json(out / f"rank{rank}_pass2.json")
    nd.BUFFER_BYTES = budget
    with nd.local_only():   # the escape hatch (the training-loop callbacks use it): the whole union, on each rank alone
        dc.saturation(net, union(), **KW).to_json(out / f"rank{rank}_local.json")
    (out / f"rank{rank}_errors.json").write_text(json.dumps(_refusals(dc, net, rank), indent=1))
    reduce = dscan.reduce_sums   # the wrong variant: each rank keeps its own sums (n and maxima still reduced)
    dscan.reduce_sums = lambda s, device: (s.vec.clone(), reduce(s, device)[1], reduce(s, device)[2])
    dc.saturation(net, data, **KW).to_json(out / f"rank{rank}_unreduced.json")
    dscan.reduce_sums = reduce
    gather = comm.all_gather_cat   # the wrong variant: the betting scalars in arrival order (here: reversed ranks)
    comm.all_gather_cat = lambda t, device: torch.cat(list(reversed(_pieces(gather, t, device))))
    dc.saturation(net, data, **KW).to_json(out / f"rank{rank}_reversed.json")
    comm.all_gather_cat = gather
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    main(Path(sys.argv[1]))
