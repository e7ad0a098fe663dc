"""Tests for numerics.studies.sweeps (resumable grids, plots) and numerics.studies.growth."""

import pytest

from plumbing.config import get_dotted, merge_config, set_dotted
from numerics.studies.run._outputs import plot_bound_vs_observed
from numerics.studies.growth import growth_vs_scratch
from numerics.studies.run import DEFAULT_DEMO_CONFIG
from numerics.studies.sweeps import grid_points, load_points, plot_sweep, point_key, run_sweep

TINY = merge_config(DEFAULT_DEMO_CONFIG, {
    "sizes": {"M": 1000, "K": 1000, "population": 1000},
    "reference": {"n": 400},
    "block_training": {"steps": 30, "batch_size": 256},
})


class _CountingRunner:
    def __init__(self, fail_at=None):
        self.calls, self.fail_at = [], fail_at

    def __call__(self, config):
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise KeyboardInterrupt  # simulate an interrupted sweep
        self.calls.append(config)
        return {"value": config["sizes"]["M"] * 2 + config["model"]["depth"]}


def test_sweep_saves_each_point_and_resumes(tmp_path):
    grid = {"sizes.M": [10, 20, 30], "model.depth": [1, 2]}
    first = _CountingRunner(fail_at=4)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(TINY, grid, tmp_path, runner=first, progress=False)
    assert len(load_points(tmp_path)) == 4  # finished points were saved before the interruption
    second = _CountingRunner()
    records = run_sweep(TINY, grid, tmp_path, runner=second, progress=False)
    assert len(second.calls) == 2  # only the missing points ran
    assert [r["result"]["value"] for r in records] == [p["sizes.M"] * 2 + p["model.depth"] for p in grid_points(grid)]
    third = _CountingRunner()
    run_sweep(TINY, grid, tmp_path, runner=third, progress=False)
    assert third.calls == []
    assert not list((tmp_path / "points").glob(".*.tmp"))


def test_sweep_recomputes_points_of_another_base_config(tmp_path):
    grid = {"sizes.M": [10, 20]}
    run_sweep(TINY, grid, tmp_path, runner=_CountingRunner(), progress=False)
    other = merge_config(TINY, {"seed": 12345})
    again = _CountingRunner()
    records = run_sweep(other, grid, tmp_path, runner=again, progress=False)
    assert len(again.calls) == 2                      # stale points are not silently reused
    assert all(r["config"]["seed"] == 12345 for r in records)


def test_sweep_does_not_mutate_base_config(tmp_path):
    base = merge_config(TINY, {})
    run_sweep(base, {"sizes.M": [5]}, tmp_path, runner=_CountingRunner(), progress=False)
    assert base == TINY


def test_grid_helpers():
    assert point_key({"a.b": 1, "c": 2}) == point_key({"c": 2, "a.b": 1})
    assert point_key({"a": 1}) != point_key({"a": 2})
    d = set_dotted({}, "x.y.z", 3)
    assert get_dotted(d, "x.y.z") == 3
    with pytest.raises(ValueError, match=r"grid\['a'\] == \[\], must hold at least one value"):
        grid_points({"a": []})


def test_real_sweep_and_plots_from_saved_results(tmp_path):
    records = run_sweep(TINY, {"sizes.M": [500, 1000]}, tmp_path, progress=False)
    assert all(r["result"]["quantities"]["M"] == r["params"]["sizes.M"] for r in records)
    eps = [r["result"]["eps_M"] for r in sorted(records, key=lambda r: r["params"]["sizes.M"])]
    assert eps[1] < eps[0]  # eps_M decreases with M
    png = plot_sweep(load_points(tmp_path), "sizes.M", ["eps_M", "routes.direct.bound"], tmp_path / "s.png")
    assert png.stat().st_size > 1000
    png2 = plot_bound_vs_observed(records[0]["result"], tmp_path / "b.png")
    assert png2.stat().st_size > 1000


def test_growth_vs_scratch_light():
    cfg = merge_config(TINY, {"reference": {"n": 300}, "sizes": {"population": 2000}})
    out = growth_vs_scratch(cfg, grow_steps=20, base_steps=20)
    for key in ("R_grown", "R_scratch", "train_loss_grown", "train_loss_scratch", "relative_test_gain"):
        assert isinstance(out[key], float)
    assert out["R_grown_stderr"] > 0
    assert out["function_preserving_at_insertion"] is True     # growth starts from f_old exactly
    assert out["same_architecture"] is True                    # Paper B: same final architecture
    assert out["steps"]["grown"] == out["steps"]["scratch"] == 40
    gain = (out["R_scratch"] - out["R_grown"]) / out["R_scratch"]
    assert out["relative_test_gain"] == pytest.approx(gain)
