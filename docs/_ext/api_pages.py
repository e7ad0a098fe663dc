"""The API reference, generated: every public module, each object documented once.

An object exported under several public paths (``bounds.THEOREM_1`` and
``bounds.theorems.THEOREM_1``) is documented at its shortest public path only (**Choice**: the
path a user imports, ``import depthcert as dc; dc.saturation``); every other path of the same
object, private ones included, still resolves there (:func:`canonical`, used by the
``missing-reference`` handler of ``depthcert_docs``).
"""
from __future__ import annotations

import ast
import importlib
import inspect
import sys
from functools import lru_cache
from pathlib import Path

from theory_table import resolve   # the one dotted-path resolver of the docs build

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("depthcert", "bounds", "proofs_check", "numerics", "plumbing")
#: public modules that are only deprecated aliases (importing them, or their names, warns)
ALIASES = {"numerics.experiment", "numerics.plots", "numerics.sweeps", "numerics.hf", "numerics.studies.gromo"}
#: values that may be shared by unrelated names (interned): documented where they are assigned
_SCALARS = (int, float, complex, str, bytes, bool, type(None))


def _shared_value(obj) -> bool:
    """A value Python may share between unrelated names (a number, a string, an empty tuple)."""
    return isinstance(obj, _SCALARS) or (isinstance(obj, (tuple, frozenset)) and not obj)


