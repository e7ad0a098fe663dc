"""examples/own_cli.py: the ``--model FILE.py:factory --data FILE.py:function`` example the docs give runs."""
import json
from pathlib import Path

from depthcert.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "own_cli.py"


def test_saturation_and_certify_run_on_the_example(tmp_path, capsys):
    spec = ["--model", f"{EXAMPLE}:model", "--data", f"{EXAMPLE}:data"]
    assert main(["saturation", *spec, "--out", str(tmp_path / "sat")]) == 0
    sat = json.loads((tmp_path / "sat" / "saturation.json").read_text())
    assert sat["verdict"] in ("improvable", "saturated", "undetermined")
    assert main(["certify", *spec, "--B", "10", "--L-top", "5", "--out", str(tmp_path / "cert")]) == 0
    assert (tmp_path / "cert" / "routes.csv").exists()


def test_a_missing_function_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["saturation", "--model", f"{EXAMPLE}:model", "--data", f"{EXAMPLE}:no_such_function",
                 "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "--data" in err and "no_such_function" in err and len(err.strip().splitlines()) == 1
