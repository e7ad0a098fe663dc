"""Every notebook in notebooks/ executes without error (they only call the library)."""
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    work = tmp_path / path.name
    shutil.copy(path, work)
    nb = nbformat.read(work, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_notebooks_match_their_sources():
    """Each committed notebook is what notebooks/_build.py makes of notebooks/_src (no drift)."""
    import runpy

    build = runpy.run_path(str(NOTEBOOKS[0].parent / "_build.py"))
    sources = build["notebooks"]()
    assert sorted(sources) == [p.name for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert [(("md" if c.cell_type == "markdown" else "code"), c.source) for c in nb.cells] == sources[path.name]
