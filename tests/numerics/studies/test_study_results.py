"""Typed study results (issue 15): ``run(config) -> Result`` beside the dict entry points, with writer and loader."""
from __future__ import annotations

import dataclasses
import json

import pytest

from numerics.studies import run as run_study
from numerics.studies import validity
from tests.numerics.studies.test_run_config import TINY


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return run_study.run(TINY), tmp_path_factory.mktemp("typed")


def test_run_returns_a_frozen_typed_result_of_the_dict(tiny):
    res, _ = tiny
    d = res.to_dict()
    assert isinstance(res, run_study.RunResult)
    assert (res.L_test_old, res.L_test_new, res.R_old, res.R_new, res.level) == \
        (d["L_test_old"], d["L_test_new"], d["R_old"], d["R_new"], d["level"])
    assert res.any_certified is d["routes"]["any"]["certified"] and d["config"]["sizes"]["M"] == TINY["sizes"]["M"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.L_test_new = 0.0
    with pytest.raises(TypeError):
        res.data["L_test_new"] = 0.0          # the content is read-only too
    d["L_test_new"] = -1.0                     # to_dict is a fresh copy
    assert res.to_dict()["L_test_new"] == res.L_test_new


def test_run_writer_and_loader_round_trip(tiny):
    res, out = tiny
    paths = run_study.write(res, out)
    assert {"result", "bounds_config", "figure"} <= set(paths)
    back = run_study.load(out)
    assert back.to_dict() == json.loads((out / "result.json").read_text())
    assert (back.L_test_old, back.L_test_new, back.any_certified) == (res.L_test_old, res.L_test_new, res.any_certified)


def test_validity_result_writer_and_loader(tmp_path):
    content = {"draws": 3, "draws_requested": 4, "draws_not_run": 1, "vary": "seed", "test_level": 0.05,
               "significant": False, "routes": {"population": {"failures": 0}}}
    res = validity.ValidityResult.from_dict(content)
    assert (res.draws, res.vary, res.significant) == (3, "seed", False)
    validity.write(res, tmp_path)
    assert validity.load(tmp_path) == res and validity.load(tmp_path / "validity.json").to_dict() == content
    with pytest.raises(KeyError, match="significant"):
        validity.ValidityResult.from_dict({k: v for k, v in content.items() if k != "significant"})


def test_sweeps_run_from_a_file_and_load(tmp_path):
    from numerics.studies import sweeps

    (tmp_path / "exp.toml").write_text("seed = 0\n[sizes]\nM = 1000\n")
    (tmp_path / "sweep.toml").write_text('base = "exp.toml"\n[grid]\n"model.depth" = [1, 2]\n')
    out = sweeps.run(tmp_path / "sweep.toml", tmp_path / "out", runner="tests.numerics.studies._fake_runner:run",
                     progress=False)
    assert isinstance(out, sweeps.SweepOutcome) and (out.cells, out.computed) == (2, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.cells = 3
    assert sorted(r["value"] for r in sweeps.load(tmp_path / "out")) == [10.0, 20.0]    # 10 depth + seed


def test_saturation_run_is_typed_and_reads_as_its_dict(tmp_path):
    """``saturation.run`` -> :class:`SaturationResult` (typed fields from the same content as ``run_saturation``),
    a read-only mapping of it (``format_table`` and readers unchanged), written and loaded back equal."""
    from numerics.studies import saturation
    from numerics.studies.growth import QUICK

    res = saturation.run(QUICK, tmp_path)
    d = saturation.run_saturation(QUICK)          # the same config and seeds: the same scan
    assert isinstance(res, saturation.SaturationResult) and not isinstance(res, dict)
    assert (res.saturated, res.best_site, res.level) == (d["model"]["saturated"], d["model"]["best_site"],
                                                          d["model"]["level"])
    assert res.L_test_reference == d["reference"]["L_test"] and res["sites"][0]["site"] == d["sites"][0]["site"]
    assert "saturated" in saturation.format_table(res) or "improvable" in saturation.format_table(res)
    back = saturation.load(tmp_path)
    assert (back.best_site, back.saturated, back.L_test_reference) == (res.best_site, res.saturated, res.L_test_reference)
    with pytest.raises(TypeError):
        res["model"] = {}                          # read-only
    with pytest.raises(KeyError, match="model"):
        saturation.SaturationResult.from_dict({"reference": {"L_test": 0.0}})


def test_growth_run_writer_and_loader(tmp_path):
    from plumbing.config import merge_config
    from numerics.studies import growth

    cfg = merge_config(growth.QUICK, {"growth": {"max_depth": 1, "steps_per_growth": 5}})
    res = growth.run(cfg, tmp_path / "g", progress=False)
    stored = json.loads((tmp_path / "g" / "trajectory.json").read_text())
    assert isinstance(res, growth.GrowthResult) and res.stopped_because in growth.STOP_REASONS
    assert res.L_test == tuple(s["L_test"] for s in stored["steps"]) and res.inserted == len(stored["insertions"])
    growth.write(res, tmp_path / "copy")
    back = growth.load(tmp_path / "copy")
    assert back == res and back.to_dict() == res.to_dict()
    with pytest.raises(KeyError, match="steps"):
        growth.GrowthResult.from_dict({"stopped_because": "saturated"})
