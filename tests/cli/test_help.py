"""`depthcert --version` and the help pages: written for users, every command's page complete.

A page must say what the command writes (the file names below are listed by hand from what
each command's code writes), give an example that the parser accepts and whose files exist,
and list the exit status; no developer markup (reST roles, double backticks) may leak in.
"""
import importlib.metadata
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import depthcert
from depthcert.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[2]

#: What each command writes, as its help must name it.
OUTPUTS = {
    "bounds": ["stdout", "--plot PNG", "--plot-terms PNG"],
    "prove": ["stdout", "nothing is written"],
    "run": ["DIR/result.json", "DIR/bounds_config.toml", "DIR/bound_vs_observed.png", "DIR/bound_terms.png"],
    "demo": ["DIR/result.json", "DIR/bounds_config.toml", "DIR/bound_vs_observed.png", "DIR/validity/"],
    "sweep": ["DIR/cells/KEY/result.json", "DIR/results.csv", "DIR/plots/"],
    "plot": ["KIND.png", "KIND.pdf", "KIND.json", "KIND_exponents.md"],
    "reproduce": ["DIR/report.md", "DIR/claims.json", "DIR/figures/"],
    "validity": ["DIR/validity.json", "DIR/slack.png", "DIR/draws/"],
    "saturation": ["DIR/saturation.json", "DIR/saturation.png"],
    "grow": ["DIR/trajectory.json", "DIR/checkpoint.pt", "DIR/growth.png"],
    "study": ["DIR/NAME.json", "DIR/NAME.png"],
    "certify": ["stdout", "DIR/certify.json", "DIR/routes.csv"],
}
#: The commands whose run() can return 1 (a conclusion failed or the experiment could not run).
EXIT_1 = {"prove", "run", "demo", "validity"}
DEVELOPER_MARKUP = re.compile(r"``|:(mod|func|class|data|meth|attr):`")


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"depthcert {depthcert.__version__}\n"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert depthcert.__version__ == pyproject["project"]["version"] == importlib.metadata.version("depthcert")


def test_version_from_the_console():
    out = subprocess.run([sys.executable, "-m", "depthcert", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and out.stdout.strip() == f"depthcert {depthcert.__version__}", out.stderr


def test_top_level_help_is_for_users(capsys):
    text = _help(["--help"], capsys)
    assert not DEVELOPER_MARKUP.search(text), text
    assert "call the public API" not in text and "--version" in text and "exit status" in text
    for name in COMMANDS:
        assert re.search(rf"^\s+{name}\b", text, re.M), name
    assert "see `depthcert" not in text          # every command listed with its own summary


def _section(text: str, title: str) -> list[str]:
    """The indented lines under ``title:`` up to the next blank line."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.rstrip() == title + ":")
    out = []
    for ln in lines[start + 1:]:
        if not ln.strip():
            break
        out.append(ln.strip())
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_help_is_complete(name, capsys):
    text = _help([name, "--help"], capsys)
    assert not DEVELOPER_MARKUP.search(text), text
    for what in OUTPUTS[name]:
        assert what in "\n".join(_section(text, "outputs")), (name, what)
    codes = {int(ln.split()[0]) for ln in _section(text, "exit status") if ln.split()[0].isdigit()}
    assert codes == ({0, 1, 2} if name in EXIT_1 else {0, 2}), (name, codes)
    examples = _section(text, "examples" if "\nexamples:" in text else "example")
    assert examples
    for line in examples:
        argv = shlex.split(line)
        assert argv[:2] == ["depthcert", name], line
        build_parser(argv[1:]).parse_args(argv[1:])          # the parser accepts it (exit 2 would raise)
        for arg in argv:
            if arg.startswith(("examples/", "depthcert/configs/")):
                assert (ROOT / arg).exists(), (line, arg)


def test_help_page_layout_rejects_markup():
    # the markup check must be able to fail
    assert DEVELOPER_MARKUP.search("see ``depthcert run``") and DEVELOPER_MARKUP.search(":mod:`numerics`")
    assert not DEVELOPER_MARKUP.search("see `depthcert run`")
