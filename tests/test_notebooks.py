"""Every notebook in notebooks/ executes without error (they only call the library)."""
import importlib.util
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
_spec = importlib.util.spec_from_file_location("notebooks_cache", Path(__file__).resolve().parents[1] / "notebooks" / "_cache.py")
cache = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cache)


def test_notebooks_exist():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path):
    """Executes in a temporary directory; the executed copy is stored for the docs build
    (``notebooks/_cache.py``: keyed on the notebook and the library's sources)."""
    nb = cache.execute(path, workdir=tmp_path)
    assert not cache.errors(nb)
    cache.store(path, nb, nb.metadata[cache.META])


def test_notebook_cache_refuses_a_copy_of_other_sources(tmp_path, monkeypatch):
    """A stored copy is rendered only while its key matches the notebook and the library's sources."""
    monkeypatch.setattr(cache, "CACHE", tmp_path)
    path = NOTEBOOKS[0]
    nb = nbformat.read(path, as_version=4)
    assert cache.cached(path) is None                       # nothing stored
    cache.store(path, nb, "a key of other sources")
    assert cache.cached(path) is None                       # stale: refused
    cache.store(path, nb)
    assert cache.cached(path) is not None                   # current: rendered
    other = tmp_path / "other.ipynb"
    other.write_text(path.read_text() + " ")
    assert cache.cache_key(other) != cache.cache_key(path)  # the notebook's own bytes are in the key


def test_notebooks_match_their_sources():
    """Each committed notebook is what notebooks/_build.py makes of notebooks/_src (no drift)."""
    import runpy

    build = runpy.run_path(str(NOTEBOOKS[0].parent / "_build.py"))
    sources = build["notebooks"]()
    assert sorted(sources) == [p.name for p in NOTEBOOKS]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        assert [(("md" if c.cell_type == "markdown" else "code"), c.source) for c in nb.cells] == sources[path.name]
