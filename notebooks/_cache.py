"""Executed notebooks, cached under ``notebooks/_executed/`` (not committed).

The test run executes every notebook (``tests/test_notebooks.py``) and stores the executed
copy here; the docs build (``docs/_ext/depthcert_docs.py``) renders the stored copy when its
key still matches, and executes the notebook itself otherwise. The key is a hash of the
notebook and of every source file of the library, so a stored copy is never shown for code
that changed since it ran.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / "_executed"
PACKAGES = ("plumbing", "bounds", "numerics", "proofs_check", "depthcert")
META = "depthcert_cache_key"


def cache_key(path: Path) -> str:
    """sha256 over the notebook's bytes and every ``.py``/``.toml``/``.json`` file of the packages."""
    h = hashlib.sha256(Path(path).read_bytes())
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*")):
            if f.suffix in (".py", ".toml", ".json") and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(ROOT)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()


def cached(path: Path) -> nbformat.NotebookNode | None:
    """The stored executed copy of ``path`` if its key matches the current sources, else None."""
    stored = CACHE / Path(path).name
    if not stored.exists():
        return None
    nb = nbformat.read(stored, as_version=4)
    return nb if nb.metadata.get(META) == cache_key(path) else None


def store(path: Path, nb: nbformat.NotebookNode, key: str | None = None) -> Path:
    """Write the executed ``nb`` of ``path`` to the cache (atomically), tagged with its key."""
    CACHE.mkdir(exist_ok=True)
    nb.metadata[META] = key or cache_key(path)
    target = CACHE / Path(path).name
    fd, tmp = tempfile.mkstemp(dir=CACHE, suffix=".tmp")
    os.close(fd)
    nbformat.write(nb, tmp)
    os.replace(tmp, target)
    return target


def execute(path: Path, workdir: Path | None = None, timeout: int = 1800) -> nbformat.NotebookNode:
    """Execute ``path`` in ``workdir`` (a fresh temporary directory by default) and return it.

    ``timeout`` (seconds per cell) and the kernel's start-up limit are hang guards, not speed checks: generous, so
    that a machine 3x slower or loaded runs every notebook (their cells take seconds)."""
    from nbclient import NotebookClient

    key = cache_key(path)   # of the sources the execution starts from
    own = workdir is None
    work = Path(tempfile.mkdtemp()) if own else Path(workdir)
    try:
        shutil.copy(path, work / Path(path).name)
        nb = nbformat.read(work / Path(path).name, as_version=4)
        NotebookClient(nb, timeout=timeout, startup_timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(work)}}).execute()
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    nb.metadata[META] = key
    return nb


def errors(nb: nbformat.NotebookNode) -> list:
    """The error outputs of an executed notebook."""
    return [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
