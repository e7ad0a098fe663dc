"""`depthcert bounds`: every warning about an ignored key names its table and where the key belongs.

The expected lines are written out by hand from the setup-file format (depthcert/config.py's
docstring) and the other commands' documented tables, not produced by the implementation.
"""
import subprocess
import sys
from pathlib import Path

import pytest

from depthcert.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "setup.toml"
W = "depthcert: warning: "


def _warnings(tmp_path, capsys, old: str, new: str) -> list[str]:
    text = EXAMPLE.read_text()
    assert old in text
    path = tmp_path / "setup.toml"
    path.write_text(text.replace(old, new, 1))
    capsys.readouterr()
    assert main(["bounds", "--config", str(path), "--json"]) == 0
    return [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith(W)]


def test_the_issue_example_names_both_tables(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "nu_V = 0.4", "nu_V = 0.4\nblock_at_top = true")
    assert lines == [W + "ignoring block.block_at_top: the [block] table has no key block_at_top; "
                     "it belongs to the [loss] table"]


def test_key_of_the_other_block_family(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "nu_V = 0.4", "nu_V = 0.4\nnu_U = 0.5")
    assert lines == [W + 'ignoring block.nu_U: the [block] table with family = "readout" has no key nu_U; '
                     'it belongs to [block] with family = "full"']


def test_loss_key_at_the_top_level(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "M = 200000", "M = 200000\nL_loss = 2.0")
    assert lines == [W + "ignoring L_loss: depthcert bounds reads no top-level key L_loss; "
                     "it belongs to the [loss] table"]


def test_block_key_in_the_loss_table(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "L_loss = 1.4142135623730951", "L_loss = 1.4142135623730951\nrho_phi = 3.0")
    assert lines == [W + "ignoring loss.rho_phi: the [loss] table without kind has no key rho_phi; "
                     "it belongs to the [block] table"]


def test_b_with_a_loss_kind_is_computed(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "L_loss = 1.4142135623730951",
                      'L_loss = 1.4142135623730951\nkind = "squared"\nF = 1.0\nY = 0.4\nextra_head_norm = 0.0')
    assert lines == [W + f'ignoring loss.{k}: the [loss] table with kind = "squared" has no key {k} '
                     f'(B and L_loss are computed from kind); it belongs to [loss] without kind' for k in ("B", "L_loss")]


def test_table_of_another_command(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "[loss]", "[reference]\nn = 100\n[loss]")
    assert lines == [W + "ignoring [reference]: depthcert bounds reads no such table (it reads [loss], [block], "
                     "[variants]); other commands read it: depthcert run, validity, saturation and grow"]


def test_top_level_key_of_another_command(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "M = 200000", "M = 200000\ndata_seed = 4")
    assert lines == [W + "ignoring data_seed: depthcert bounds reads no top-level key data_seed; "
                     "other commands read it: at the top level (depthcert run, validity, saturation and grow)"]


def test_block_key_of_another_commands_table(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "nu_V = 0.4", "nu_V = 0.4\noutput_cap = 0.5")
    assert lines == [W + "ignoring block.output_cap: the [block] table has no key output_cap; "
                     "other commands read it: in [insertion] (depthcert run and validity)"]


def test_key_known_nowhere(tmp_path, capsys):
    lines = _warnings(tmp_path, capsys, "[loss]", "zzz_typo = 1\n[zzz]\na = 1\n[loss]")
    assert lines == [W + "ignoring zzz_typo: depthcert bounds reads no top-level key zzz_typo",
                     W + "ignoring [zzz]: depthcert bounds reads no such table (it reads [loss], [block], [variants])"]


@pytest.mark.parametrize("loss", [
    'kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 0.5\nblock_at_top = true',
    'kind = "squared"\nF = 1.0\nY = 0.4\nhead_norm = 0.5\nextra_head_norm = 1.2',
    'kind = "cross_entropy"\nn_classes = 2\nhead_row_norms = [1.0, 1.0]\nhead_bias = [0.0, 0.0]\nrho = 2.0\n'
    'block_at_top = true',
    'kind = "cross_entropy"\nn_classes = 2\nhead_row_norms = [1.0, 1.0]\nhead_bias = [0.0, 0.0]\nrho = 2.0\n'
    'extra_head_norm = 1.0',
])
def test_every_key_the_loader_reads_is_silent(tmp_path, capsys, loss):
    assert _warnings(tmp_path, capsys, "B = 4.2\nL_loss = 1.4142135623730951", loss) == []


@pytest.mark.parametrize("name", ["setup.toml", "setup_variants.toml"])
def test_shipped_examples_are_silent(capsys, name):
    assert main(["bounds", "--config", str(ROOT / "examples" / name), "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_a_clean_bounds_run_never_imports_torch():
    code = ("import sys; from depthcert.cli import main; import contextlib, io\n"
            f"with contextlib.redirect_stdout(io.StringIO()): main(['bounds', '--config', {str(EXAMPLE)!r}])\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False", out.stderr
