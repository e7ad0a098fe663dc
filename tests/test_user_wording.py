"""User-facing pages carry no development-process wording.

A reader of the README, of ``docs/*.md``, of the tutorials, of the stored reports under
``docs/reproduce-*/`` or of the API reference (the docstrings of the public objects) meets
no issue numbers, no "session", no "branch" of a repository, no "merged main", no commit
hash given as provenance, no path of the development machine, and no censored or infinite
statistic written as a sentinel number (``1e+06 [1e+06, 1e+06]``): it is written in words.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

#: ``(what, pattern)``: each pattern is one kind of internal wording.
PATTERNS = [
    ("an issue number", re.compile(r"\bissues?\s*#?\d+|\(#\d+\)|\bthe issue'?s\b", re.I)),
    ("'session'", re.compile(r"\bsessions?\b", re.I)),
    # a branch of a repository (a network's residual branch is a term of the theory)
    ("a repository branch", re.compile(r"\b(?:on|from)\s+(?:a|an|the|that|this|my|our|its|another)\s+branch\b"
                                       r"|\b(?:git|feature|main|development|merged|helper)\s+branch\b|\bbranch\s+h\d", re.I)),
    ("'merged main'", re.compile(r"\bmerged\s+main\b|\bon\s+main\b", re.I)),
    ("a commit hash", re.compile(r"\bcommit(?:ted)?\b[^.\n]{0,24}?\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b",
                                 re.I)),
    ("a path of the development machine", re.compile(r"(?<![\w.])/(?:work|root|home/\w+)/|(?<![\w./])shared/seeds\b")),
    ("a temporary path as provenance", re.compile(r"\"[^\"\n]*(?<![\w.])/tmp/[^\"\n]*\"|(?<![\w.])/tmp/\S*\)")),
    ("a sentinel number for a censored statistic", re.compile(r"\b1e\+0?6 \[1e\+0?6, 1e\+0?6\]|\binf \[|\[-?inf, ")),
]


def problems(text: str, where: str = "") -> list[str]:
    """Every internal wording in ``text``, as ``where:line: what: 'the words'``."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in PATTERNS:
            for m in pattern.finditer(line):
                out.append(f"{where}:{number}: {what}: {m.group(0)!r}")
    return out


def user_pages(root: Path) -> list[Path]:
    """The user-facing pages under ``root``: README, docs pages, tutorials' sources, examples, stored reports."""
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md")), *sorted((root / "docs" / "tutorials").rglob("*.md")),
             *sorted((root / "docs" / "gallery").glob("*.py")), *sorted((root / "notebooks").glob("*.ipynb")),
             *sorted((root / "notebooks" / "_src").glob("*.py")),
             *sorted((root / "examples").rglob("*.py")), *sorted((root / "examples").rglob("*.toml"))]   # the README sends users there
    for folder in sorted((root / "docs").glob("reproduce-*")):
        pages += sorted(f for f in folder.rglob("*") if f.is_file() and f.suffix in (".md", ".json", ".log", ".toml", ".txt"))
    return [p for p in pages if p.is_file()]


def page_problems(root: Path) -> list[str]:
    return [p for page in user_pages(root) for p in problems(page.read_text(), str(page.relative_to(root)))]


def _docstrings_of_module(module: str) -> list[tuple[str, str]]:
    """``(where, text)`` of a public module's docstrings (module, classes, functions) and ``#:`` comments."""
    mod = importlib.import_module(module)
    source = Path(mod.__file__).read_text()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = getattr(node, "name", "")
            doc = ast.get_docstring(node, clean=False)
            if doc and not name.startswith("_"):
                out.append((f"{module}.{name}".rstrip("."), doc))
    out += [(f"{module} (#: comment)", line) for line in source.splitlines() if line.lstrip().startswith("#:")]
    return out


def docstring_problems() -> list[str]:
    """Internal wording in the docstrings the API reference is generated from: every public
    module's, and every exported object's (also when it is defined in a private module)."""
    import api_pages

    found = []
    for package in api_pages.PACKAGES:
        for module in api_pages.public_modules(package):
            for where, text in _docstrings_of_module(module):
                found += problems(text, where)
            mod = importlib.import_module(module)
            for name in api_pages.members_of(module):
                obj = getattr(mod, name)
                if inspect.isclass(obj) or inspect.isroutine(obj):
                    docs = [inspect.getdoc(obj) or ""]
                    if inspect.isclass(obj):
                        docs += [inspect.getdoc(m) or "" for k, m in vars(obj).items()
                                 if not k.startswith("_") and (inspect.isroutine(m) or isinstance(m, property))]
                    for doc in docs:
                        found += problems(doc, f"{module}.{name}")
    return sorted(set(found))


