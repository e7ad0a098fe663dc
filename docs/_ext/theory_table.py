"""The Theory page's map: THEORY section -> theorem object -> proof check -> measurement -> test.

Reads ``docs/theory_map.toml`` (one ``[[entry]]`` per checkable section or subsection of
``docs/THEORY.md``) and writes MyST Markdown: the table (every cell a link) and one page per
referenced test file (a label, a heading and a ``literalinclude`` per referenced test).
No Sphinx import: the conf calls these functions and writes the strings where it wants them.

* :func:`load` -- the entries of the map;
* :func:`check` -- the problems of a map (an object path that does not resolve, a test that
  does not exist, an anchor that is not a heading of THEORY.md, ...); ``[]`` when it is sound;
* :func:`markdown` -- the table; objects, proof checks and measurements as ``{py:obj}`` roles,
  tests as ``{ref}`` roles to :func:`label`, the section as a link to its THEORY heading;
* :func:`notes` -- why a cell is empty ("—"), from each entry's ``note``;
* :func:`tests_pages` -- ``{"tests/bounds/test_routes.md": page, ...}`` for those ``{ref}`` targets;
* :func:`referenced_modules` -- the modules holding the referenced objects (for autodoc).

Object paths are resolved with ``importlib`` + ``getattr`` (the packages must be importable:
the repository root on ``sys.path``); test modules are never imported, only parsed with ``ast``.
"""
from __future__ import annotations

import ast
import importlib
import os
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIST_KEYS = ("objects", "proof_checks", "measurements", "tests")
TEXT_KEYS = ("section", "title", "anchor")
OPTIONAL_KEYS = ("note",)
LINK_KEYS = ("objects", "proof_checks", "measurements")
HEADERS = ("THEORY section", "Theorem / family / function", "Proof check", "Measurement", "Test")
EMPTY = "—"
SEP = ", "

__all__ = ["check", "label", "label_collisions", "load", "markdown", "module_of", "not_exported", "notes", "referenced_modules",
           "resolve", "slug", "tests_index", "tests_pages", "theory_headings"]


def load(path: str | os.PathLike) -> list[dict]:
    """The ``[[entry]]`` tables of a map file, in file order (lists default to ``[]``)."""
    data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    entries = data.get("entry", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path}: 'entry' must be an array of tables ([[entry]]), got {type(entries).__name__}")
    return [{**{k: [] for k in LIST_KEYS}, **e} for e in entries]


# ---- resolving -----------------------------------------------------------------------------
def _import_prefix(path: str):
    """``(module, rest)``: the longest importable module prefix of ``path`` and the attribute names after it."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        name = ".".join(parts[:i])
        try:
            return importlib.import_module(name), parts[i:]
        except ModuleNotFoundError as e:
            if e.name is None or not (name == e.name or name.startswith(e.name + ".")):
                raise        # the module exists but something it imports does not: a real failure
    raise ModuleNotFoundError(f"no importable module in {path!r}", name=parts[0])


def resolve(path: str) -> object:
    """The object a dotted path names (a module, or attributes of the longest importable module prefix).

    Raises:
        ImportError, AttributeError: the path does not resolve.
    """
    if not path or not all(p.isidentifier() for p in path.split(".")):
        raise ValueError(f"{path!r} is not a dotted Python path")
    obj, rest = _import_prefix(path)
    for name in rest:
        obj = getattr(obj, name)
    return obj


def module_of(path: str) -> str:
    """The dotted module that holds ``path`` (the longest importable prefix; a module is its own)."""
    module, _ = _import_prefix(path)
    return module.__name__


def not_exported(entries: list[dict]) -> list[str]:
    """Referenced objects that ``automodule :members:`` of :func:`module_of` may not document.

    Those neither defined in that module nor listed in its ``__all__`` (modules and plain data are
    left out: their documentation depends on the conf). Advisory, not a problem of the map.
    """
    out = []
    for path in _paths(entries):
        mod = importlib.import_module(module_of(path))
        obj = resolve(path)
        if obj is mod or not hasattr(obj, "__module__") or not callable(obj):
            continue
        exported = path.rsplit(".", 1)[-1] in getattr(mod, "__all__", ())
        if obj.__module__ != mod.__name__ and not exported:
            out.append(path)
    return out


def _paths(entries: list[dict]) -> list[str]:
    """Every object path of ``entries`` (objects, proof checks, measurements), first occurrence order."""
    return list(dict.fromkeys(p for e in entries for k in LINK_KEYS for p in e.get(k, [])))


def referenced_modules(entries: list[dict]) -> list[str]:
    """The modules (dotted, sorted) holding the referenced objects, for the API reference's autodoc."""
    return sorted({module_of(p) for p in _paths(entries)})


