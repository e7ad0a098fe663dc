"""STYLE's size rules (issue 15): no module over 400 lines, no function over 50 lines (def to last line,
decorators excluded, docstring included), in every package. ``ALLOWED`` lists what is over today (a
ratchet: an entry may only shrink or go; a new offender fails)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("plumbing", "bounds", "numerics", "proofs_check", "depthcert")
MAX_MODULE, MAX_FUNCTION = 400, 50

#: Offenders on the day this test was written: ``path`` or ``path::function`` -> its length then.
ALLOWED: dict[str, int] = {}


def module_lengths(sources: dict[str, str]) -> dict[str, int]:
    return {p: len(src.splitlines()) for p, src in sources.items()}


def function_lengths(sources: dict[str, str]) -> dict[str, int]:
    """``path::qualified name`` -> lines from ``def`` to its last line, for every (nested) function."""
    out = {}
    for path, src in sources.items():
        def visit(node, prefix=""):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{path}::{prefix}{child.name}"] = child.end_lineno - child.lineno + 1
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, ast.ClassDef):
                    visit(child, f"{prefix}{child.name}.")
        visit(ast.parse(src))
    return out


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
