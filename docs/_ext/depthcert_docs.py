"""Pages generated at build time (under ``docs/_generated/``, not committed).

* ``cli.md`` and ``commands.md`` — every command's ``--help``, and every command's options and
  config keys in tables, produced by the CLI's own parsers and the config schemas
  (``cli_pages.py``), so the reference cannot drift from the program;
* ``notebooks/*.ipynb`` — the notebooks with their outputs: the executed copy the test
  run stored (``notebooks/_cache.py``) when its key still matches, else executed here;
* ``theory.md`` and ``tests/*.md`` — THEORY section -> theorem object -> proof check ->
  measurement -> test (``docs/theory_map.toml``, ``theory_table.py``).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from sphinx.util import logging

import api_pages
import cli_pages

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
OUT = HERE / "_generated"
log = logging.getLogger(__name__)


WRITTEN: set[Path] = set()


def _write(path: Path, text: str) -> None:
    """Write only when the text changed (Sphinx rebuilds what changed)."""
    WRITTEN.add(path.resolve())
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _cache_module():
    spec = importlib.util.spec_from_file_location("notebooks_cache", ROOT / "notebooks" / "_cache.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def notebooks(light: bool) -> None:
    """Copy every notebook into ``_generated/notebooks``, executed (cached or run now)."""
    import nbformat

    cache = _cache_module()
    target = OUT / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        if light:
            nb = nbformat.read(path, as_version=4)
        elif (nb := cache.cached(path)) is not None:
            log.info(f"[depthcert_docs] {path.name}: the stored executed copy (key matches)")
        else:
            log.info(f"[depthcert_docs] executing {path.name} (no stored copy of the current sources)")
            nb = cache.execute(path)
            if cache.errors(nb):
                raise RuntimeError(f"{path.name}: a cell raised")
            cache.store(path, nb, nb.metadata[cache.META])   # the key execute computed, not hashed again
        _write(target / path.name, nbformat.writes(nb))


THEORY_INTRO = """# Theory

