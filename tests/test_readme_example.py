"""The README's first code block runs as written (a newcomer copies it first)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def code_blocks(text: str) -> list[tuple[str, str]]:
    """``[(language, code)]`` of the fenced blocks of a Markdown text, in order."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def test_code_blocks_finds_every_fenced_block():
    text = "intro\n```python\nx = 1\n```\ntext\n```bash\necho hi\n```\n"
    assert code_blocks(text) == [("python", "x = 1\n"), ("bash", "echo hi\n")]
    assert code_blocks("no code here") == []


def test_the_first_block_is_a_complete_python_example_on_your_own_network():
    lang, code = code_blocks(README.read_text())[0]
    assert lang == "python"
    for call in ("dc.saturation(", "dc.insert_block(", "dc.grow(", "dc.certify_insertion("):
        assert call in code, call
    assert "class " in code and ".backward()" in code          # the network is built and trained in it


def test_the_readme_example_runs_as_written(tmp_path, monkeypatch, capsys):
    torch = pytest.importorskip("torch")
    _, code = code_blocks(README.read_text())[0]
    monkeypatch.chdir(tmp_path)                                  # whatever it writes stays here
    threads = torch.get_num_threads()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1") or 1))
    namespace: dict = {"__name__": "__readme__"}
    try:
        exec(compile(code, str(README) + ":first code block", "exec"), namespace)
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    print(out)                                                   # -s shows what the README describes
    rep, cert = namespace["rep"], namespace["cert"]
    assert rep.verdict in ("improvable", "saturated", "undetermined") and str(rep) in out
    assert cert.route in out and len(cert.rows) == len(cert.table())
    assert namespace["deeper"] is not namespace["model"]         # insert_block returned a copy