# ---- tests -------------------------------------------------------------------------------------
def _split_node(node_id: str) -> tuple[str, list[str]]:
    """``("tests/x.py", ["Class", "test_m"])`` of a node id; a ``[param]`` suffix is dropped."""
    file, *names = node_id.split("::")
    if names:
        names[-1] = names[-1].split("[", 1)[0]
    return file, names


def _find_test(tree: ast.Module, names: list[str]) -> ast.AST | None:
    """The module-level ``def test_x`` or the ``class Test...`` method ``names`` points to, else None."""
    body, node = tree.body, None
    for i, name in enumerate(names):
        last = i == len(names) - 1
        kinds = (ast.FunctionDef, ast.AsyncFunctionDef) if last else (ast.ClassDef,)
        node = next((n for n in body if isinstance(n, kinds) and n.name == name), None)
        if node is None:
            return None
        body = node.body
    return node


def _test_problem(node_id: str, root: Path) -> str | None:
    file, names = _split_node(node_id)
    if not file.endswith(".py") or not 1 <= len(names) <= 2:
        return f"test {node_id!r}: not a node id 'path/test_file.py::test_name' or '...::Class::test_name'"
    path = root / file
    if not path.is_file():
        return f"test {node_id!r}: no file {file}"
    if not names[-1].startswith("test") or (len(names) == 2 and not names[0].startswith("Test")):
        return f"test {node_id!r}: pytest collects only 'test*' functions (in 'Test*' classes)"
    if _find_test(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), names) is None:
        return f"test {node_id!r}: {file} has no {'method' if len(names) == 2 else 'module-level function'} {'.'.join(names)}"
    return None


def label(node_id: str, prefix: str = "test-") -> str:
    """``prefix`` + the node id (or dotted path) lowercased, every non-alphanumeric character replaced by ``-``.

    Distinct ids can share a label (``a_b`` and ``a-b``): :func:`check` reports that case.
    """
    return prefix + re.sub(r"[^a-z0-9]", "-", node_id.lower())


def label_collisions(node_ids) -> list[list[str]]:
    """Groups of distinct node ids that :func:`label` maps to one label."""
    groups: dict[str, set[str]] = {}
    for n in node_ids:
        groups.setdefault(label(n), set()).add(n)
    return [sorted(g) for g in groups.values() if len(g) > 1]


# ---- THEORY headings -----------------------------------------------------------------------
def theory_headings(path: str | os.PathLike = ROOT / "docs" / "THEORY.md") -> list[str]:
    """The ``#``..``######`` heading texts of THEORY.md (outside fenced code)."""
    out, fenced = [], False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            out.append(m.group(1))
    return out


def slug(heading: str) -> str:
    """The GitHub-style anchor MyST gives a heading (``myst_heading_anchors``; myst_parser.slugs.github_slugify)."""
    return re.sub(r"[^\w\u4e00-\u9fff\- ]", "", heading.lower().replace(" ", "-"))


# ---- checking ---------------------------------------------------------------------------------
def _entry_problems(i: int, e: dict, headings: list[str] | None) -> list[str]:
    where = f"entry {i} ({e.get('section', '?')} {e.get('title', '?')})"
    out = [f"{where}: unknown key {k!r}" for k in e if k not in TEXT_KEYS + LIST_KEYS + OPTIONAL_KEYS]
    out += [f"{where}: '{k}' must be a non-empty string" for k in TEXT_KEYS if not isinstance(e.get(k), str) or not e.get(k)]
    for k in LIST_KEYS:
        v = e.get(k)
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            out.append(f"{where}: '{k}' must be a list of strings")
        elif not v and not e.get("note"):
            out.append(f"{where}: '{k}' is empty and no 'note' says why")
    if headings is not None and isinstance(e.get("anchor"), str) and e["anchor"] not in headings:
        out.append(f"{where}: anchor {e['anchor']!r} is not a heading of THEORY.md")
    return out


def _object_problem(where: str, path: str) -> str | None:
    try:
        resolve(path)
    except Exception as exc:        # any failure to import or find it is a problem of the map
        return f"{where}: {path!r} does not resolve ({type(exc).__name__}: {exc})"
    return None


