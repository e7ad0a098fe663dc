"""`depthcert bounds`: JSON contract, human table, bad input -> exit 2 with one line."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from depthcert.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "setup.toml"


def test_json_contract(capsys):
    assert main(["bounds", "--config", str(EXAMPLE), "--json", "--level", "0.1"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("eps_M", "eps_K", "population_route", "direct_route"):
        assert key in out
    for route in ("population_route", "direct_route"):
        for key in ("bound", "failure_probability", "certified", "min_M"):
            assert key in out[route]
    assert "min_K" in out["population_route"]
    assert out["population_route"]["certified"] is False


def test_human_table(capsys):
    assert main(["bounds", "--config", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "population (Thm 2)" in out and "direct (Thm 3)" in out and "eps_M" in out


def _edit(tmp_path, old, new):
    text = EXAMPLE.read_text()
    assert old in text
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, 1))
    return p


BAD = [
    ("delta_R = 0.09", "", "delta_R is missing"),
    ('family = "readout"', 'family = "wide"', "block.family == 'wide'"),
    ("M = 200000", 'M = "many"', "M == 'many'"),
    ("M = 200000", "M = nan", "M == nan"),
    ("K = 100000", "K = inf", "K == inf"),
    ("delta = 0.05 ", "delta = 1.5 ", "delta == 1.5"),
    ("delta = 0.05 ", "delta = 0.0 ", "delta == 0.0"),
    ("M = 200000", "M = 0.5", "M == 0.5"),
    ("B = 4.2", "B = 0", "loss.B == 0"),
    ("nu_V = 0.4", "nu_V = -0.4", "block.nu_V == -0.4"),
    ("B = 4.2", "B = \"__import__('os').system('echo pwned')\"", "loss.B == "),
    ("M = 200000", "M = true", "M == True"),
    ("M = 200000", "M = [1, 2", "--config =="),
    ('family = "readout"', 'family = ["readout"]', "block.family == ['readout']"),
    ('family = "readout"', "family = {a = 1}", "block.family == {'a': 1}"),
    ("B = 4.2\nL_loss = 1.4142135623730951",
     'kind = "cross_entropy"\nn_classes = 3\nhead_row_norms = [1.0, 1.0]\nhead_bias = [0.0, 0.0, 0.0]\nrho = 2.0',
     "loss.head_row_norms == [1.0, 1.0]"),
    ("B = 4.2\nL_loss = 1.4142135623730951",
     'kind = "cross_entropy"\nn_classes = 2\nhead_row_norms = [1.0, 1.0]\nhead_bias = [0.0, nan]\nrho = 2.0',
     "loss.head_bias[1] == nan"),
]


@pytest.mark.parametrize("old,new,message", BAD, ids=[b[2] for b in BAD])
def test_bad_input_exit_2_one_line(tmp_path, capsys, old, new, message):
    assert main(["bounds", "--config", str(_edit(tmp_path, old, new))]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and message in err and "must be" in err
    assert "Traceback" not in err and "pwned" not in captured.out


def test_level_out_of_range_and_missing_file(tmp_path, capsys):
    assert main(["bounds", "--config", str(EXAMPLE), "--level", "0"]) == 2
    assert "level == 0.0" in capsys.readouterr().err
    assert main(["bounds", "--config", str(tmp_path / "nope.toml")]) == 2


def test_console_script_runs_in_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "depthcert", "bounds", "--config", str(EXAMPLE), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)   # exactly one JSON object


def test_plot_is_written(tmp_path, capsys):
    png = tmp_path / "routes.png"
    assert main(["bounds", "--config", str(EXAMPLE), "--json", "--plot", str(png)]) == 0
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert json.loads(capsys.readouterr().out)["plot"] == str(png)


def test_unwritable_plot_path_is_bad_input(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert main(["bounds", "--config", str(EXAMPLE), "--plot", str(blocker / "routes.png")]) == 2
    assert "--plot ==" in capsys.readouterr().err


def _loss_table(tmp_path, loss_lines, name="loss.toml"):
    text = EXAMPLE.read_text().replace("B = 4.2\nL_loss = 1.4142135623730951", loss_lines, 1)
    p = tmp_path / name
    p.write_text(text)
    return p


def _route_numbers(capsys, path):
    capsys.readouterr()
    assert main(["bounds", "--config", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return out["eps_M"], out["population_route"]["bound"]


def test_block_at_top_enlarges_the_head_input(tmp_path, capsys):
    # readout at the top: ||u + h(u)|| <= rho + nu_V rho_phi = rho + 0.4 * 3.0. Squared loss with
    # F = 1.0 and ||A||_2 = 0.5: F' = 1.0 + 0.5 * 1.2 = 1.6, Y = 0.4 -> B = (F' + Y)^2 = 4, L_loss = 2 (F' + Y) = 4.
    direct = _loss_table(tmp_path, "B = 4.0\nL_loss = 4.0", "direct.toml")
    at_top = _loss_table(tmp_path, 'kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 0.5\nblock_at_top = true', "top.toml")
    explicit = _loss_table(tmp_path, 'kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 0.5\nextra_head_norm = 1.2',
                           "explicit.toml")
    below = _loss_table(tmp_path, 'kind = "squared"\nF = 1.0\nY = 0.4', "below.toml")
    want = _route_numbers(capsys, direct)
    assert _route_numbers(capsys, at_top) == pytest.approx(want, rel=1e-12)
    assert _route_numbers(capsys, explicit) == pytest.approx(want, rel=1e-12)
    capsys.readouterr()
    assert main(["bounds", "--config", str(below), "--json"]) == 0
    captured = capsys.readouterr()
    assert "block is taken to be below the top" in captured.err
    assert json.loads(captured.out)["eps_M"] < want[0]          # B = (1.4)^2: smaller, as the warning says


def test_block_at_top_cross_entropy(tmp_path, capsys):
    # logits |f_k| <= ||A_k|| (rho + nu_V rho_phi) + |c_k| = 1.0 * (2.0 + 1.2) + 0 -> B = ln 2 + 2 * 3.2
    import math

    top = _loss_table(tmp_path, 'kind = "cross_entropy"\nn_classes = 2\nhead_row_norms = [1.0, 0.5]\n'
                      'head_bias = [0.0, 0.0]\nrho = 2.0\nblock_at_top = true', "ce.toml")
    direct = _loss_table(tmp_path, f"B = {math.log(2) + 6.4!r}\nL_loss = {math.sqrt(2)!r}", "ce_direct.toml")
    assert _route_numbers(capsys, top) == pytest.approx(_route_numbers(capsys, direct), rel=1e-12)


@pytest.mark.parametrize("lines,message", [
    ('kind = "squared"\nF = 1.0\nY = 0.4\nblock_at_top = true', "loss.head_norm is missing"),
    ('kind = "squared"\nF = 1.0\nY = 0.4\nblock_at_top = 1', "loss.block_at_top == 1"),
    ('kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 1.0\nextra_head_norm = -1', "loss.extra_head_norm == -1"),
    ('kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 1.0\nblock_at_top = true\nextra_head_norm = 1',
     "loss.extra_head_norm == 1"),
])
def test_block_position_keys_validated(tmp_path, capsys, lines, message):
    assert main(["bounds", "--config", str(_loss_table(tmp_path, lines))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_R_old_gives_the_population_risk_route(tmp_path, capsys):
    p = tmp_path / "r.toml"
    p.write_text(EXAMPLE.read_text().replace("delta_erm = 0.004", "delta_erm = 0.004\nR_old = 0.6", 1))
    assert main(["bounds", "--config", str(p), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    r = out["population_risk_route"]
    assert r["bound"] == pytest.approx(0.6 - 0.09 - 0.004 + 2 * out["eps_M"], rel=1e-12)
    assert out["any_route"]["certified"] is False and "events" in out["any_route"]
