"""Build the notebooks from their cell lists (run: python notebooks/_build.py).

Each notebook ``notebooks/NAME.ipynb`` is defined by ``notebooks/_src/nbNAME.py`` (a list
``CELLS`` of ``("md" | "code", source)``), one file per notebook so that work on one
notebook never touches another. Notebooks only call the library; they define no math
(STYLE.md). CI executes them (tests/test_notebooks.py). Cell ids are derived from the
notebook and the cell position, so a rebuild without changes changes nothing.
"""
import hashlib
import runpy
from pathlib import Path

import nbformat as nbf

HERE = Path(__file__).parent


def notebooks() -> dict[str, list[tuple[str, str]]]:
    """``{"NAME.ipynb": cells}`` for every ``_src/nbNAME.py``."""
    return {p.stem.removeprefix("nb") + ".ipynb": runpy.run_path(str(p))["CELLS"]
            for p in sorted((HERE / "_src").glob("nb*.py"))}


def build() -> None:
    for name, cells in notebooks().items():
        nb = nbf.v4.new_notebook()
        nb.cells = [nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src) for kind, src in cells]
        for i, cell in enumerate(nb.cells):
            cell["id"] = hashlib.sha1(f"{name}:{i}".encode()).hexdigest()[:8]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbf.write(nb, HERE / name)


if __name__ == "__main__":
    build()
