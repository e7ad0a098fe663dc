"""Smoke test of benchmarks/bench_numerics.py at tiny sizes (executes; asserts no timings)."""
import math

import pytest
import torch

from benchmarks import bench_numerics




def _marks(table: str) -> dict:
    """``{quantity: "PASS" | "MISS"}`` read back from a formatted table."""
    out = {}
    for line in table.splitlines()[1:]:
        parts = line.split()
        if parts[-1] in ("PASS", "MISS"):
            out[parts[1]] = parts[-1]
    return out


def _expected_marks(results: dict, targets: dict) -> dict:
    """Independent: the verdict each targeted value must get."""
    out = {}
    for values in results.values():
        for key, value in values.items():
            if key in targets:
                op, bound = targets[key]
                out[key] = "PASS" if (value <= bound if op == "<=" else value >= bound) else "MISS"
    return out


def test_quick_benchmarks_run_and_report_every_targeted_ratio():
    results = bench_numerics.run_all(quick=True)
    values = {k: v for bench in results.values() for k, v in bench.items()}
    assert set(bench_numerics.TARGETS) <= set(values)
    assert all(math.isfinite(v) and v > 0 for v in values.values())
    table = bench_numerics.format_table(results)
    assert _marks(table) == _expected_marks(results, bench_numerics.TARGETS)


@pytest.mark.parametrize("module", ["bench_numerics", "bench_block_training"])
def test_table_verdicts_follow_the_targets(module):
    # a synthetic result on each side of every target: the table must say PASS / MISS accordingly
    import importlib

    bench = importlib.import_module(f"benchmarks.{module}")
    for key, (op, bound) in bench.TARGETS.items():
        good = bound * (0.5 if op == "<=" else 2.0)
        bad = bound * (2.0 if op == "<=" else 0.5)
        assert _marks(bench.format_table({"b": {key: good}})) == {key: "PASS"}
        assert _marks(bench.format_table({"b": {key: bad}})) == {key: "MISS"}


def test_quick_block_training_benchmark_runs():
    from benchmarks import bench_block_training

    results = bench_block_training.run_all(quick=True)
    (values,) = results.values()
    assert all(math.isfinite(v) and v > 0 for v in values.values())
    assert values["sequential_over_batched"] == pytest.approx(values["sequential_s"] / values["batched_s"])


def test_linear_flop_count():
    net = bench_numerics.PostNormResMLP(4, 8, 1, 2, dtype=torch.float32)
    # embed 4*(b*4*8), branch 2 layers 6*(b*8*8) each, head 6*(b*8*2), b = 3
    assert bench_numerics._linear_flops(net, 3) == 3 * (4 * 32 + 2 * 6 * 64 + 6 * 16)
