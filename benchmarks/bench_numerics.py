"""Speed benchmarks of the numerics estimators, as ratios to baselines measured in the same run.

Run ``python benchmarks/bench_numerics.py`` (add ``--quick`` for small sizes). Every
benchmark interleaves the baseline and the candidate and reports medians, float32,
``torch.set_num_threads(2)``. Targets (issue 4):

* per-sample activation gradients at all blocks + AG_max + all cross-gradients
  <= 1.1x one plain forward+backward, and >= 20x faster than a per-sample backward loop;
* U-statistic for ``||G||^2`` <= 2x the cross-gradient matmul (materialising ``X_i``: ~200x);
* batched Monte-Carlo Rademacher >= 3x faster than a Python loop over sign draws;
* a w=256 post-norm MLP training step >= 60% of this machine's matmul throughput
  (reported for branch width 4w = 1024 and, for information, for branch width w).

On a shared machine, OpenMP threads contend with other processes: compare runs with
``--threads 1`` and ``--threads 2``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics._numerics import per_sample_loss  # noqa: E402
from numerics.estimators import first_order_scan, u_statistic_sq_norm  # noqa: E402
from numerics.estimators._rademacher import rademacher_readout_mc  # noqa: E402
from numerics.insertion import ResidualBlock  # noqa: E402
from numerics.models import PostNormResMLP  # noqa: E402

F32 = torch.float32


def _interleaved(fns: dict, repeats: int, warmup: int = 1) -> dict:
    """Median wall time of each callable, calls interleaved so load noise is shared."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def _mlp_problem(n, width, depth, d_in, n_out, seed=0, hidden=None):
    net = PostNormResMLP(d_in, width, depth, n_out, hidden=hidden, seed=seed, dtype=F32)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g, dtype=F32)
    y = torch.randint(0, n_out, (n,), generator=g)
    return net, x, y


def bench_activation_gradients(n=512, width=256, depth=8, d_in=64, n_out=10, r=16, n_loop=32,
                               repeats=7) -> dict:
    """All ``m_l``, ``G_l``, AG_max (one backward) vs plain forward+backward vs per-sample loop."""
    net, x, y = _mlp_problem(n, width, depth, d_in, n_out)
    blocks = {l: ResidualBlock("readout", width, r, seed=l, dtype=F32) for l in range(depth + 1)}

    def plain():
        net.zero_grad(set_to_none=True)
        per_sample_loss(net(x), y, "cross_entropy").sum().backward()

    def scan():
        first_order_scan(net, x, y, blocks)

    def loop():  # per-sample backward for n_loop samples (extrapolated to n below)
        for i in range(n_loop):
            first_order_scan(net, x[i:i + 1], y[i:i + 1], blocks)

    t = _interleaved({"plain": plain, "scan": scan, "loop": loop}, repeats)
    loop_full = t["loop"] * n / n_loop
    return {"plain_fwd_bwd_s": t["plain"], "scan_s": t["scan"], "loop_s_extrapolated": loop_full,
            "scan_over_plain": t["scan"] / t["plain"], "loop_over_scan": loop_full / t["scan"]}


def bench_u_statistic(n=2048, d=256, r=32, repeats=7) -> dict:
    """Factored U-statistic vs the cross-gradient matmul vs materialising ``X_i``."""
    g = torch.Generator().manual_seed(0)
    m, phi = torch.randn(n, d, generator=g, dtype=F32), torch.randn(n, r, generator=g, dtype=F32)

    def matmul():
        return m.T @ phi

    def ustat():
        return u_statistic_sq_norm(m, phi)

    def materialised():
        X = m[:, :, None] * phi[:, None, :]
        return float((X.sum(0).pow(2).sum() - X.pow(2).sum()) / (n * (n - 1)))

    t = _interleaved({"matmul": matmul, "ustat": ustat, "materialised": materialised}, repeats)
    return {"matmul_s": t["matmul"], "ustat_s": t["ustat"], "materialised_s": t["materialised"],
            "ustat_over_matmul": t["ustat"] / t["matmul"],
            "materialised_over_matmul": t["materialised"] / t["matmul"]}


def bench_rademacher(n=512, d=64, r=16, n_draws=200, repeats=5) -> dict:
    """Batched Monte-Carlo readout Rademacher (one matmul) vs a Python loop over draws."""
    phi = torch.rand(n, r, generator=torch.Generator().manual_seed(0), dtype=F32)

    def batched():
        return rademacher_readout_mc(phi, d, 1.0, n_draws, seed=1)

    def loop():
        gen = torch.Generator().manual_seed(1)
        total = 0.0
        for _ in range(n_draws):
            s = torch.randint(0, 2, (n, d), generator=gen).to(F32) * 2 - 1
            total += float((s.T @ phi).norm())
        return total / (n_draws * n)

    t = _interleaved({"batched": batched, "loop": loop}, repeats)
    return {"batched_s": t["batched"], "loop_s": t["loop"], "loop_over_batched": t["loop"] / t["batched"]}


