"""STYLE's size rules (issue 15): no module over 400 lines, no function over 50 lines (def to last line,
decorators excluded), in every package. The rules count code: the lines of docstrings (module, class and
function docstrings, found with ``ast``) are not counted, so a long docstring is fine and is never moved
out of its function to meet the rule. ``ALLOWED`` lists what is over today (a ratchet: an entry may only
shrink or go; a new offender fails)."""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("plumbing", "bounds", "numerics", "proofs_check", "depthcert")
MAX_MODULE, MAX_FUNCTION = 400, 50

#: Offenders on the day this test was written: ``path`` or ``path::function`` -> its length then.
ALLOWED: dict[str, int] = {}


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The line numbers (1-based) of every docstring in ``tree``: the first statement of the module, of a
    class or of a function when it is a string literal."""
    lines, stack = set(), [tree]
    while stack:                      # statements only: a docstring is never inside an expression
        node = stack.pop()
        stack += [c for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler, ast.match_case))]
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


@lru_cache(maxsize=None)
def _measure(src: str) -> tuple[int, dict[str, int]]:
    """``(code lines of the module, {qualified name: code lines from def to its last line})``, docstring lines
    not counted, for every (nested) function; one parse (the tree is not kept)."""
    tree = ast.parse(src)
    docs, out = _docstring_lines(tree), {}

    def visit(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = range(child.lineno, child.end_lineno + 1)
                out[f"{prefix}{child.name}"] = len(span) - len(docs.intersection(span))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
    visit(tree)
    return len(src.splitlines()) - len(docs), out


def module_lengths(sources: dict[str, str]) -> dict[str, int]:
    """``path`` -> its lines, less its docstrings' lines."""
    return {p: _measure(src)[0] for p, src in sources.items()}


def function_lengths(sources: dict[str, str]) -> dict[str, int]:
    """``path::qualified name`` -> lines from ``def`` to its last line, less the docstrings' lines in that
    span, for every (nested) function."""
    return {f"{path}::{name}": n for path, src in sources.items() for name, n in _measure(src)[1].items()}


def offenders(sources: dict[str, str]) -> dict[str, int]:
    over = {p: n for p, n in module_lengths(sources).items() if n > MAX_MODULE}
    over.update({f: n for f, n in function_lengths(sources).items() if n > MAX_FUNCTION})
    return over


def _sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def test_no_module_over_400_lines_and_no_function_over_50():
    found = offenders(_sources())
    new = {k: n for k, n in found.items() if k not in ALLOWED or n > ALLOWED[k]}
    assert not new, f"over the size rules (modules {MAX_MODULE}, functions {MAX_FUNCTION} lines): {new}"


def test_the_checker_reports_a_long_function_and_a_long_module():
    body = "".join(f"        x{i} = {i}\n" for i in range(50))
    src = "class A:\n    def long(self):\n" + body + "        return 0\n"     # def + 50 + return: 52 lines
    found = offenders({"m.py": src, "big.py": "x = 1\n" * 401, "ok.py": "def f():\n    return 1\n"})
    assert found == {"m.py::A.long": 52, "big.py": 401}


def _lines(prefix: str, n: int, text: str = "line") -> str:
    return "".join(f"{prefix}{text}{i} = {i}\n" if text == "x" else f"{prefix}{text} {i}\n" for i in range(n))


def test_docstrings_are_not_counted_but_code_is():
    doc = '    """Summary.\n' + _lines("    ", 200) + '    """\n'                  # a 202-line docstring
    short = "def f():\n" + doc + _lines("    ", 48, "x") + "    return 0\n"      # def + 48 + return: 50 code lines
    long_ = "def g():\n" + doc + _lines("    ", 49, "x") + "    return 0\n"      # 51 code lines
    module_doc = '"""Module.\n' + _lines("", 300) + '"""\n'                       # a 302-line module docstring
    found = offenders({"short.py": short, "long.py": long_, "doc_only.py": module_doc + "x = 1\n" * 400,
                       "code.py": module_doc + "x = 1\n" * 401})
    assert found == {"long.py::g": 51, "code.py": 401}


def test_a_string_that_is_not_a_docstring_is_counted():
    constant = 'X = """\n' + _lines("", 399) + '"""\n'                          # a module constant: 401 lines
    later = "def h():\n    x = 0\n    '''\n" + _lines("    ", 47) + "    '''\n    return x\n"   # not first: 52 lines
    assert offenders({"constant.py": constant, "later.py": later}) == {"constant.py": 401, "later.py::h": 52}
