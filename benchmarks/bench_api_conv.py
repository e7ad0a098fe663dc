"""Scan cost of ``dc.saturation`` on a user's 1-D residual CNN against one forward+backward (issue 16).

The MNIST-1D-sized net of the issue (stem conv to 32 channels, four blocks
``x = GroupNorm(x + conv(relu(conv(x))))``, mean pool, linear head; input ``(N, 1, 40)``),
float32. ``scan``: the streamed statistics of every block site, read channels-first
(``d = 32``, ``P = 40``), with the default families (linear, affine, readout of width 16):
one forward with zero tensors at the sites, one backward to the sites, features and sums.
``plain``: ``loss.backward()`` of the plain model over the same batches. Also the whole
``dc.saturation`` call (scan + curvature on 1024 samples + tests). Target: ``scan_over_plain <= 1.3``.
Run ``python benchmarks/bench_api_conv.py [--quick]``.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import depthcert as dc  # noqa: E402
from depthcert.api._data import as_stream  # noqa: E402
from depthcert.api._scan import accumulate, site_blocks  # noqa: E402
from tests.api._nets import ResCNN  # noqa: E402


def _median(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(quick: bool = False) -> dict:
    torch.manual_seed(0)
    n, c, length = (1024, 8, 16) if quick else (4096, 32, 40)
    net = ResCNN(c=c, depth=4, classes=10).eval()
    x, y = torch.randn(n, 1, length), torch.randint(0, 10, (n,))
    stream = as_stream((x, y), "data", net, batch_size=512)
    ce = lambda out, t: nn.functional.cross_entropy(out, t, reduction="none")  # noqa: E731
    blocks = site_blocks(net, "blocks.*", None, x[:2], ["linear", "affine", "readout"], 16, 0)

    def plain():
        for xb, yb in stream:
            net.zero_grad()
            ce(net(xb), yb).sum().backward()

    def scan():
        accumulate(net, stream, blocks, ce)

    t_plain, t_scan = _median(plain, 3), _median(scan, 3)
    t0 = time.perf_counter()
    rep = dc.saturation(net, (x, y))
    t_full = time.perf_counter() - t0
    out = {"n": n, "C": c, "L": length, "plain_s": t_plain, "scan_s": t_scan, "scan_over_plain": t_scan / t_plain,
           "saturation_call_s": t_full, "layouts": sorted({r["layout"] for r in rep.sites}), "d": rep.sites[0]["d"]}
    print(out)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
