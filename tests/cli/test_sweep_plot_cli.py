"""CLI: `depthcert sweep`, `plot`, `reproduce` -- bad input is exit 2 with one line, never a traceback."""
import sys

import pytest

from depthcert.cli import main


def _files(tmp_path, sweep_text):
    (tmp_path / "exp.toml").write_text("[sizes]\nM = 1000\nK = 1000\npopulation = 1000\n")
    (tmp_path / "s.toml").write_text(sweep_text)
    return str(tmp_path / "s.toml")


def _one_error_line(capsys, command):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"depthcert {command}: error: "), err
    return err[0]


@pytest.mark.parametrize("text, says", [
    ('base = "exp.toml"\n[grid]\n"model.widht" = [1]\n', "model.widht == 1, must be one of"),     # unknown key
    ('base = "exp.toml"\n[grid]\n', "[grid] == {}, must be at least one dotted key"),             # empty grid
    ('base = "exp.toml"\n[grid]\n"model.depth" = [2, -3]\n', "[grid] model.depth == -3, must be an integer in [0, inf)"),
    ('base = "exp.toml"\n[zip]\nseed = [0, 1]\n"model.depth" = [1, 2, 3]\n', "[zip] == {'seed': 2, 'model.depth': 3}"),
    ('base = "nope.toml"\n[grid]\nseed = [0]\n', "must be an existing TOML file (relative to the sweep file)"),
])
def test_bad_sweep_file_exit_2_one_line(tmp_path, capsys, text, says):
    assert main(["sweep", "--config", _files(tmp_path, text), "--out", str(tmp_path / "o")]) == 2
    assert says in _one_error_line(capsys, "sweep")
    assert not (tmp_path / "o" / "cells").exists()


def test_missing_sweep_file_exit_2(tmp_path, capsys):
    assert main(["sweep", "--config", str(tmp_path / "none.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "--config ==" in _one_error_line(capsys, "sweep")


def test_ray_backend_without_ray_exit_2_naming_the_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    path = _files(tmp_path, 'base = "exp.toml"\n[grid]\nseed = [0]\n')
    assert main(["sweep", "--config", path, "--out", str(tmp_path / "o"), "--backend", "ray"]) == 2
    assert 'pip install "depthcert[ray]"' in _one_error_line(capsys, "sweep")


def test_too_many_workers_exit_2(tmp_path, capsys):
    path = _files(tmp_path, 'base = "exp.toml"\n[grid]\nseed = [0]\n')
    assert main(["sweep", "--config", path, "--out", str(tmp_path / "o"), "--workers", "999"]) == 2
    assert "--workers == 999, must be an integer in [1," in _one_error_line(capsys, "sweep")


def test_plot_on_a_folder_without_results_exit_2(tmp_path, capsys):
    assert main(["plot", str(tmp_path), "--kind", "appendix-m"]) == 2
    assert "DIR ==" in _one_error_line(capsys, "plot")


def test_plot_unknown_kind_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(tmp_path), "--kind", "pie"])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_reproduce_unknown_suite_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--suite", "huge", "--out", str(tmp_path)])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
