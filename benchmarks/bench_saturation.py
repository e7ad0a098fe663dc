"""Speed of the saturation scan against one forward+backward of the same model, measured in the same run.

Run ``python benchmarks/bench_saturation.py`` (``--quick`` for tiny sizes). The scan is
:func:`numerics.estimators._site_scan.accumulate_site_stats` at *every* site with the CLI's
default families (linear, affine, readout of width 16) over a probe in batches, with the
betting test's 16 chunks: per batch one forward with zero tensors added at the sites, one
backward to the sites, the features and the streaming statistics (cross-gradients,
feature second moments, ``||X_i||``, the bets, one direction solve per chunk). The baseline
is ``loss.backward()`` of the plain model (every parameter gradient) over the same batches.
Target (issue 10): ``scan_over_plain <= 1.3``. Medians of interleaved calls, float32.
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
from numerics.estimators._site_scan import accumulate_site_stats  # noqa: E402
from numerics.families import ProtocolBlock  # noqa: E402
from numerics.models import PostNormResMLP  # noqa: E402
from numerics.sites import SiteProbe, resolve_sites  # noqa: E402
from numerics.zoo import CharGPT  # noqa: E402

F32 = torch.float32
FAMILIES = ["linear", "affine", "readout"]
TARGETS = {"scan_over_plain": ("<=", 1.3)}


def _interleaved(fns: dict, repeats: int) -> dict:
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _blocks(net, x, width=16):
    sites = resolve_sites(net, None, x[:2])
    with torch.no_grad(), SiteProbe(net, sites) as probe:
        net(x[:2])
        shapes = {s: tuple(probe.states[s].shape[1:]) for s in sites}
    return {s: ProtocolBlock(shapes[s], FAMILIES, width, k, F32) for k, s in enumerate(sites)}


def bench_scan(net, x, y, repeats: int, batch: int, n_chunks: int = 16) -> dict:
    """The scan of a probe ``x`` (batches of ``batch``, ``n_chunks`` betting chunks, as the CLI
    runs it) vs plain forward + backward over the same batches."""
    blocks = _blocks(net, x)
    starts = range(0, x.shape[0], batch)

    def plain():
        for i in starts:
            net.zero_grad(set_to_none=True)
            per_sample_loss(net(x[i:i + batch]), y[i:i + batch], "cross_entropy").sum().backward()

    def scan():
        accumulate_site_stats(net, x, y, blocks, "cross_entropy", batch_size=batch, n_chunks=n_chunks)

    t = _interleaved({"plain": plain, "scan": scan}, repeats)
    return {"sites": len(blocks), "probe_n": x.shape[0], "plain_fwd_bwd_s": t["plain"], "scan_s": t["scan"],
            "scan_over_plain": t["scan"] / t["plain"]}


def run_all(quick: bool = False) -> dict:
    g = torch.Generator().manual_seed(0)
    if quick:
        mlp, n, T, gpt = PostNormResMLP(16, 32, 2, 4, dtype=F32), 64, 8, CharGPT(20, 16, 1, heads=2, seq_len=8)
        batch, n_chunks, reps = 32, 3, 2
    else:
        mlp, n, T = PostNormResMLP(64, 256, 8, 10, hidden=1024, dtype=F32), 4096, 64
        gpt = CharGPT(98, 128, 4, heads=4, seq_len=T)
        batch, n_chunks, reps = 512, 16, 5
    x, y = torch.randn(n, mlp.embed.in_features, generator=g), torch.randint(0, mlp.head.out_features, (n,), generator=g)
    ids = torch.randint(0, gpt.head.out_features, (n // 8, T + 1), generator=g)
    return {"mlp_w256_d8": bench_scan(mlp, x, y, reps, batch, n_chunks),
            "gpt_d128_l4": bench_scan(gpt, ids[:, :-1], ids[:, 1:], reps, batch // 8, n_chunks)}


def format_table(results: dict) -> str:
    lines = [f"{'benchmark':16s} {'quantity':18s} {'value':>12s}  target"]
    for bench, values in results.items():
        for key, value in values.items():
            mark = ""
            if key in TARGETS:
                op, lim = TARGETS[key]
                mark = f"{op} {lim:g}  {'PASS' if (value <= lim if op == '<=' else value >= lim) else 'MISS'}"
            lines.append(f"{bench:16s} {key:18s} {value:12.4g}  {mark}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, float32, medians (same run)")
    print(format_table(run_all(args.quick)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
