"""CLI: ``depthcert saturation``, ``depthcert grow`` and ``depthcert study`` (light sizes), bad input exits 2."""
import json
import os

import pytest

from depthcert.cli import main
from plumbing.config import merge_config
from numerics.studies.growth import QUICK


def toml(data: dict) -> str:
    """A two-level TOML writer (strings, numbers, booleans, lists of strings)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, str)):
            return json.dumps(v)
        return repr(v)

    lines = [f"{k} = {value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines += [f"[{k}]"] + [f"{kk} = {value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def _write(tmp_path, data, name="cfg.toml"):
    path = tmp_path / name
    path.write_text(toml(data))
    return str(path)


def test_saturation_json_and_files(tmp_path, capsys):
    cfg = _write(tmp_path, QUICK)
    assert main(["saturation", "--config", cfg, "--json", "--out", str(tmp_path / "out")]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {"sites", "model", "versions"} <= set(res)
    assert res["sites"][0]["test_adaptive"]["n_needed"] is None or res["sites"][0]["test_adaptive"]["n_needed"] > 0
    assert (tmp_path / "out" / "saturation.json").is_file() and (tmp_path / "out" / "saturation.png").is_file()


@pytest.mark.parametrize("override, needle", [
    ({"saturation": {"sites": ["norms.9"]}}, "saturation.sites == 'norms.9'"),
    ({"saturation": {"sites": ["embed"]}}, "shape-preserving sites"),
    ({"saturation": {"probe_m": 3}}, "saturation.probe_m"),
    ({"task": {"kind": "digits", "n_test": 300}, "model": {"kind": "cnn", "norm": "batch", "width": 4},
      "reference": {"n": 600}}, "model.norm == \"batch-norm at 'embed_norm'\""),
    ({"task": {"kind": "digits", "n_test": 300}, "model": {"kind": "gpt2"}, "reference": {"n": 600}}, "model.kind"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, override, needle):
    cfg = _write(tmp_path, merge_config(QUICK, override))
    assert main(["saturation", "--config", cfg]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_grow_writes_trajectory_figure_and_resumes(tmp_path, capsys):
    cfg = _write(tmp_path, merge_config(QUICK, {"growth": {"max_depth": 1, "run_past_stop": True}}))
    out = tmp_path / "grow"
    assert main(["grow", "--config", cfg, "--out", str(out)]) == 0
    traj = json.loads((out / "trajectory.json").read_text())
    assert traj["stopped_because"] in ("saturated", "certified_gain_below_2eps_M", "max_depth")
    for step in traj["steps"]:
        assert {"depth", "site", "L_train", "L_test", "R", "AG_max", "saturated"} <= set(step)
    assert (out / "growth.png").stat().st_size > 1000 and not list(out.glob(".*.tmp"))
    stamp = os.stat(out / "checkpoint.pt").st_mtime_ns
    capsys.readouterr()
    assert main(["grow", "--config", cfg, "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == traj["steps"]        # resumed: nothing recomputed
    assert os.stat(out / "checkpoint.pt").st_mtime_ns == stamp


def test_study_cli_runs_a_quick_study(tmp_path, capsys):
    assert main(["study", "optimizer-invariance", "--quick", "--out", str(tmp_path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["holds"] and (tmp_path / "optimizer-invariance.png").is_file()
    with pytest.raises(SystemExit) as exc:    # argparse: one line, exit 2
        main(["study", "no-such-study", "--out", str(tmp_path)])
    assert exc.value.code == 2


def test_shipped_teacher_config_is_the_default():
    """depthcert/configs/teacher.toml writes out the defaults of saturation and grow."""
    from depthcert.config import read_toml
    from numerics.studies.growth import DEFAULT_GROW_CONFIG, validate_grow_config

    cfg = validate_grow_config(read_toml("depthcert/configs/teacher.toml"))
    for section in ("task", "model", "reference", "saturation", "growth"):
        for key, value in cfg[section].items():
            assert DEFAULT_GROW_CONFIG[section].get(key, value) == value, (section, key)
