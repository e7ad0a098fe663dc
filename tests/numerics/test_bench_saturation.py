"""Smoke test of benchmarks/bench_saturation.py at tiny sizes (executes every case; asserts no timings:
speed is shown by the benchmark itself, run as its docstring says)."""
import math

import pytest

from benchmarks import bench_saturation


def test_quick_benchmark_covers_every_architecture_with_the_targeted_ratio():
    results = bench_saturation.run_all(quick=True, full=False)
    assert set(results) == {"resnet2d_n128", "resnet2d_n64", "bert_seq16", "gpt_d16_l1", "mlp_w32_d2"}
    for name, values in results.items():
        assert values["sites"] >= 1 and math.isfinite(values["scan_over_plain"]) and values["scan_over_plain"] > 0
        assert values["scan_over_plain"] == pytest.approx(values["scan_s"] / values["plain_fwd_bwd_s"])
        assert "full_s" not in values
    conv = results["resnet2d_n64"]
    assert (conv["sites"], conv["n"], conv["d"], conv["P"], conv["r"]) == (3, 64, 8, 64, 8 + 1 + 16)   # NCHW, 8x8
    assert (results["bert_seq16"]["P"], results["mlp_w32_d2"]["P"]) == (16, 1)
    table = bench_saturation.format_table(results)
    assert "scan_over_plain" in table and ("PASS" in table or "MISS" in table)


def test_quick_full_call_is_split_into_its_parts():
    """The whole ``dc.saturation`` call's parts add up to it; the curvature sample is ``n // 4``."""
    values = bench_saturation.run_all(quick=True, only={"resnet2d_n64"})["resnet2d_n64"]
    parts = values["probe_s"] + values["beta_s"] + values["gain_s"] + values["fixed_s"]
    assert parts == pytest.approx(values["full_s"]) and min(values["probe_s"], values["beta_s"], values["gain_s"]) > 0
    passes = values["forward_passes"] + values["first_order_passes"] + values["second_order_passes"]
    assert values["curvature_n"] == 64 // 4 and passes >= 9   # 3 sites x 2 + 3 families
    assert values["full_over_plain"] == pytest.approx(values["full_s"] / values["plain_fwd_bwd_s"])


def test_numerics_level_scan_of_issue_10_still_measures():
    import torch

    from numerics.models import PostNormResMLP

    net = PostNormResMLP(8, 16, 2, 3, dtype=torch.float32)
    x, y = torch.randn(40, 8), torch.randint(0, 3, (40,))
    values = bench_saturation.bench_scan(net, x, y, repeats=1, batch=16, n_chunks=2)
    assert values["sites"] == 3 and values["probe_n"] == 40 and values["scan_over_plain"] > 0
