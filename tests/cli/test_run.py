"""CLI tests for ``depthcert run`` and ``depthcert demo`` (light; the full demo is slow)."""
import json
import time

import numpy as np
import pytest

from depthcert.cli import main
from plumbing.config import merge_config
from numerics.studies.run import DEFAULT_DEMO_CONFIG, to_toml
from tests._tolerances import TOL

TINY = merge_config(DEFAULT_DEMO_CONFIG, {
    "sizes": {"M": 3000, "K": 3000, "population": 3000},
    "reference": {"n": 500},
    "block_training": {"steps": 60, "batch_size": 512},
})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_run")
    cfg = folder / "exp.toml"
    cfg.write_text(to_toml(TINY))
    assert main(["run", "--config", str(cfg), "--out", str(folder / "out")]) == 0
    return folder / "out"


def test_run_writes_result_with_config_and_versions(run_dir, capsys):
    res = json.loads((run_dir / "result.json").read_text())
    assert res["config"]["sizes"]["M"] == 3000
    assert {"python", "torch", "numpy"} <= set(res["versions"])
    assert (run_dir / "bound_vs_observed.png").stat().st_size > 1000
    assert not list(run_dir.glob(".*.tmp"))  # atomic write left no temp file


def test_same_numbers_same_bounds_through_depthcert_bounds(run_dir, capsys):
    capsys.readouterr()
    assert main(["bounds", "--config", str(run_dir / "bounds_config.toml"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    res = json.loads((run_dir / "result.json").read_text())
    for route, key in (("population", "population_route"), ("direct", "direct_route")):
        np.testing.assert_allclose(out[key]["bound"], res["routes"][route]["bound"], **TOL["float64"])
        np.testing.assert_allclose(out[key]["failure_probability"], res["routes"][route]["failure_probability"],
                                   **TOL["float64"])
        assert out[key]["certified"] == res["routes"][route]["certified"]
    np.testing.assert_allclose(out["eps_M"], res["eps_M"], **TOL["float64"])


def test_tampered_bounds_config_gives_different_bound(run_dir, tmp_path, capsys):
    # The comparison above can fail: change one number and the bound moves.
    text = (run_dir / "bounds_config.toml").read_text()
    lines = [("delta_test_R = 0.5" if ln.startswith("delta_test_R") else ln) for ln in text.splitlines()]
    (tmp_path / "b.toml").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    main(["bounds", "--config", str(tmp_path / "b.toml"), "--json"])
    out = json.loads(capsys.readouterr().out)
    res = json.loads((run_dir / "result.json").read_text())
    assert not np.isclose(out["direct_route"]["bound"], res["routes"]["direct"]["bound"], **TOL["float64"])


def test_run_prints_table(tmp_path, capsys):
    cfg = tmp_path / "exp.toml"
    cfg.write_text(to_toml(merge_config(TINY, {"sizes": {"M": 500, "K": 500, "population": 500}})))
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    for token in ("population", "direct", "bound", "observed", "delta_R", "eps_M", "L_top_certified"):
        assert token in text


@pytest.mark.parametrize("body,fragment", [
    ("[sizes]\nM = 1\n", "sizes.M == 1, must be an integer"),
    ("[insertion]\nfamily = \"linear\"\n", "insertion.family == 'linear'"),   # readout and full are accepted
    ("[sizes]\nM = \"many\"\n", "sizes.M == 'many'"),
    ("not toml at all = = \n", "--config =="),
    ("[variants]\ndelta_mc = 0.5\n", "variants.delta_mc == 0.5, must be in (0, sizes.delta) = (0, 0.02)"),
    ("[variants]\nuse = \"best\"\n", "variants.use == 'best', must be one of ['population_route'"),
    ("[variants]\nn_draws = 0\n", "variants.n_draws == 0, must be an integer in [1, inf)"),
    ("[variants]\ndelta_T_new = 1.5\n", "variants.delta_T_new == 1.5"),
    ("[variants]\nrad_hat = 0.1\n", "variants.rad_hat == 0.1, must be one of"),
])
def test_bad_config_one_line_exit_2(tmp_path, capsys, body, fragment):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(body)
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err


def test_demo_command_uses_default_config(tmp_path, monkeypatch, capsys):
    import numerics.studies.run as exp

    monkeypatch.setattr(exp, "DEFAULT_DEMO_CONFIG", TINY)
    assert main(["demo", "--out", str(tmp_path / "d"), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["config"] == TINY and (tmp_path / "d" / "result.json").is_file()


@pytest.mark.slow
def test_demo_end_to_end_certifies(tmp_path, capsys):
    """``depthcert demo`` certifies; its wall time is printed, not asserted (machine and load dependent)."""
    t0 = time.perf_counter()
    assert main(["demo", "--out", str(tmp_path)]) == 0
    wall = time.perf_counter() - t0
    res = json.loads((tmp_path / "result.json").read_text())
    with capsys.disabled():
        print(f"\ndepthcert demo took {wall:.1f} s")
    assert res["any_certified"], res["routes"]


def test_divergence_is_one_line_exit_1(tmp_path, capsys):
    cfg = tmp_path / "div.toml"
    cfg.write_text(to_toml(merge_config(TINY, {"reference": {"optimizer": "sgd", "lr": 1e12, "steps": 30}})))
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "loss became" in err and "at step" in err


def test_demo_shows_each_stage_on_stderr_and_run_stays_quiet(tmp_path, monkeypatch, capsys):
    import numerics.studies.run as exp

    monkeypatch.setattr(exp, "DEFAULT_DEMO_CONFIG", TINY)
    assert main(["demo", "--out", str(tmp_path / "d")]) == 0
    err = capsys.readouterr().err.splitlines()
    total = len(exp.STAGES) + 2                                  # the run's stages, writing, the rates
    done = [line for line in err if line.startswith("depthcert demo [") and line.endswith(" s")]
    assert [line.split("]")[0] for line in done] == [f"depthcert demo [{k}/{total}" for k in range(1, total + 1)]
    assert all(stage in "\n".join(done) for stage in exp.STAGES)
    cfg = tmp_path / "tiny.toml"
    cfg.write_text(to_toml(TINY))
    assert main(["run", "--config", str(cfg), "--out", str(tmp_path / "r")]) == 0
    assert capsys.readouterr().err == ""                          # `run` prints no progress