def _linear_flops(net: PostNormResMLP, batch: int) -> float:
    """Matmul FLOPs of one training step: 2bio forward, 2bio weight grad, 2bio input grad
    (no input grad for the embedding, whose input is data)."""
    total = 0.0
    for name, mod in net.named_modules():
        if isinstance(mod, torch.nn.Linear):
            bio = batch * mod.in_features * mod.out_features
            total += (4 if name == "embed" else 6) * bio
    return total


def bench_training_throughput(batch=512, width=256, depth=4, d_in=256, n_out=10, steps=5, repeats=5,
                              hidden=None, compiled=True) -> dict:
    """GFLOP/s of a post-norm MLP SGD step (matmul FLOPs only) vs ``(batch, w) @ (w, w)`` matmuls.

    ``hidden`` is the branch width (default ``width``); the elementwise work of the
    normalisations is a larger share when ``hidden == width``. The eager step is
    memory-bound there (~0.5 of matmul throughput on 2 cores; without the norms ~0.7);
    ``compiled`` also times the step through ``torch.compile`` -- the same mechanism as
    ``numerics.training.train(..., compile=True)`` -- whose fused kernels reach the target.
    ``train_over_matmul`` is the compiled ratio when ``compiled``, else the eager one.
    """
    net, x, y = _mlp_problem(batch, width, depth, d_in, n_out, hidden=hidden)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)
    a = torch.randn(batch, width, dtype=F32)
    w = torch.randn(width, width, dtype=F32)
    flops = _linear_flops(net, batch)
    n_mm = max(1, round(flops / (2 * batch * width * width)))

    def stepper(model):
        def step():
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                per_sample_loss(model(x), y, "cross_entropy").mean().backward()
                opt.step()
        return step

    def matmuls():
        for _ in range(steps * n_mm):
            torch.mm(a, w)

    fns = {"step": stepper(net), "matmul": matmuls}
    if compiled:
        fns["compiled"] = stepper(torch.compile(net))
        fns["compiled"]()   # compilation happens here, outside the timed repeats
    t = _interleaved(fns, repeats)
    mm_gflops = steps * n_mm * 2 * batch * width * width / t["matmul"] / 1e9
    out = {"eager_gflops": steps * flops / t["step"] / 1e9, "matmul_gflops": mm_gflops}
    out["eager_over_matmul"] = out["eager_gflops"] / mm_gflops
    if compiled:
        out["compiled_gflops"] = steps * flops / t["compiled"] / 1e9
    out["train_over_matmul"] = out.get("compiled_gflops", out["eager_gflops"]) / mm_gflops
    return out


TARGETS = {
    "scan_over_plain": ("<=", 1.1), "loop_over_scan": (">=", 20.0), "ustat_over_matmul": ("<=", 2.0),
    "loop_over_batched": (">=", 3.0), "train_over_matmul": (">=", 0.6),
}


def run_all(quick: bool = False) -> dict:
    """Every benchmark (small sizes when ``quick``), results keyed by benchmark name."""
    if quick:
        return {"activation_gradients": bench_activation_gradients(64, 32, 2, 8, 3, 4, 4, 2),
                "u_statistic": bench_u_statistic(64, 16, 8, 2),
                "rademacher": bench_rademacher(32, 8, 4, 20, 2),
                "training_hidden_4w": bench_training_throughput(32, 32, 2, 16, 3, 1, 2, hidden=128, compiled=False),
                "training_hidden_w": bench_training_throughput(32, 32, 2, 16, 3, 1, 2, compiled=False)}
    return {"activation_gradients": bench_activation_gradients(),
            "u_statistic": bench_u_statistic(),
            "rademacher": bench_rademacher(),
            "training_hidden_4w": bench_training_throughput(hidden=1024),
            "training_hidden_w": bench_training_throughput()}


def format_table(results: dict) -> str:
    """One line per measured value, ratios marked against their targets."""
    lines = [f"{'benchmark':22s} {'quantity':26s} {'value':>12s}  target"]
    for bench, values in results.items():
        for key, value in values.items():
            target = TARGETS.get(key)
            mark = ""
            if target:
                ok = value <= target[1] if target[0] == "<=" else value >= target[1]
                mark = f"{target[0]} {target[1]:g}  {'PASS' if ok else 'MISS'}"
            lines.append(f"{bench:22s} {key:26s} {value:12.4g}  {mark}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, float32, medians")
    print(format_table(run_all(args.quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
