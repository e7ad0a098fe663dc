"""`depthcert validity` and the demo's certification rate (light sizes)."""
import json

import pytest

from depthcert.cli import main
from plumbing.config import merge_config
from numerics.studies.run import DEFAULT_DEMO_CONFIG, to_toml

LIGHT = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 500},
         "block_training": {"steps": 40, "batch_size": 256}}


def _toml(tmp_path, cfg, extra=""):
    p = tmp_path / "exp.toml"
    p.write_text(to_toml(cfg) + extra)
    return p


def test_validity_writes_report_and_exits_0(tmp_path, capsys):
    cfg = _toml(tmp_path, LIGHT, "\n[validity]\ngroup = 2\npopulation = 50000\n")
    out = tmp_path / "v"
    assert main(["validity", "--config", str(cfg), "--draws", "4", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    for token in ("population", "direct", "any", "E_S", "power", "slack", "no guarantee failed"):
        assert token in text
    s = json.loads((out / "validity.json").read_text())
    assert s["draws"] == 4 and not s["significant"]
    # re-running computes nothing new and reports the same
    assert main(["validity", "--config", str(cfg), "--draws", "4", "--out", str(out), "--json", "--no-progress"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["routes"] == s["routes"]


def test_validity_exits_1_when_a_guarantee_fails(tmp_path, capsys, monkeypatch):
    # a wrong Theorem 3 (its bound without the 2 (eps_M + eps_K) it must pay, minus eps_K more)
    # fails in most draws; the study must flag it and exit 1
    import dataclasses

    import sympy as sp

    from bounds import _symbols as s
    import numerics.studies.validity._routes as routes

    direct = routes.ROUTE_SPECS[1]
    c = direct.theorem.conclusion
    wrong = direct.theorem.replace(conclusion=sp.Le(c.lhs, c.rhs - 2 * (s.eps_M + s.eps_K) - s.eps_K))
    monkeypatch.setattr(routes, "ROUTE_SPECS", [routes.ROUTE_SPECS[0], dataclasses.replace(direct, theorem=wrong),
                                                routes.ROUTE_SPECS[2]])
    import numerics.studies.validity._summary as summ

    monkeypatch.setattr(summ, "ROUTE_SPECS", routes.ROUTE_SPECS)
    cfg = _toml(tmp_path, LIGHT, "\n[validity]\npopulation = 50000\n")
    assert main(["validity", "--config", str(cfg), "--draws", "4", "--out", str(tmp_path / "v"), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "some guarantee failed significantly" in out and "SIGNIFICANT" in out


@pytest.mark.parametrize("args,fragment", [
    (["--draws", "0"], "--draws == 0, must be an integer >= 1"),
    (["--draws", "3", "--level", "2"], "--level == 2.0"),
    (["--draws", "3", "--out", "/proc/x"], "--out == '/proc/x"),
    (["--draws", "3", "--group", "0"], "--group == 0"),
])
def test_validity_bad_input_one_line_exit_2(tmp_path, capsys, args, fragment):
    cfg = _toml(tmp_path, LIGHT)
    argv = ["validity", "--config", str(cfg), "--out", str(tmp_path / "v")] + args
    if "--out" in args:
        argv = ["validity", "--config", str(cfg)] + args
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_sizes_that_cannot_fit_exit_2_naming_key_and_memory(tmp_path, capsys):
    cfg = _toml(tmp_path, merge_config(LIGHT, {"sizes": {"M": 10**12}}))
    for cmd in (["run", "--config", str(cfg), "--out", str(tmp_path / "o")],
                ["validity", "--config", str(cfg), "--draws", "2", "--out", str(tmp_path / "v")]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "sizes.M == 1000000000000" in err and "TB" in err


def test_demo_prints_the_stored_rate_or_says_it_has_none(tmp_path, monkeypatch, capsys):
    import depthcert._cmd_demo as demo
    import numerics.studies.run as run

    tiny = merge_config(DEFAULT_DEMO_CONFIG, LIGHT)
    monkeypatch.setattr(run, "DEFAULT_DEMO_CONFIG", tiny)
    stored = tmp_path / "demo_validity.json"
    stored.write_text(json.dumps({"config": tiny, "draws": 200, "test_level": 0.05, "command": "depthcert validity ...",
                                  "certification": {"any": {"certification_rate": 0.5,
                                                            "certification_interval": [0.43, 0.57]}}}))
    monkeypatch.setattr(demo, "STORED", stored)
    assert main(["demo", "--out", str(tmp_path / "d")]) == 0
    text = capsys.readouterr().out
    assert "certification rate of this setup over 200 draws" in text and "50.0%  [43.0%, 57.0%]" in text
    stored.write_text(json.dumps({"config": DEFAULT_DEMO_CONFIG, "draws": 1}))      # another config: not used
    assert main(["demo", "--out", str(tmp_path / "d"), "--json"]) == 0
    assert "another config" in json.loads(capsys.readouterr().out)["setup_rates"]["source"]


def test_demo_quick_estimate(tmp_path, monkeypatch, capsys):
    import numerics.studies.run as run

    monkeypatch.setattr(run, "DEFAULT_DEMO_CONFIG", merge_config(DEFAULT_DEMO_CONFIG, LIGHT))
    assert main(["demo", "--out", str(tmp_path / "d"), "--estimate", "2"]) == 0
    assert "quick estimate from 2 draws run now" in capsys.readouterr().out
    assert main(["demo", "--out", str(tmp_path / "d"), "--estimate", "0"]) == 2


def test_shipped_demo_validity_matches_the_demo_config():
    from depthcert._cmd_demo import STORED
    from plumbing.store import load_json

    if not STORED.is_file():
        pytest.skip("no stored validity study shipped yet")
    s = load_json(STORED)
    assert s["config"] == DEFAULT_DEMO_CONFIG and s["draws"] >= 200 and "depthcert validity" in s["command"]
    assert not s["significant"] and s["vary"] == "data"
    h = s["held_out_setups"]
    assert "--vary seed" in h["command"] and h["draws"] >= 60 and not h["significant"]
