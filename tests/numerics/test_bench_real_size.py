"""``bench_saturation.py --real-size`` / ``--scaling`` and ``gpu_real_size.py`` (issue 38), without the heavy runs:
the ResNet-50 rebuild's shape, the summary's arithmetic on planted measurements, a tiny scaling run, and the GPU
script's parsing without CUDA. The measured numbers are in docs/bench-saturation-real-size/ and
docs/bench-saturation-scaling/ (tests/test_quoted_numbers.py checks the quoted ones)."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import _real_size, bench_saturation, gpu_real_size

ROOT = Path(__file__).resolve().parents[2]


def test_the_resnet50_rebuild_has_torchvisions_shape_and_twelve_shape_keeping_sites():
    net = _real_size.ResNet50().eval()
    assert sum(p.numel() for p in net.parameters()) == 25_557_032          # torchvision's documented count
    sites = _real_size.CASES["resnet50"]["sites"]
    assert len(sites) == 12 and len(set(sites)) == 12
    shapes = {}
    hooks = [net.get_submodule(s).register_forward_hook(lambda m, a, o, s=s: shapes.__setitem__(s, (a[0].shape, o.shape)))
             for s in sites + ["layer1.0", "layer2.0"]]
    with torch.no_grad():
        net(torch.randn(1, 3, 224, 224))
    for h in hooks:
        h.remove()
    assert all(shapes[s][0] == shapes[s][1] for s in sites)                   # every scanned site keeps its shape
    assert shapes["layer1.0"][0] != shapes["layer1.0"][1] and shapes["layer2.0"][0] != shapes["layer2.0"][1]
    assert shapes["layer4.2"][1] == (1, 2048, 7, 7)


def _row(kind, cpu, peak_mb, base_mb=500, imports_mb=300):
    mb = 1 << 20
    row = {"case": "c", "kind": kind, "n": 16, "wall_s": 2 * cpu, "cpu_s": cpu, "rss_imports_b": imports_mb * mb,
           "rss_base_b": base_mb * mb, "rss_peak_b": peak_mb * mb, "parameters": 10, "model": "m"}
    if kind not in ("plain", "scan"):
        row.update(verdict="improvable", best_site="s", costs={"scan_s": 1.0}, curvature_sites=3, sites=12, n_probe=12,
                   n_curvature=2)
    return row


def test_the_real_size_summary_is_the_ratio_of_cpu_times_and_of_peaks_above_the_baseline():
    rows = {"plain": _row("plain", 10.0, 1500), "scan": _row("scan", 12.0, 1400), "full": _row("full", 25.0, 2200),
            "auto": _row("auto", 19.0, 1900), "verdict_only": _row("verdict_only", 12.5, 1400)}
    s = bench_saturation.real_size_summary(rows)
    assert s["scan_over_plain"] == pytest.approx(1.2) and s["full_over_plain"] == pytest.approx(2.5)
    assert s["scan_wall_over_plain"] == pytest.approx(1.2)
    assert s["plain_peak_mb"] == pytest.approx(1200)                          # 1500 - 300 (imports)
    assert s["scan_extra_mem_mb"] == pytest.approx(900 - 1000)                # (1400 - 500) - (1500 - 500)
    assert s["full_extra_mem_over_plain"] == pytest.approx(700 / 1200)
    assert s["passes"] == {"scan_over_plain": True, "full_over_plain": False, "auto_over_plain": True,
                           "scan_extra_mem_over_plain": True}
    text = bench_saturation.format_real_size({"c": {"summary": s, "model": "m"}})
    assert "full_over_plain" in text and "FAIL" in text and "PASS" in text


def test_the_scaling_run_fits_the_exponent_of_its_own_rows():
    res = bench_saturation.run_scaling(1, report=lambda line: None, axes={"n": (64, 128), "sites": (1, 2)},
                                       base={"n": 64, "sites": 1, "width": 16})
    rows = res["n"]["rows"]
    expected = math.log(rows[1]["scan_s"] / rows[0]["scan_s"]) / math.log(2)   # two points: the slope through them
    assert res["n"]["scan_exponent"] == pytest.approx(expected)
    assert [r["sites"] for r in res["sites"]["rows"]] == [1, 2]
    assert "fitted exponent" in bench_saturation.format_scaling(res)
    assert bench_saturation._fit_exponent([1, 2, 4], [3, 12, 48]) == pytest.approx(2.0)


def test_the_gpu_script_parses_and_refuses_without_cuda(tmp_path):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    help_ = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_real_size.py"), "--help"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert help_.returncode == 0 and "--cases" in help_.stdout and "--rtol" in help_.stdout
    bad = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_real_size.py"), "--repeats", "0"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "--repeats == 0, must be >= 1" in bad.stderr
    if not torch.cuda.is_available():
        run = subprocess.run([sys.executable, str(ROOT / "benchmarks/gpu_real_size.py")], capture_output=True, text=True,
                             env=env, timeout=120)
        assert run.returncode == 2 and "no CUDA device" in run.stderr and "Traceback" not in run.stderr


def test_the_gpu_scripts_comparison_flags_a_difference_beyond_tolerance():
    class Rep:
        def __init__(self, v):
            self.sites = [{"site": "a", **{k: 1.0 for k in gpu_real_size.COMPARED}, "G_sq": v}]

    assert gpu_real_size.compare(Rep(1.0), Rep(1.0 + 1e-5), 1e-3) == []
    assert gpu_real_size.compare(Rep(1.0), Rep(1.01), 1e-3) == ["a.G_sq: cpu 1, cuda 1.01"]


def test_the_stored_real_size_run_has_every_case_and_target():
    stored = ROOT / "docs/bench-saturation-real-size/real_size.json"
    if not stored.exists():
        pytest.skip("not stored yet")
    data = json.loads(stored.read_text())
    assert set(data["results"]) == {"gpt2_small", "resnet50"} and "--real-size" in data["command"]
    for res in data["results"].values():
        assert set(res["summary"]["passes"]) == set(bench_saturation.REAL_SIZE_TARGETS)
        assert res["summary"]["sites"] == 12


@pytest.mark.parametrize("argv,msg", [(["--n", "64"], "--n apply only with --real-size"),
                                      (["--scaling", "--batch-size", "4"], "--batch-size apply only with --real-size"),
                                      (["--real-size", "--batch-size", "0"], "--batch-size == 0, must be >= 1"),
                                      (["--real-size", "--n", "4"], "--n == 4, must be >= 8")])
def test_real_size_options_are_refused_where_they_would_be_ignored_or_out_of_range(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        bench_saturation.main(argv)
    assert e.value.code == 2 and msg in capsys.readouterr().err
