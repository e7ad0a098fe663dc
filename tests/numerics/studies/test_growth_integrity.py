"""grow and validity (issue 20): a truncated or foreign stored file is named and recomputed, never blamed on --config."""
import json

import pytest

from depthcert.cli import main
from plumbing.config import merge_config
from plumbing.store import config_hash, record_hash
from numerics.studies.growth import QUICK

GROW = merge_config(QUICK, {"growth": {"max_depth": 1, "run_past_stop": True}})


def _toml(data: dict) -> str:
    lines = []
    for k, v in data.items():
        lines += [f"[{k}]"] + [f"{kk} = {json.dumps(vv) if isinstance(vv, (bool, str)) else repr(vv)}"
                               for kk, vv in v.items()]
    return "\n".join(lines).replace("= True", "= true").replace("= False", "= false") + "\n"


@pytest.fixture(scope="module")
def grown(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grow")
    (tmp / "g.toml").write_text(_toml(GROW))
    assert main(["grow", "--config", str(tmp / "g.toml"), "--out", str(tmp / "o"), "--json"]) == 0
    return tmp, json.loads((tmp / "o" / "trajectory.json").read_text())


def test_trajectory_carries_the_hash_of_its_config(grown):
    _, traj = grown
    assert record_hash(traj) == config_hash(traj["config"], "grow-trajectory")


@pytest.mark.parametrize("name, cut", [("trajectory.json", 50), ("checkpoint.pt", 200)])
def test_truncated_growth_file_is_named_and_recomputed(grown, tmp_path, capsys, name, cut):
    tmp, traj = grown
    out = tmp_path / "o"
    out.mkdir()
    for f in ("trajectory.json", "checkpoint.pt"):
        (out / f).write_bytes((tmp / "o" / f).read_bytes())
    (out / name).write_bytes((out / name).read_bytes()[:cut])
    capsys.readouterr()
    assert main(["grow", "--config", str(tmp / "g.toml"), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    notes = [ln for ln in captured.err.splitlines() if ": note:" in ln]
    assert len(notes) == 1 and str(out / name) in notes[0] and "recomputing the growth" in notes[0], captured.err
    again = json.loads(captured.out)
    assert [s["L_train"] for s in again["steps"]] == [s["L_train"] for s in traj["steps"]]   # recomputed, the same


def test_a_growth_of_another_config_is_recomputed_not_resumed(grown, tmp_path, capsys):
    tmp, traj = grown
    out = tmp_path / "o"
    out.mkdir()
    for f in ("trajectory.json", "checkpoint.pt"):
        (out / f).write_bytes((tmp / "o" / f).read_bytes())
    other = tmp_path / "other.toml"
    other.write_text(_toml(merge_config(GROW, {"growth": {"steps_per_growth": 120}})))
    assert main(["grow", "--config", str(other), "--out", str(out), "--json"]) == 0
    assert "made by a different configuration" in capsys.readouterr().err
    assert json.loads((out / "trajectory.json").read_text())["config"]["growth"]["steps_per_growth"] == 120


def test_validity_recomputes_a_truncated_draw_and_names_it(tmp_path, capsys, monkeypatch):
    """One draw's file cut short: named on stderr and recomputed (the same numbers), the others reused."""
    import numerics.studies.validity as V

    monkeypatch.setattr(V, "plot_slack", lambda *a, **k: None)     # the figure is not what is tested (seconds)
    light = {"sizes": {"M": 500, "K": 500, "population": 500}, "reference": {"n": 200, "steps": 2},
             "block_training": {"steps": 2, "batch_size": 64}, "validity": {"group": 1, "population": 1000}}
    V.run_validity(light, 2, tmp_path, progress=False)
    draw, other = tmp_path / "draws" / "draw_000001.json", tmp_path / "draws" / "draw_000000.json"
    before, stamp = json.loads(draw.read_text()), other.stat().st_mtime_ns
    draw.write_text(draw.read_text()[:30])
    capsys.readouterr()
    V.run_validity(light, 2, tmp_path, progress=False)
    err = capsys.readouterr().err
    assert str(draw) in err and "truncated" in err and "recomputing it" in err
    after = json.loads(draw.read_text())
    assert {k: v for k, v in after.items() if k != "seconds"} == {k: v for k, v in before.items() if k != "seconds"}
    assert other.stat().st_mtime_ns == stamp                      # the intact draw is not recomputed
