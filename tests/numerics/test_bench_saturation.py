"""Smoke test of benchmarks/bench_saturation.py at tiny sizes (executes; asserts no timings)."""
import math

from benchmarks import bench_saturation


def test_quick_saturation_benchmark_reports_the_targeted_ratio():
    results = bench_saturation.run_all(quick=True)
    assert set(results) == {"mlp_w256_d8", "gpt_d128_l4"}
    for values in results.values():
        assert values["sites"] >= 2 and math.isfinite(values["scan_over_plain"]) and values["scan_over_plain"] > 0
    table = bench_saturation.format_table(results)
    assert "scan_over_plain" in table and ("PASS" in table or "MISS" in table)