def public_modules(package: str) -> list[str]:
    """``package`` and every module below it with no private component, in file order."""
    names = []
    for f in sorted((ROOT / package).rglob("*.py")):
        parts = list(f.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or "__pycache__" in f.parts:
            continue
        name = ".".join(parts)
        if name not in ALIASES:
            names.append(name)
    return sorted(names, key=lambda n: (n != package, n))


def top_level_bindings(file: Path) -> dict[str, ast.stmt]:
    """``{name: statement}`` for every def, class and assignment at the top level of ``file``
    (the first statement when a name is bound twice)."""
    found: dict[str, ast.stmt] = {}
    for node in ast.parse(Path(file).read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            continue
        for name in names:
            found.setdefault(name, node)
    return found


def _defined_names(module: str) -> list[str]:
    """Public names bound at the top level of the module's own source, in source order."""
    return [n for n in top_level_bindings(importlib.import_module(module).__file__) if not n.startswith("_")]


def exported(module: str) -> list[str]:
    """The names ``module`` exports: its ``__all__``, else the public names its source defines."""
    mod = importlib.import_module(module)
    names = list(getattr(mod, "__all__", None) or _defined_names(module))
    return [n for n in names if hasattr(mod, n)]


@lru_cache(maxsize=1)
def registry() -> dict[int, str]:
    """``id(object) -> the shortest public dotted path`` over every exported object."""
    best: dict[int, str] = {}
    for package in PACKAGES:
        for module in public_modules(package):
            mod = importlib.import_module(module)
            for name in exported(module):
                obj = getattr(mod, name)
                if _shared_value(obj):
                    continue
                path = f"{module}.{name}"
                old = best.get(id(obj))
                if old is None or (path.count("."), path) < (old.count("."), old):
                    best[id(obj)] = path
    return best


def members_of(module: str) -> list[str]:
    """The names documented on ``module``'s entry: those whose shortest public path is here."""
    mod = importlib.import_module(module)
    reg = registry()
    own = set(_defined_names(module))
    out = []
    for name in exported(module):
        obj = getattr(mod, name)
        if _shared_value(obj) or id(obj) not in reg:
            if name in own:
                out.append(name)
        elif reg[id(obj)] == f"{module}.{name}":
            out.append(name)
    return out


def canonical(path: str) -> str | None:
    """Where ``path``'s object is documented (its shortest public path), or None."""
    try:
        obj = resolve(path)
    except Exception:
        return None
    if _shared_value(obj):   # documented where it is assigned, when that module is public
        module, _, name = path.rpartition(".")
        public = module.split(".")[0] in PACKAGES and not any(p.startswith("_") for p in module.split("."))
        try:
            return path if public and name in _defined_names(module) else None
        except Exception:
            return None
    return registry().get(id(obj))


def _is_code(obj) -> bool:
    """A class or a function: autodoc documents it wherever it is exported."""
    return inspect.isclass(obj) or inspect.isroutine(obj)


def _attr_doc(obj, name: str) -> list[str]:
    """The ``#:`` comment or string under the assignment of ``name`` to ``obj``, where it is assigned."""
    from sphinx.pycode import ModuleAnalyzer   # only the docs build needs sphinx

    for modname, mod in sorted(sys.modules.items()):
        if modname.split(".")[0] not in PACKAGES or getattr(mod, name, None) is not obj:
            continue
        try:
            docs = ModuleAnalyzer.for_module(modname).find_attr_docs()
        except Exception:
            continue
        if ("", name) in docs:
            return [line for line in docs[("", name)] if line is not None]
    return []


def _data_entry(module: str, name: str) -> list[str]:
    """A constant (a theorem, a table, a schema) as a ``py:data`` entry, with the comment that
    documents it where it is assigned (autodoc cannot document a re-exported constant)."""
    obj = getattr(importlib.import_module(module), name)
    kind = type(obj)
    home = registry().get(id(kind))
    what = f":class:`{home}`" if home else f"``{kind.__qualname__}``"
    own = [str(getattr(obj, a)).replace("`", "'") for a in ("description", "reference")
           if isinstance(getattr(obj, a, None), str) and getattr(obj, a)]
    own = [f"``{text}``" if any(c in text for c in "|*_\\") else text for text in own]   # formulas as written
    doc = _attr_doc(obj, name) or ([f"A {what}: " + " ".join(own[:1])] + ([f"({own[1]})"] if len(own) > 1 else [])
                                   if own else [f"A {what}."])
    return [f".. py:data:: {name}", f"   :module: {module}", "", *("   " + line if line else "" for line in doc), ""]


#: Packages whose functions and classes get one page each (with an autosummary table on the package's page).
OWN_PAGES = ("depthcert",)


def _shared_entry(module: str, name: str) -> list[str]:
    """A number or string exported by ``module`` (``DEFAULT_EPS``): a ``py:data`` entry with its value
    and the ``#:`` comment of the private module that assigns it."""
    obj = getattr(importlib.import_module(module), name)
    doc = _attr_doc(obj, name) or [f"The value ``{obj!r}``."]
    return [f".. py:data:: {name}", f"   :module: {module}", f"   :value: {obj!r}", "",
            *("   " + line if line else "" for line in doc), ""]


def object_page(module: str, name: str) -> str:
    """One page for one function or class of ``module`` (a class with its public members)."""
    obj = getattr(importlib.import_module(module), name)
    kind = "autoclass" if inspect.isclass(obj) else "autofunction"
    opts = ["   :members:"] if inspect.isclass(obj) else []
    return "\n".join([f"# `{module}.{name}`\n", "```{eval-rst}", f".. {kind}:: {module}.{name}", *opts, "```", ""])


def own_pages(package: str) -> dict[str, str]:
    """``{page name: text}``: one page per function and class ``package`` itself documents."""
    mod = importlib.import_module(package)
    return {f"{package}.{n}": object_page(package, n) for n in members_of(package) if _is_code(getattr(mod, n))}


def _top_of_own_package(package: str) -> list[str]:
    """The package's own entry: its docstring, an autosummary table of its functions and classes
    (each on its own page), and its constants."""
    mod = importlib.import_module(package)
    code = [n for n in members_of(package) if _is_code(getattr(mod, n))]
    data = [n for n in members_of(package) if not _is_code(getattr(mod, n)) and not inspect.ismodule(getattr(mod, n))]
    shared = [n for n in getattr(mod, "__all__", []) if hasattr(mod, n) and not n.startswith("_")
              and _shared_value(getattr(mod, n)) and n not in data]
    lines = [f".. automodule:: {package}", "   :no-members:", "", ".. rubric:: Functions and classes", "",
             ".. autosummary::", "", *(f"   {n}" for n in code), "", ".. rubric:: Constants", ""]
    for name in data:
        lines += _data_entry(package, name)
    for name in shared:
        lines += _shared_entry(package, name)
    return lines


def package_page(package: str) -> str:
    """``package`` and its public modules, each with the members documented there (the functions
    and classes of a package of :data:`OWN_PAGES` on their own pages)."""
    lines = [f"# `{package}`\n", "```{eval-rst}"]
    for module in public_modules(package):
        if module in OWN_PAGES:
            lines += _top_of_own_package(module)
            continue
        mod = importlib.import_module(module)
        members = members_of(module)
        code = [n for n in members if _is_code(getattr(mod, n))]
        data = [n for n in members if not _is_code(getattr(mod, n)) and not inspect.ismodule(getattr(mod, n))]
        lines.append(f".. automodule:: {module}")
        lines += [f"   :members: {', '.join(code)}", "   :undoc-members:", "   :imported-members:"] if code else ["   :no-members:"]
        lines.append("")
        for name in data:
            lines += _data_entry(module, name)
    lines.append("```")
    if package in OWN_PAGES:
        lines += ["", "```{toctree}", ":hidden:", "", *own_pages(package), "```"]
    return "\n".join(lines) + "\n"
