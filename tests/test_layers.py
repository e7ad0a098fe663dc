"""The architecture as a test: layers import downwards only, studies never in a circle.

``plumbing`` (I/O, validation; imports nothing of ours) <- ``bounds`` (mathematics, no torch)
<- ``proofs_check`` and ``numerics`` <- ``depthcert``. Inside ``numerics`` the primitives
never import a study (``numerics.studies.<study>``, one package per study), and the studies'
import graph (a study's package and its private modules count as the study) has no cycle; a
study reaches another only through its public names. Every import counts, including those
inside functions.
"""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("plumbing", "bounds", "proofs_check", "numerics", "depthcert")
ALIASES = {"numerics", "numerics.experiment", "numerics.sweeps", "numerics.plots"}  # deprecated shims
ALLOWED = {"plumbing": {"plumbing"}, "bounds": {"plumbing", "bounds"},
           "proofs_check": {"plumbing", "bounds", "proofs_check"},
           "numerics": {"plumbing", "bounds", "numerics"}, "depthcert": set(PACKAGES)}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: Calls that import the module their first argument names: ``__import__("x")``, ``importlib.import_module("x")``,
#: ``import_module("x")``. A literal name counts as an import statement would; a computed one cannot be read here.
DYNAMIC = {"__import__", "import_module"}


def _dynamic_import(node: ast.AST) -> str | None:
    """The module a call like ``__import__("depthcert")`` imports (a string literal), else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    f = node.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
    arg = node.args[0]
    if name in DYNAMIC and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def _imports(path: Path, module: str, text: str | None = None) -> list[tuple[str, str | None]]:
    """``(imported module, imported name or None)`` for every import statement in the file, and for every
    ``__import__`` / ``importlib.import_module`` call with a literal module name."""
    out = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8") if text is None else text)):
        if (dyn := _dynamic_import(node)) is not None:
            out.append((dyn, None))
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            out += [(base, a.name) for a in node.names]
    return out


def import_graph() -> dict[str, list[tuple[str, str | None]]]:
    return {_module_name(p): _imports(p, _module_name(p))
            for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def study_of(module: str) -> str | None:
    """``numerics.studies.run`` and ``numerics.studies.run._outputs`` -> ``"run"``."""
    if not module.startswith("numerics.studies."):
        return None
    return module.split(".")[2]


def layer_violations(graph) -> list[str]:
    bad = []
    for mod, imports in graph.items():
        top = mod.split(".")[0]
        for target, _ in imports:
            t_top = target.split(".")[0]
            if t_top in PACKAGES and t_top not in ALLOWED[top]:
                bad.append(f"{mod} imports {target}")
            if top == "bounds" and t_top == "torch":
                bad.append(f"{mod} imports torch")
            primitive = top == "numerics" and study_of(mod) is None and mod not in ALIASES \
                and not mod.startswith(("numerics.studies", "numerics.interop.gromo"))
            if primitive and (target.startswith("numerics.studies") or target in ALIASES - {"numerics"}):
                bad.append(f"primitive {mod} imports the study {target}")
    return bad


def study_edges(graph) -> set[tuple[str, str]]:
    edges = set()
    for mod, imports in graph.items():
        src = study_of(mod)
        for target, name in imports:
            full = target if name is None or study_of(target) else f"{target}.{name}"
            dst = study_of(full) or study_of(target)
            if src and dst and src != dst:
                edges.add((src, dst))
    return edges


def private_cross_study_imports(graph) -> list[str]:
    bad = []
    for mod, imports in graph.items():
        src = study_of(mod)
        for target, name in imports:
            dst = study_of(target)
            private = any(part.startswith("_") for part in target.split(".")[3:]) or (name or "").startswith("_")
            if src and dst and src != dst and private:
                bad.append(f"{mod} imports the private {target}{'.' + name if name else ''}")
    return bad


def find_cycle(edges) -> list[str] | None:
    """A cycle of the directed graph ``edges`` as a list of nodes, or None."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        succ.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(node, path):
        state[node] = 1
        for nxt in sorted(succ.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cyc := visit(nxt, path + [nxt])):
                return cyc
        state[node] = 2
        return None

    for start in sorted(succ):
        if start not in state and (cyc := visit(start, [start])):
            return cyc
    return None


def test_layers_import_downwards_only():
    assert layer_violations(import_graph()) == []


def test_studies_form_no_cycle():
    assert find_cycle(study_edges(import_graph())) is None


def test_studies_use_each_other_only_through_public_names():
    assert private_cross_study_imports(import_graph()) == []


