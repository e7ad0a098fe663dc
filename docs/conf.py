"""Sphinx configuration of the depthcert documentation site.

Build (from the repository root, on a clean clone):

    pip install -c constraints.txt -e ".[docs]" && python -m sphinx -W --keep-going -n -b html docs docs/_build/html

``-W`` turns every warning into an error, ``-n`` (nitpicky) reports every cross-reference
that does not resolve; external links are not checked (there is no network). Set
``DEPTHCERT_DOCS_LIGHT=1`` for a build without the executed gallery and notebooks
(a quick check of the text and the references).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import depthcert  # noqa: E402

LIGHT = os.environ.get("DEPTHCERT_DOCS_LIGHT", "") not in ("", "0")

project = "depthcert"
author = "the depthcert developers"
copyright = "2026, the depthcert developers"
release = depthcert.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx_gallery.gen_gallery",
    "depthcert_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.json", "reproduce-*/figures/*.md", "reproduce-*/validity/*.md",
                    "fuzz-round5-fresh/before_*.md", "fuzz-round5-fresh/after_*.md", "gallery/*", "Thumbs.db", ".DS_Store"]

# --- MyST --------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 4
# notebooks are executed by depthcert_docs (with a cache keyed on the notebook and the
# library's sources), so myst-nb only renders what is stored
nb_execution_mode = "off"
nb_merge_streams = True

# --- autodoc -----------------------------------------------------------------------------
autodoc_default_options: dict[str, object] = {}   # every page names its members (docs/_ext/api_pages.py)
autodoc_member_order = "bysource"
autosummary_generate = False   # the pages are written by docs/_ext (one per function and class of depthcert)
autodoc_preserve_defaults = True   # a default is shown as written, not as the repr of a large object
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_typehints_description_target = "documented"   # a field is listed once, where the docstring names it
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_ivar = True
nitpicky = True
# references into other projects' documentation are not resolvable offline (no intersphinx)
nitpick_ignore_regex = [
    # private modules and names (a component starting with "_") are implementation, not documented
    ("py:.*", r"(.*\.)?_[A-Za-z0-9].*"),
    ("py:.*", r"(nn|torch|numpy|np|sympy|sp|pandas|pd|matplotlib|plt|scipy|z3|nbformat|ray|lightning|transformers|argparse|collections|typing"
              r"|pathlib|os|io|enum|dataclasses|abc|types|fractions|decimal|numbers|random)(\..*)?"),
    # numpydoc type words that are not classes ("int, keyword-only, default 16", "{'zero', 'jumpboard'}")
    ("py:class", r"(keyword-only|sequence|iterable|data|default.*|[0-9.e+-]+|\{.*|.*\}|\".*\"|'.*')"),
    ("py:class", r"(optional|callable|array-like|array_like|default.*|Tensor|ndarray|Path|Module|DataLoader|Dataset"
                 r"|Figure|Axes|DataFrame|Expr|Symbol|Rational|Callable|Iterable|Iterator|Mapping|Sequence|Any|Literal"
                 r"|NDArray|ArrayLike|Self|T|K|V|np\.ndarray|float|int|str|bool|dict|list|tuple|None|bytes|object)"),
]

# --- the executed gallery ------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "False" if LIGHT else "True",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "write_computation_times": False,
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
}

# --- HTML ----------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"depthcert {release}"
html_static_path = ["_static"]
html_css_files = ["depthcert.css"]   # help texts wrap instead of being cut; wide tables scroll
# "--" stays two hyphens (commands are copied from the pages), quotes stay straight
smartquotes = False
