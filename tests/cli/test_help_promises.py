"""Every sentence of ``saturation --help`` and ``certify --help`` about defaults, stdout and the files written
is what the command does (issue 26); ``bounds`` and ``prove`` likewise. ``grow``'s page is tested with its
``--save-model`` change (another branch).

Each test quotes the sentence it checks from the help text itself, so a reworded page fails here first.
"""
import json
import os
import re
from pathlib import Path

import pytest

from depthcert.cli import main

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).resolve().parent / "_tiny_user.py"
SPEC = ["--model", f"{TINY}:model", "--data", f"{TINY}:data"]


def _help(command, capsys) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())      # one line: sentences wrapped by argparse rejoined


def _says(text: str, *sentences: str) -> None:
    for s in sentences:
        assert " ".join(s.split()) in text, s


def _run(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _files(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_saturation_own_model_writes_no_files_without_out_and_prints_one_row_per_site(tmp_path, capsys,
                                                                                      monkeypatch):
    text = _help("saturation", capsys)
    _says(text, "(default: write no files)", "stdout one row per site and the verdict (JSON with --json)",
          "DIR/sites.csv with --model: one row per site of your network")
    monkeypatch.chdir(tmp_path)
    code, out, _ = _run(["saturation", *SPEC], capsys)
    assert code == 0 and _files(tmp_path) == set(), _files(tmp_path)            # no ./saturation_out/
    code, js, _ = _run(["saturation", *SPEC, "--json", "--out", str(tmp_path / "o")], capsys)
    result = json.loads(js)
    sites = [s["site"] for s in result["sites"]]
    assert len(sites) == 2
    rows = [ln for ln in out.splitlines() if ln.split() and ln.split()[0] in sites]
    assert [r.split()[0] for r in rows] == sites                                # one row per site, in order
    assert out.strip().splitlines()[-1].startswith(result["verdict"])           # and the verdict
    assert _files(tmp_path / "o") == {"saturation.json", "saturation.png", "sites.csv"}
    csv = (tmp_path / "o" / "sites.csv").read_text().strip().splitlines()
    assert len(csv) == 1 + len(sites)


def test_saturation_config_writes_no_files_without_out(tmp_path, capsys, monkeypatch):
    from numerics.studies.growth import QUICK
    from tests.cli.test_saturation_grow import toml

    cfg = tmp_path / "cfg" / "quick.toml"
    cfg.parent.mkdir()
    cfg.write_text(toml(QUICK))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    code, out, _ = _run(["saturation", "--config", str(cfg)], capsys)
    assert code == 0 and _files(work) == set()
    assert re.search(r"^\s*(embed_norm|norms\.\d)", out, re.M), out             # the table's site rows


def test_certify_prints_one_row_per_route_and_writes_only_with_out(tmp_path, capsys, monkeypatch):
    from depthcert.api._routes import DEFAULT_ROUTE, route_names

    text = _help("certify", capsys)
    _says(text, "stdout the paper's two routes and the route fixed before the data (with --routes all: one row per route;",
          "DIR/certify.json with --out: every number, which sample fixed what, the notes",
          "DIR/routes.csv with --out: the route table", "(default: write no files)")
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(["certify", *SPEC, "--site", "blocks.1", "--B", "5", "--L-top", "3", "--routes", "all"], capsys)
    assert code == 0 and _files(tmp_path) == set(), (err, _files(tmp_path))
    assert f"({DEFAULT_ROUTE}, bound" in out.strip().splitlines()[-1]            # the route fixed by default
    code, _, _ = _run(["certify", *SPEC, "--site", "blocks.1", "--B", "5", "--L-top", "3", "--out", "o"], capsys)
    assert _files(tmp_path / "o") == {"certify.json", "routes.csv"}
    res = json.loads((tmp_path / "o" / "certify.json").read_text())
    first = [ln.split()[0] for ln in out.splitlines() if ln.split()]
    names = [r["route"] for r in res["routes"]]
    assert [f for f in first if f in route_names()] == names and len(names) >= 10   # one row per route
    assert {"site", "certified", "route", "bound", "routes", "quantities", "constants", "notes"} <= set(res)
    assert len((tmp_path / "o" / "routes.csv").read_text().strip().splitlines()) == 1 + len(res["routes"])


def test_certify_takes_every_constant_and_exact_routes_never_say_missing_A_norm_when_given(tmp_path, capsys):
    text = _help("certify", capsys)
    for flag in ("--B", "--L-top", "--L-loss", "--kappa", "--A-norm", "--rho-phi"):
        assert f"{flag} " in text, flag
    base = ["certify", *SPEC, "--site", "blocks.1", "--B", "5", "--L-top", "3", "--json"]
    code, out, err = _run([*base, "--L-loss", "1.5", "--kappa", "0.7", "--A-norm", "2.5", "--rho-phi", "40"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert {k: res["constants"][k] for k in ("L_loss", "kappa", "A_norm")} == {"L_loss": 1.5, "kappa": 0.7,
                                                                                 "A_norm": 2.5}
    assert res["quantities"]["rho_phi"] == 40.0
    exact = [r for r in res["routes"] if "_exact_" in r["route"]]
    assert exact and all("A_norm" not in " ".join(r["missing"]) for r in exact)           # the fix
    assert all("squared loss" in " ".join(r["missing"]) for r in exact)                   # and why instead
    code, out, err = _run([*base, "--loss", "squared", "--A-norm", "2.5", "--L-loss", "4"], capsys)   # (c): P = 1
    assert code == 0, err
    exact = [r for r in json.loads(out)["routes"] if "_exact_" in r["route"]]
    assert exact and all(r["missing"] == [] and r["bound"] is not None for r in exact)
    code, _, err = _run([*base, "--kappa", "-1"], capsys)
    assert code == 2 and "kappa" in err and len(err.strip().splitlines()) == 1


def test_a_train_mode_batch_norm_model_is_refused_as_by_the_api(tmp_path, capsys):
    text = _help("saturation", capsys)
    _says(text, "batch norm in train mode is refused (return model.eval() to use its running statistics)")
    for command in ("saturation", "certify"):
        site = ["--site", "blocks.1"] if command == "certify" else []
        code, _, err = _run([command, "--model", f"{TINY}:bn_model", "--data", f"{TINY}:data", *site], capsys)
        assert code == 2 and "--model" in err and "eval()" in err and "blocks.0.norm" in err, err
        assert len(err.strip().splitlines()) == 1
    code, _, err = _run(["saturation", "--model", f"{TINY}:bn_model_eval", "--data", f"{TINY}:data"], capsys)
    assert code == 0, err                                     # in eval mode: the affine map of its statistics


def test_bounds_writes_only_the_plots_it_is_asked_for(tmp_path, capsys, monkeypatch):
    text = _help("bounds", capsys)
    _says(text, "stdout the table of the routes and the table of the variants (one JSON object with --json)")
    monkeypatch.chdir(tmp_path)
    setup = str(ROOT / "examples" / "setup.toml")
    code, out, _ = _run(["bounds", "--config", setup], capsys)
    assert code == 0 and _files(tmp_path) == set() and "direct" in out
    code, out, _ = _run(["bounds", "--config", setup, "--json"], capsys)
    assert code == 0 and isinstance(json.loads(out), dict)
    code, _, _ = _run(["bounds", "--config", setup, "--plot", "a.png", "--plot-terms", "b.png"], capsys)
    assert code == 0 and _files(tmp_path) == {"a.png", "b.png"}


def test_prove_writes_nothing_and_prints_one_line_per_check(tmp_path, capsys, monkeypatch):
    text = _help("prove", capsys)
    _says(text, "stdout the report: one line per check (one JSON object with --json); nothing is written")
    monkeypatch.chdir(tmp_path)
    before = set(os.listdir(tmp_path))
    code, out, _ = _run(["prove", "--chain", str(ROOT / "examples" / "chains" / "descent_lemma.toml"), "--json"], capsys)
    assert code in (0, 1) and isinstance(json.loads(out), dict) and set(os.listdir(tmp_path)) == before


def test_certify_derive_constants_uses_dc_constants_and_given_flags_win(capsys):
    import torch

    from tests.cli import _tiny_user

    text = _help("certify", capsys)
    _says(text, "--derive-constants derive B, L_loss, L_top, A_norm, kappa and rho_phi where they exist")
    base = ["certify", *SPEC, "--site", "blocks.1", "--json", "--derive-constants"]
    code, out, err = _run(base, capsys)
    assert code == 0, err
    res = json.loads(out)
    head = _tiny_user.model().head.weight.detach().double()
    assert res["constants"]["L_top"] == pytest.approx(float(torch.linalg.matrix_norm(head, ord=2)), rel=1e-9)
    assert res["constants"]["B"] is not None and res["constants"]["kappa"] is not None
    code, out, err = _run([*base, "--L-top", "9"], capsys)
    assert code == 0 and json.loads(out)["constants"]["L_top"] == 9.0
    code, out, _ = _run(["certify", *SPEC, "--site", "blocks.1", "--json"], capsys)
    assert json.loads(out)["constants"]["L_top"] is None                 # not derived unless asked


def _defaults(command: str) -> dict:
    """``{dest: the text in "(default: X)"}`` of the options of ``command``'s page."""
    from depthcert.cli import build_parser

    sub = next(a for a in build_parser([command])._actions if a.dest == "command").choices[command]
    out = {}
    for action in sub._actions:
        m = re.search(r"\(default: ([^)]*)\)", action.help or "")
        if m:
            out[action.dest] = m.group(1)
    return out


def test_the_user_options_defaults_are_what_saturation_uses(capsys):
    said = _defaults("saturation")
    assert {k: said[k] for k in ("loss", "sites", "level", "seed", "eps")} == {
        "loss": "cross_entropy", "sites": "blocks.*", "level": "0.05", "seed": "0", "eps": "1e-3"}
    code, out, err = _run(["saturation", *SPEC, "--json"], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert (res["loss"], res["level"], res["seed"], res["eps"]) == ("cross_entropy", 0.05, 0, 1e-3)
    assert [s["site"] for s in res["sites"]] == ["blocks.0", "blocks.1"]          # blocks.*
    code, out, err = _run(["saturation", *SPEC, "--json", "--loss", "squared", "--level", "0.1", "--seed", "3",
                           "--eps", "0.01", "--sites", "blocks.1"], capsys)
    res = json.loads(out)
    assert (res["loss"], res["level"], res["seed"], res["eps"]) == ("squared", 0.1, 3, 0.01)
    assert [s["site"] for s in res["sites"]] == ["blocks.1"]


def test_certify_site_defaults_to_the_best_site_of_a_scan_of_the_signal_sample(capsys):
    import depthcert as dc
    from tests.cli import _tiny_user

    assert "the best site of a saturation scan on the signal sample" in _defaults("certify")["site"]
    code, out, err = _run(["certify", *SPEC, "--json"], capsys)
    assert code == 0, err
    best = dc.saturation(_tiny_user.model(), _tiny_user.data()["signal"], seed=0).best_site
    assert json.loads(out)["site"] == best