def cited_source_problems() -> list[str]:
    """Internal wording in the source pages of the site: the definition (docstring, comments,
    code) of each private object the theory table cites, shown verbatim on its source page."""
    import api_pages
    import theory_table

    entries = theory_table.load(ROOT / "docs" / "theory_map.toml")
    private = sorted({p for e in entries for k in ("objects", "proof_checks", "measurements") for p in e[k]
                      if api_pages.canonical(p) is None and any(c.startswith("_") for c in p.split("."))})
    found = []
    for path in private:
        module, _, name = path.rpartition(".")
        file = Path(importlib.import_module(module).__file__)
        node = api_pages.top_level_bindings(file)[name]
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        found += problems("\n".join(file.read_text().splitlines()[start - 1:node.end_lineno]), path)
    return found


def test_cited_source_pages_have_no_internal_wording(monkeypatch, tmp_path):
    import types

    import theory_table

    assert cited_source_problems() == []
    load = theory_table.load      # a cited private definition that names an issue is caught
    plant = tmp_path / "_wording_plant.py"
    plant.write_text('def planted():\n    """Fixed in issue 12."""\n')
    mod = types.ModuleType("_wording_plant")
    mod.__file__ = str(plant)
    monkeypatch.setitem(sys.modules, "_wording_plant", mod)
    monkeypatch.setattr(theory_table, "load", lambda path: [*load(path), {"objects": ["_wording_plant.planted"],
                                                                           "proof_checks": [], "measurements": []}])
    assert [p.split(": ", 1)[1] for p in cited_source_problems()] == ["an issue number: 'issue 12'"]


def test_user_pages_have_no_internal_wording():
    assert page_problems(ROOT) == []


def test_public_docstrings_have_no_internal_wording():
    assert docstring_problems() == []


def test_cli_help_has_no_internal_wording():
    from depthcert.cli import COMMANDS, build_parser

    texts = [build_parser([]).format_help()] + [build_parser([c])._subparsers._group_actions[0].choices[c].format_help()
                                                for c in COMMANDS]
    assert [p for t in texts for p in problems(t, "depthcert --help")] == []


@pytest.mark.parametrize("planted, what", [
    ("This was fixed in issue 12.", "an issue number"),
    ("(issue 16)", "an issue number"),
    ("A fresh run on the merged main gives 30/30.", "'merged main'"),
    ("Measured in the previous session.", "'session'"),
    ("In the first run, on a branch without the fix, ...", "a repository branch"),
    ("run once after the commit `a1ea37f` of the rules", "a commit hash"),
    ('"out_dir": "/work/runs/suite/out"', "a path of the development machine"),
    ("their summaries are in `shared/seeds/`", "a path of the development machine"),
    ('"table": "/tmp/h25/out/results.csv"', "a temporary path as provenance"),
    ("ratio = 1e+06 [1e+06, 1e+06] over 4 seeds", "a sentinel number for a censored statistic"),
])
def test_a_planted_internal_wording_fails(tmp_path, planted, what):
    """Copies of the user pages pass; the same copies with one planted sentence do not."""
    for page in user_pages(ROOT):
        target = tmp_path / page.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)
    assert page_problems(tmp_path) == []
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text() + "\n" + planted + "\n")
    found = page_problems(tmp_path)
    assert len(found) == 1 and found[0].startswith("README.md:") and f": {what}: " in found[0], found


@pytest.mark.parametrize("allowed", [
    "`g_j` are residual branches; the residual branch of block j",
    "`task.branch_scale` multiplies the teacher's residual branches",
    "depthcert demo --out /tmp/demo",
    "a censored statistic is written as words: not estimable: AG_max does not drop",
    "committed to a route before the data",
    "hidden: branch hidden width; the output of the branch g_j; in the branch",
])
def test_ordinary_wording_passes(allowed):
    assert problems(allowed) == []


def test_a_censored_plateau_ratio_is_written_in_words():
    from numerics.studies.reproduce._studies import NO_EARLY_DROP, ratio_text

    censored = ratio_text(NO_EARLY_DROP, NO_EARLY_DROP, NO_EARLY_DROP)
    assert censored.startswith("not estimable: ") and problems(f"= {censored} over 4 seeds") == []
    assert "1e+06" not in censored and "inf" not in ratio_text(float("inf"), float("-inf"), float("inf"))
    assert ratio_text(0.25, 0.125, 0.5) == "0.25 [0.125, 0.5]"                # a finite ratio stays a number
    assert ratio_text(0.25, 0.125, NO_EARLY_DROP).startswith("0.25 [0.125, unbounded")
    assert problems(f"ratio = {NO_EARLY_DROP:.3g} [{NO_EARLY_DROP:.3g}, {NO_EARLY_DROP:.3g}]")   # what it replaces