@pytest.mark.parametrize("edges, cyclic", [
    ({("run", "outputs"), ("outputs", "plots"), ("plots", "sweeps"), ("sweeps", "run")}, True),  # the old circle
    ({("sweeps", "run"), ("validity", "run"), ("reproduce", "sweeps")}, False),
    ({("a", "a2"), ("a2", "a")}, True),
])
def test_cycle_finder_rejects_a_circle(edges, cyclic):
    assert (find_cycle(edges) is not None) == cyclic


@pytest.mark.parametrize("planted", ['__import__("depthcert")', 'importlib.import_module("depthcert.api")',
                                     'import_module("numerics.studies.run")'])
def test_a_planted_dynamic_import_in_plumbing_is_a_layer_violation(planted):
    """plumbing/io.py with a dynamic import of a package above it (as it had for the version) is caught."""
    path = ROOT / "plumbing" / "io.py"
    text = path.read_text(encoding="utf-8") + f"\n\ndef _planted():\n    return {planted}\n"
    graph = import_graph()
    assert layer_violations(graph) == []
    graph["plumbing.io"] = _imports(path, "plumbing.io", text)
    assert any(v.startswith("plumbing.io imports ") for v in layer_violations(graph))


def test_plumbing_reads_the_version_from_the_metadata():
    """The version plumbing stamps on records is depthcert's own, without importing it."""
    import depthcert
    from plumbing.io import package_version

    assert package_version() == depthcert.__version__


def test_checkers_reject_bad_graphs():
    graph = {"bounds.x": [("torch", None), ("numerics.models", None)],
             "numerics.models": [("numerics.studies.run", "run_experiment")],
             "numerics.studies.sweeps": [("numerics.studies.run._outputs", "to_json"),
                                         ("numerics.studies.run", "_make_task")]}
    assert len(layer_violations(graph)) == 3
    assert len(private_cross_study_imports(graph)) == 2


#: What only a figure or a reader of stored ``depthcert run`` outputs needs: drawing, or a result file's name.
FIGURE_IMPORTS = ("matplotlib", "plumbing.figures")
RUN_OUTPUT_NAMES = ("result.json", "bound_terms.png", "localised_terms.png")
#: Deprecated aliases that only re-export a moved module (``bounds._io``: :mod:`plumbing.figures` and :mod:`plumbing.io`).
REEXPORT_ALIASES = {"bounds/_io.py"}


def bounds_reading_run_outputs(sources: dict[str, str]) -> list[str]:
    """``bounds/`` files (``{path: source}``) that draw figures or read a stored run's output: a ``plot_*``
    module, an import of a plotting module, or a string (not a docstring) naming a run output file."""
    bad = []
    for path, src in sources.items():
        if Path(path).name.startswith("plot_"):
            bad.append(f"{path} is a figure module")
        tree = ast.parse(src)
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for target in sorted({t for t, _ in _imports(Path(path), "bounds.x", src)}):
            if target.startswith(FIGURE_IMPORTS) and path not in REEXPORT_ALIASES:
                bad.append(f"{path} imports {target}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and any(name in node.value for name in RUN_OUTPUT_NAMES):
                bad.append(f"{path} names the run output {node.value!r}")
    return bad


def _bounds_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "bounds").rglob("*.py"))}


def test_bounds_knows_nothing_of_the_run_outputs():
    """The figures over ``run`` outputs (``plot_bound_terms``, ``plot_localised_terms``) live with the run study."""
    assert bounds_reading_run_outputs(_bounds_sources()) == []
    assert not list((ROOT / "bounds").rglob("plot_*.py"))


@pytest.mark.parametrize("path, planted", [
    ("bounds/plot_terms.py", "X = 1\n"),
    ("bounds/routes.py", "from plumbing.figures import pyplot\n"),
    ("bounds/routes.py", "def f():\n    import matplotlib.pyplot as plt\n    return plt\n"),
    ("bounds/routes.py", "def f(folder):\n    return folder / 'result.json'\n"),
])
def test_a_planted_figure_or_run_output_reader_in_bounds_is_caught(path, planted):
    real = ROOT / path
    text = real.read_text(encoding="utf-8") if real.is_file() else ""
    assert bounds_reading_run_outputs({path: text}) == ([f"{path} is a figure module"] if "plot_" in path else [])
    assert len(bounds_reading_run_outputs({path: text + "\n" + planted})) == 1


def test_a_docstring_naming_a_run_output_is_not_a_reader():
    assert bounds_reading_run_outputs({"bounds/x.py": '"""Annotates result.json rows."""\nY = 2\n'}) == []
