"""Every public function and class of the packages' top-level API has a docstring that opens
with a summary sentence (the API reference is generated from them; the doctests run as tests)."""
import doctest
import importlib
import inspect
import sys
from pathlib import Path

import pytest

PUBLIC = ("depthcert", "depthcert.api", "bounds", "proofs_check", "numerics", "plumbing.validation",
          "numerics.studies.run", "numerics.studies.validity", "numerics.studies.saturation",
          "numerics.studies.growth", "numerics.studies.sweeps", "numerics.studies.reproduce")


def problems(module_name: str) -> list[str]:
    """The public callables of ``module_name`` (its ``__all__``) without a summary line."""
    mod = importlib.import_module(module_name)
    out = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        doc = inspect.getdoc(obj) or ""
        first = doc.strip().splitlines()[0] if doc.strip() else ""
        if len(first) < 10:
            out.append(f"{module_name}.{name}: no summary line")
    return out


@pytest.mark.parametrize("module_name", PUBLIC)
def test_public_api_has_docstrings(module_name):
    assert problems(module_name) == []


def test_the_check_rejects_an_undocumented_function(monkeypatch):
    import bounds

    def undocumented(x):
        return x

    monkeypatch.setattr(bounds, "undocumented", undocumented, raising=False)
    monkeypatch.setattr(bounds, "__all__", [*bounds.__all__, "undocumented"])
    assert problems("bounds") == ["bounds.undocumented: no summary line"]


#: numpydoc sections every public function of ``depthcert`` has (a class: its fields and an example).
FUNCTION_SECTIONS = ("Parameters", "Returns", "Raises", "Examples")
CLASS_SECTIONS = ("Examples",)
#: pytest runs --doctest-modules on these (``depthcert``'s API lives in ``numerics.user_network``)
DOCTESTED = tuple(Path(__file__).resolve().parents[1] / p for p in ("depthcert", "numerics"))


def _sections(doc: str) -> set[str]:
    """The numpydoc section headings of ``doc`` (a title line underlined with dashes)."""
    lines = doc.splitlines()
    return {a.strip() for a, b in zip(lines, lines[1:]) if b.strip() and set(b.strip()) == {"-"}
            and len(b.strip()) >= len(a.strip()) > 0}


def executed_examples(obj) -> int:
    """How many doctest examples of ``obj``'s docstring the test run executes: those that
    ``doctest`` finds in the module defining ``obj``, when that module is under ``depthcert/`` or ``numerics/``."""
    mod = sys.modules.get(getattr(obj, "__module__", ""), None)
    if mod is None or not getattr(mod, "__file__", None) or not set(DOCTESTED) & set(Path(mod.__file__).resolve().parents):
        return 0
    name = f"{mod.__name__}.{obj.__qualname__}"
    return sum(len(t.examples) for t in doctest.DocTestFinder().find(mod) if t.name == name)


def numpydoc_problems(module_name: str = "depthcert") -> list[str]:
    """The public functions and classes of ``module_name.__all__`` without the numpydoc sections
    or without an example the test run executes."""
    mod = importlib.import_module(module_name)
    out = []
    for name in getattr(mod, "__all__", []):
        obj = getattr(mod, name)
        if not (inspect.isclass(obj) or inspect.isroutine(obj)):
            continue
        found = _sections(inspect.getdoc(obj) or "")
        wanted = CLASS_SECTIONS if inspect.isclass(obj) else FUNCTION_SECTIONS
        out += [f"{module_name}.{name}: no {s} section" for s in wanted if s not in found]
        if inspect.isclass(obj) and not found & {"Attributes", "Parameters"}:
            out.append(f"{module_name}.{name}: no Attributes or Parameters section")
        if not executed_examples(obj):
            out.append(f"{module_name}.{name}: no executed example")
    return out


def test_every_public_object_of_depthcert_has_numpydoc_sections_and_an_executed_example():
    assert numpydoc_problems("depthcert") == []


_PLANTED = '''Do something useful.

Parameters
----------
x : int
    A number.

Returns
-------
int

Raises
------
ValueError
    Never.

Examples
--------
    >>> 1 + 1
    2
'''


def test_the_numpydoc_check_rejects_a_function_without_an_executed_example(monkeypatch):
    import depthcert

    def no_example(x):
        """Do something useful, with no numpydoc section at all."""
        return x

    def outside(x):   # the sections and an example, but defined here (tests/): the test run does not execute it
        return x

    outside.__doc__ = _PLANTED
    for f in (no_example, outside):
        monkeypatch.setattr(depthcert, f.__name__, f, raising=False)
    monkeypatch.setattr(depthcert, "__all__", [*depthcert.__all__, "no_example", "outside"])
    assert numpydoc_problems("depthcert") == [
        "depthcert.no_example: no Parameters section", "depthcert.no_example: no Returns section",
        "depthcert.no_example: no Raises section", "depthcert.no_example: no Examples section",
        "depthcert.no_example: no executed example", "depthcert.outside: no executed example"]
    assert executed_examples(depthcert.saturation) > 0          # the real ones are found where they run
