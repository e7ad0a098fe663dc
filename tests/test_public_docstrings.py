"""Every public function and class of the packages' top-level API has a docstring that opens
with a summary sentence (the API reference is generated from them; the doctests run as tests)."""
import importlib
import inspect

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
