"""Training the blocks of many validity draws together vs one after another (same run, ratios).

Run ``python benchmarks/bench_block_training.py`` (``--quick`` for small sizes). A w = 64
post-norm residual MLP ``f_old`` (float64, as the studies use), a readout block of width
16, ``N`` draws each with its own training sample of ``M`` states; every draw trains
``steps`` projected SGD steps with mini-batches of ``bs``. Compared, interleaved, medians:

* ``sequential``: :func:`numerics.training.train` once per draw (the run study's path
  before batching);
* ``batched``: :func:`numerics.block_training.train_readout_blocks` on all ``N`` draws at
  once (stacked ``V: (N, d, r)``, batched matmuls).

Target (issue 8): ``sequential / batched >= 1.8`` for w = 64.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.block_training import train_readout_blocks  # noqa: E402
from numerics.insertion import insert_block  # noqa: E402
from numerics.models import PostNormResMLP  # noqa: E402
from numerics.training import train  # noqa: E402

TARGETS = {"sequential_over_batched": (">=", 1.8)}


class _OnStates(torch.nn.Module):
    def __init__(self, expanded):
        super().__init__()
        self.expanded = expanded

    def forward(self, u):
        return self.expanded.top_from_u(u)


def _problem(width, depth, at, draws, M, seed=0):
    net = PostNormResMLP(16, width, depth, 1, seed=seed, eps_n=1e-3)
    for p in net.parameters():
        p.requires_grad_(False)
    ex = insert_block(net, at, "readout", width=16, seed=1)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        u = torch.stack([net.bottom(torch.randn(M, 16, generator=g, dtype=torch.float64), at) for _ in range(draws)])
    y = torch.randn(draws, M, 1, generator=g, dtype=torch.float64)
    return ex, u, y


def bench(width=64, depth=2, at=None, draws=16, M=20_000, steps=100, bs=256, repeats=3) -> dict:
    """Median seconds of both ways and their ratio (module docstring)."""
    at = depth if at is None else at
    ex, u, y = _problem(width, depth, at, draws, M)
    kw = dict(optimizer="sgd", lr=0.1, steps=steps, batch_size=bs, loss="squared")

    def sequential():
        for b in range(draws):
            model = ex.with_V(torch.zeros_like(ex.block.V))
            model.block.V.requires_grad_(True)
            train(_OnStates(model), {"V": model.block.V}, u[b], y[b], seed=b, caps={"V": 1.0}, **kw)

    def batched():
        train_readout_blocks(ex, u, y, caps=1.0, seeds=list(range(draws)), **kw)

    times = {"sequential": [], "batched": []}
    sequential(), batched()                     # warm-up
    for _ in range(repeats):
        for name, fn in (("sequential", sequential), ("batched", batched)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"sequential_s": med["sequential"], "batched_s": med["batched"],
            "sequential_over_batched": med["sequential"] / med["batched"]}


def run_all(quick: bool = False) -> dict:
    if quick:
        return {"w8_top": bench(width=8, depth=1, draws=3, M=500, steps=5, bs=32, repeats=1)}
    return {"w64_top": bench(width=64, depth=2), "w64_at0": bench(width=64, depth=2, at=0)}


def format_table(results: dict) -> str:
    """One line per value; ratios marked PASS/MISS against :data:`TARGETS`."""
    lines = [f"{'benchmark':12s} {'quantity':26s} {'value':>10s}  target"]
    for name, values in results.items():
        for key, value in values.items():
            mark = ""
            if key in TARGETS:
                op, bound = TARGETS[key]
                mark = f"{op} {bound:g}  {'PASS' if (value >= bound if op == '>=' else value <= bound) else 'MISS'}"
            lines.append(f"{name:12s} {key:26s} {value:10.4g}  {mark}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, float64, medians")
    print(format_table(run_all(args.quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