def check(entries: list[dict], root: str | os.PathLike = ROOT, theory: str | os.PathLike | None = None) -> list[str]:
    """Every problem of the map, one line each (``[]``: every link is real).

    ``root``: the repository the test node ids are relative to; ``theory``: the THEORY.md whose
    headings the anchors must be (default ``root/docs/THEORY.md`` when it exists).
    """
    root = Path(root)
    theory = Path(theory) if theory is not None else root / "docs" / "THEORY.md"
    headings = theory_headings(theory) if theory.is_file() else None
    problems = []
    for i, e in enumerate(entries):
        problems += _entry_problems(i, e, headings)
        where = f"entry {i} ({e.get('section', '?')})"
        for k in LINK_KEYS:
            problems += [p for p in (_object_problem(f"{where} {k}", x) for x in _strings(e, k)) if p]
        problems += [p for p in (_test_problem(t, root) for t in _strings(e, "tests")) if p]
    ids = {t for e in entries for t in _strings(e, "tests")}
    problems += [f"tests {g} share the label {label(g[0])!r}" for g in label_collisions(ids)]
    return problems


def _strings(e: dict, key: str) -> list[str]:
    v = e.get(key)
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


# ---- rendering -----------------------------------------------------------------------------
def _cell(items: list[str]) -> str:
    return SEP.join(items) if items else EMPTY


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(entries: list[dict], theory_doc: str = "THEORY.md") -> str:
    """The MyST table, one row per entry; ``theory_doc``: THEORY.md relative to the page the table is on.

    The section links need ``myst_heading_anchors >= 2`` in the Sphinx conf (see :func:`slug`).
    """
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for e in entries:
        section = f"[{_escape(e['section'] + ' ' + e['title'])}]({theory_doc}#{slug(e['anchor'])})"
        cells = [section] + [_cell([f"{{py:obj}}`{p}`" for p in e[k]]) for k in LINK_KEYS]
        cells.append(_cell([f"{{ref}}`{label(t)}`" for t in e["tests"]]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def notes(entries: list[dict]) -> str:
    """A MyST bullet list: for each entry with an empty cell, its ``note`` (why the table shows "—")."""
    lines = [f"* **{e['section']} {_escape(e['title'])}** ({', '.join(h for h, k in zip(HEADERS[1:], LIST_KEYS) if not e[k])}): "
             f"{e.get('note', '')}" for e in entries if any(not e[k] for k in LIST_KEYS)]
    return "\n".join(lines) + ("\n" if lines else "")


def _page_name(test_file: str) -> str:
    return str(Path(test_file).with_suffix(".md").as_posix())


def _line_of(path: Path, names: list[str]) -> int:
    node = _find_test(ast.parse(path.read_text(encoding="utf-8")), names)
    return node.lineno if node is not None else 0


def tests_pages(entries: list[dict], out_dir: str | os.PathLike, root: str | os.PathLike = ROOT) -> dict[str, str]:
    """``{page path relative to out_dir: MyST text}``, one page per referenced test file.

    Each referenced test gets ``(label)=``, a heading with its node id, the THEORY sections that
    cite it, and a ``literalinclude`` of its source (path relative to the page's own directory).
    """
    out_dir, root = Path(out_dir).resolve(), Path(root).resolve()
    cited: dict[str, list[str]] = {}
    for e in entries:
        for t in e["tests"]:
            cited.setdefault(t, []).append(f"{e['section']} {e['title']}")
    by_file: dict[str, list[str]] = {}
    for t in cited:
        by_file.setdefault(_split_node(t)[0], []).append(t)
    pages = {}
    for file, ids in by_file.items():
        name = _page_name(file)
        rel = os.path.relpath(root / file, (out_dir / name).parent).replace(os.sep, "/")
        ids = sorted(ids, key=lambda t: (_line_of(root / file, _split_node(t)[1]), t))
        parts = [f"# `{file}`\n", f"The tests of `{file}` that the theory map links to, with their source.\n"]
        for t in ids:
            names = _split_node(t)[1]
            parts.append(f"({label(t)})=\n## `{t}`\n\nCited by: {'; '.join(dict.fromkeys(cited[t]))}.\n\n"
                         f"```{{literalinclude}} {rel}\n:pyobject: {'.'.join(names)}\n:language: python\n```\n")
        pages[name] = "\n".join(parts)
    return pages


def tests_index(pages: dict[str, str], title: str = "Tests cited by the theory map") -> str:
    """A page with a toctree of :func:`tests_pages`' pages (written beside them, at ``out_dir``)."""
    docs = "\n".join(str(Path(p).with_suffix("").as_posix()) for p in sorted(pages))
    return f"# {title}\n\n```{{toctree}}\n:maxdepth: 1\n\n{docs}\n```\n"
