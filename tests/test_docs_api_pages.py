"""The generated API reference documents every exported object exactly once (docs/_ext/api_pages.py)."""
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
import api_pages  # noqa: E402


def test_every_exported_object_is_documented_once_at_its_shortest_path():
    documented = {}
    for package in api_pages.PACKAGES:
        for module in api_pages.public_modules(package):
            mod = importlib.import_module(module)
            for name in api_pages.members_of(module):
                obj = getattr(mod, name)
                if not api_pages._shared_value(obj):
                    documented.setdefault(id(obj), []).append(f"{module}.{name}")
    twice = {paths[0]: paths for paths in documented.values() if len(paths) > 1}
    assert not twice, twice
    registry = api_pages.registry()
    assert set(documented) == set(registry)             # nothing exported is left out
    assert registry[id(importlib.import_module("bounds").THEOREM_1)] == "bounds.THEOREM_1"
    import depthcert.api
    assert registry[id(depthcert.api.saturation)] == "depthcert.saturation"   # what a user imports


def test_other_paths_resolve_to_the_documented_one_and_a_wrong_path_to_nothing():
    assert api_pages.canonical("bounds.theorems.THEOREM_1") == "bounds.THEOREM_1"
    assert api_pages.canonical("depthcert.api._saturation.saturation") == "depthcert.saturation"
    assert api_pages.canonical("bounds.theorems.THEOREM_11") is None
    assert api_pages.canonical("no_such_package.x") is None
    modules = api_pages.public_modules("numerics")
    assert not api_pages.ALIASES & set(modules)                                 # deprecated aliases
    deprecated = [f for f in Path(api_pages.ROOT).glob("numerics/**/*.py")
                  if "is deprecated" in f.read_text() and "\nwarnings.warn(" in f.read_text()]
    assert deprecated and all(".".join(f.relative_to(api_pages.ROOT).with_suffix("").parts) not in modules for f in deprecated)
    assert not any("._" in m for p in api_pages.PACKAGES for m in api_pages.public_modules(p))


def test_every_public_function_and_class_of_depthcert_has_its_own_page():
    import inspect

    import depthcert

    code = {f"depthcert.{n}" for n in depthcert.__all__ if inspect.isclass(getattr(depthcert, n))
            or inspect.isroutine(getattr(depthcert, n))}
    pages = api_pages.own_pages("depthcert")
    assert {"depthcert.constants", "depthcert.Constants", "depthcert.new_parameters", "depthcert.load_grown",
            "depthcert.Suggestion", "depthcert.RefusedInsertion"} <= code
    assert set(pages) == code
    for name, text in pages.items():
        kind = "autoclass" if inspect.isclass(getattr(depthcert, name.split(".")[1])) else "autofunction"
        assert f".. {kind}:: {name}" in text
    assert "depthcert.DEFAULT_ROUTE" not in pages            # a constant is an entry of the package page
