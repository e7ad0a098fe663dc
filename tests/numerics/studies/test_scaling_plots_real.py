"""Figures from a real (tiny) stored sweep: bound vs M, the certification region, the (A3) heatmap."""
import json

import numpy as np
import pytest

from depthcert.cli import main
from numerics.studies.figures import plot_kind
from numerics.studies.sweeps import make_spec, sweep

TINY = {"sizes": {"M": 1000, "K": 1000, "population": 1000}, "reference": {"n": 300, "steps": 10},
        "block_training": {"steps": 10, "batch_size": 256}}


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweepM")
    sweep(make_spec(TINY, {"sizes.M": [1000, 4000]}), out, threads=1, progress=False)
    return out


def _files(paths):
    return {p.suffix: p for p in paths}


def test_bound_vs_M_uses_the_stored_bounds(sweep_dir):
    files = _files(plot_kind(sweep_dir, "bound-vs-M"))
    assert files[".png"].stat().st_size > 1000 and files[".pdf"].stat().st_size > 1000
    data = json.loads(files[".json"].read_text())["sizes.M"]
    cells = sorted((json.loads(p.read_text()) for p in sweep_dir.glob("cells/*/result.json")),
                   key=lambda r: r["quantities"]["M"])
    assert data["x"] == [1000.0, 4000.0] or sorted(data["x"]) == [1000.0, 4000.0]
    assert sorted(data["routes.direct.bound"]) == sorted(c["routes"]["direct"]["bound"] for c in cells)


def test_region_codes_match_evaluate_routes_at_the_measured_point(sweep_dir):
    from bounds.routes import evaluate_routes
    from numerics.studies.figures._scaling import _setup

    files = _files(plot_kind(sweep_dir, "region"))
    data = json.loads(files[".json"].read_text())
    assert np.array(data["code"]).shape == (80, 80) and len(data["crossover_delta_R"]) == 10
    rec = json.loads(next(sweep_dir.glob("cells/*/result.json")).read_text())
    setup, level = _setup(rec)
    rep = evaluate_routes(setup, level)   # the stored routes are what the same setup evaluates to
    assert bool(rep.direct.certified) == rec["routes"]["direct"]["certified"]
    assert float(rep.population.bound) == pytest.approx(rec["routes"]["population"]["bound"], rel=1e-12)


def test_covariance_heatmap_from_the_stored_matrix(sweep_dir):
    files = _files(plot_kind(sweep_dir, "covariance", cell=1))
    data = json.loads(files[".json"].read_text())
    S = np.array(data["matrix"])
    assert np.allclose(S, S.T) and np.all(np.linalg.eigvalsh(S) > -1e-12)
    off = np.linalg.norm(S - np.diag(np.diag(S))) / np.linalg.norm(S)
    assert data["offdiag_ratio"] == pytest.approx(off, rel=1e-9)
    Si = np.array(data["interior_matrix"])                      # an interior site's stored Cov(m_l)
    off_i = np.linalg.norm(Si - np.diag(np.diag(Si))) / np.linalg.norm(Si)
    assert data["per_site"][data["interior_site"]] == pytest.approx(off_i, rel=1e-9)


def test_cli_plot_exit_0_and_bad_cell_exit_2(sweep_dir, tmp_path, capsys):
    assert main(["plot", str(sweep_dir), "--kind", "covariance", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "covariance.png").is_file() and (tmp_path / "covariance.pdf").is_file()
    assert main(["plot", str(sweep_dir), "--kind", "covariance", "--cell", "7"]) == 2
    assert "--cell == 7, must be an integer in [0, 1]" in capsys.readouterr().err
    assert main(["plot", str(sweep_dir), "--kind", "appendix-m"]) == 2     # M varied, not depth
    assert "model.depth == [1.0], must be varied over at least 3 depths" in capsys.readouterr().err
