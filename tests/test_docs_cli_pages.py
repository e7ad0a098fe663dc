"""The CLI pages are generated from the parsers and the config schemas, and miss nothing (docs/_ext/cli_pages.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import cli_pages  # noqa: E402


def missing(page: str) -> list[str]:
    """Every command, option and config key of the program that ``page`` does not name."""
    from depthcert.cli import COMMANDS

    out = []
    for name in COMMANDS:
        if f"## `depthcert {name}`" not in page:
            out.append(f"command {name}")
        out += [f"{name} {flag}" for flag, *_ in cli_pages.options_rows(name) if f"| {flag} |" not in page]
        out += [f"{name} key {key}" for key, _ in cli_pages.config_rows(name) if f"| `{key}` |" not in page]
    return out


def test_every_command_option_and_config_key_is_listed():
    page = cli_pages.commands_page()
    assert missing(page) == []
    rows = {name: cli_pages.config_rows(name) for name in ("run", "validity", "saturation", "grow", "bounds", "demo")}
    assert all(rows.values()), [n for n, r in rows.items() if not r]          # each reads a config
    assert ("seed", "an integer in [0, inf)") in rows["run"] and rows["demo"] == rows["run"]
    assert any(k == "block.family" for k, _ in rows["bounds"])


def test_a_page_without_a_command_or_an_option_is_caught():
    page = cli_pages.commands_page()
    assert missing(page.replace("## `depthcert grow`", "## grow")) == ["command grow"]
    assert "run `--json`" in missing(page.replace("| `--json` |", "| `--as-json` |"))


def test_the_help_texts_fit_the_page_width():
    text = cli_pages.cli_page()
    assert max(len(line) for line in text.split("```text")[1].split("```")[0].splitlines()) <= cli_pages.HELP_COLUMNS
    for name in ("demo", "certify"):
        assert f"usage: depthcert {name}" in cli_pages.help_of(name)