The formalisation the toolkit implements (this project's own statement of the two papers'
results, not a quotation) is {doc}`../THEORY`. The table links each section to the objects that
state it, the machine checks of its proofs, the code that measures its quantities and the
tests that hold them (each test page shows the test's source). It is generated from
`docs/theory_map.toml`; the build checks that every object imports and every test exists.

"""


def _source_label(path: str) -> str:
    import theory_table

    return theory_table.label(path, prefix="src-")


def _definition_lines(path: str) -> tuple[Path, int, int]:
    """The file of ``path``'s module and the lines of its top-level definition (def, class or assignment)."""
    import importlib

    module, _, name = path.rpartition(".")
    file = Path(importlib.import_module(module).__file__)
    node = api_pages.top_level_bindings(file).get(name)
    if node is None:
        raise LookupError(f"theory_map.toml: no top-level definition of {path}")
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return file, start, node.end_lineno


def _source_pages(paths: list[str]) -> None:
    """One page per module: the source of each private object the theory table cites."""
    by_module: dict[str, list[str]] = {}
    for path in paths:
        by_module.setdefault(path.rpartition(".")[0], []).append(path)
    pages = []
    for module, items in sorted(by_module.items()):
        page = OUT / "source" / f"{module}.md"
        parts = [f"# `{module}`\n", "Implementation (a private module, not in the API reference): the definitions "
                 "the theory table cites, with their source.\n"]
        for path in items:
            file, start, end = _definition_lines(path)
            rel = os.path.relpath(file, page.parent).replace(os.sep, "/")
            parts.append(f"({_source_label(path)})=\n## `{path}`\n\n```{{literalinclude}} {rel}\n:lines: {start}-{end}\n"
                         f":lineno-start: {start}\n:language: python\n```\n")
        _write(page, "\n".join(parts))
        pages.append(f"source/{module}")
    _write(OUT / "source_index.md", "# Sources cited by the theory map\n\n```{toctree}\n:maxdepth: 1\n\n"
           + "\n".join(pages) + "\n```\n")


def theory(app) -> None:
    """The theory table and the pages of the tests it links to (when the map exists)."""
    mapping = HERE / "theory_map.toml"
    if not mapping.exists():
        return
    import theory_table

    entries = theory_table.load(mapping)
    problems = theory_table.check(entries)
    for p in problems:
        log.warning(f"theory_map.toml: {p}")
    table = theory_table.markdown(entries, theory_doc="../THEORY.md")
    private = sorted({p for e in entries for k in ("objects", "proof_checks", "measurements") for p in e[k]
                      if api_pages.canonical(p) is None and any(c.startswith("_") for c in p.split("."))})
    for path in private:   # not in the API reference: linked to its source instead
        table = table.replace(f"{{py:obj}}`{path}`", f"{{ref}}`{path} <{_source_label(path)}>`")
    _write(OUT / "theory.md", THEORY_INTRO + table + "\n" + theory_table.notes(entries)
           + "\n```{toctree}\n:hidden:\n\n../THEORY\ntests_index\nsource_index\n```\n")
    _source_pages(private)
    pages = theory_table.tests_pages(entries, OUT, ROOT)
    for name, text in pages.items():
        _write(OUT / name, text)
    _write(OUT / "tests_index.md", theory_table.tests_index(pages))


def _remove_stale() -> None:
    """A generated page this build did not write (a removed module, a test no longer cited) goes."""
    for f in sorted(OUT.rglob("*"), reverse=True):
        if f.is_file() and f.resolve() not in WRITTEN:
            f.unlink()
        elif f.is_dir() and not any(f.iterdir()):
            f.rmdir()


def generate(app) -> None:
    WRITTEN.clear()
    light = os.environ.get("DEPTHCERT_DOCS_LIGHT", "") not in ("", "0")
    _write(OUT / "cli.md", cli_pages.cli_page())
    _write(OUT / "commands.md", cli_pages.commands_page())
    for package in api_pages.PACKAGES:
        _write(OUT / "api" / f"{package}.md", api_pages.package_page(package))
        if package in api_pages.OWN_PAGES:
            for name, text in api_pages.own_pages(package).items():
                _write(OUT / "api" / f"{name}.md", text)
    notebooks(light)
    theory(app)
    _remove_stale()


def missing_reference(app, env, node, contnode):
    """A Python reference to any path of a documented object resolves to where it is documented
    (of whatever kind it is documented as: a callable constant is documented as a function)."""
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip(".~")
    module = node.get("py:module")
    for path in ([f"{module}.{target}"] if module and not target.startswith(module + ".") else []) + [target]:
        home = api_pages.canonical(path)
        found = home and _resolve(app, env, node, contnode, home)
        if found:
            return found
    return _unique_suffix(app, env, node, contnode, target, module or "")


def _resolve(app, env, node, contnode, target: str):
    """The link to the documented ``target``: of the reference's own kind, else of any kind."""
    domain, doc = env.get_domain("py"), node.get("refdoc", "")
    found = domain.resolve_xref(env, doc, app.builder, node["reftype"], target, node, contnode)
    if found is None:
        hits = domain.resolve_any_xref(env, doc, app.builder, target, node, contnode)
        found = hits[0][1] if hits else None
    return found


def _unique_suffix(app, env, node, contnode, target: str, module: str):
    """A short name (``Setup``, ``THEOREM_2``, ``ExpandedModel.with_V``) written in a docstring of
    another module: linked when exactly one documented object of ours ends with it (the
    nearest to the referring module when several do)."""
    domain = env.get_domain("py")
    entries = domain.objects
    hits = sorted({entries[n].node_id: n for n in entries if n.endswith("." + target)
                   and not entries[n].aliased}.values())
    if len(hits) > 1:   # prefer those sharing the longest module prefix with the reference
        def shared(name):
            a, b = name.split("."), module.split(".")
            return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        best = max(map(shared, hits))
        hits = [h for h in hits if shared(h) == best]
    return _resolve(app, env, node, contnode, hits[0]) if len(hits) == 1 else None


def plain_attribute_docstrings(app, what, name, obj, options, lines):
    """Napoleon reads a data or attribute docstring's first ``text: text`` as ``type: description``;
    ours are prose (``#: The largest integer a config value may hold: 2^63 - 1``): a ``:type:``
    that napoleon made of prose (it has a space) goes back in front of the text."""
    if what not in ("data", "attribute"):
        return
    for i, line in enumerate(lines):
        if line.startswith(":type: ") and " " in line[len(":type: "):].strip():
            prose = line[len(":type: "):].strip()
            del lines[i]
            first = next((j for j, text in enumerate(lines) if text.strip()), None)
            if first is None:
                lines.append(prose)
            else:
                lines[first] = f"{prose}: {lines[first].lstrip()}"
            return


def public_signature(app, what, name, obj, options, signature, return_annotation):
    """No private field in a signature: a parameter whose name starts with ``_`` (a dataclass's
    internal state, ``_blocks=None``) is implementation and is left out of the page."""
    if not signature or "_" not in signature:
        return None
    import re

    inner = signature[1:-1]
    parts, depth, cur = [], 0, ""
    for ch in inner:           # split on top-level commas only (defaults may hold brackets)
        depth += 1 if ch in "([{" else (-1 if ch in ")]}" else 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    kept = [p for p in parts if not re.match(r"\s*\*{0,2}_[A-Za-z0-9]", p)]
    return ("(" + ",".join(kept).lstrip() + ")", return_annotation)


def keep_listed_members(app, what, name, obj, skip, options):
    """Every module entry lists its members explicitly (``api_pages``): keep each, documented
    or not (a constant such as ``bounds.THEOREM_1`` carries no docstring of its own)."""
    return False if what == "module" else None


def setup(app):
    app.connect("autodoc-skip-member", keep_listed_members)
    app.connect("autodoc-process-signature", public_signature)
    app.connect("builder-inited", generate)
    app.connect("autodoc-process-docstring", plain_attribute_docstrings, priority=900)
    app.connect("missing-reference", missing_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
