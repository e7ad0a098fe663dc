"""Smoke test of benchmarks/bench_numerics.py at tiny sizes (executes; asserts no timings)."""
import math

import pytest
import torch

from benchmarks import bench_numerics




def test_quick_benchmarks_run_and_report_every_targeted_ratio():
    results = bench_numerics.run_all(quick=True)
    values = {k: v for bench in results.values() for k, v in bench.items()}
    assert set(bench_numerics.TARGETS) <= set(values)
    assert all(math.isfinite(v) and v > 0 for v in values.values())
    table = bench_numerics.format_table(results)
    assert "scan_over_plain" in table and ("PASS" in table or "MISS" in table)


def test_linear_flop_count():
    net = bench_numerics.PostNormResMLP(4, 8, 1, 2, dtype=torch.float32)
    # embed 4*(b*4*8), branch 2 layers 6*(b*8*8) each, head 6*(b*8*2), b = 3
    assert bench_numerics._linear_flops(net, 3) == 3 * (4 * 32 + 2 * 6 * 64 + 6 * 16)
