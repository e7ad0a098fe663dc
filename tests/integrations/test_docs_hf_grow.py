"""docs/hf_grow.md: its ```python blocks run, in order, and print what the page says (the page ends with from_pretrained)."""
import contextlib
import io
from pathlib import Path

import pytest

from tests.test_readme_example import code_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "hf_grow.md"


def test_the_page_runs_and_the_saved_folder_loads_as_the_grown_model():
    pytest.importorskip("transformers")
    blocks = [code for lang, code in code_blocks(PAGE.read_text()) if lang == "python"]
    assert len(blocks) == 2 and "from_pretrained(folder)" in blocks[-1]
    ns, out = {}, io.StringIO()
    with contextlib.redirect_stdout(out):
        for code in blocks:
            exec(compile(code, str(PAGE), "exec"), ns)
    assert out.getvalue().splitlines() == ["LlamaForCausalLM 3 [0, 1, 2]", "True", "LlamaForCausalLM 3"]
    assert ns["back"].config.num_hidden_layers == ns["model"].config.num_hidden_layers + 1


def test_the_index_lists_the_page():
    assert "\nhf_grow\n" in (PAGE.parent / "index.md").read_text()
