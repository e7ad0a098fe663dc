"""Every former import path still works, warns (DeprecationWarning) and names the new place (issue 15)."""
from __future__ import annotations

import importlib
import sys
import warnings

import pytest

MODULES = {"numerics.experiment": "numerics.studies.run", "numerics.sweeps": "numerics.studies.sweeps",
           "numerics.plots": "numerics.studies", "numerics._config": "plumbing.", "numerics._store": "plumbing.store",
           "bounds._io": "plumbing.io", "numerics.hf": "numerics.interop.hf",
           "numerics.studies.gromo": "numerics.interop.gromo"}
NAMES = [("numerics.studies.run", "merge_config", "plumbing.config"),
         ("numerics.studies.run", "atomic_write_text", "plumbing.io"),
         ("numerics.studies.run", "available_memory", "plumbing.machine"),
         ("numerics.experiment", "merge_config", "plumbing.config"),
         ("numerics.studies.scaling", "plot_kind", "numerics.studies.figures"),
         ("bounds._validation", "InputError", "plumbing.validation"),
         ("bounds._validation", "PARAMETERS", "bounds.parameters")]


@pytest.mark.parametrize("old, new", MODULES.items())
def test_a_moved_module_warns_and_names_its_new_place(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        importlib.import_module(old)


@pytest.mark.parametrize("module, name, new", NAMES)
def test_a_moved_name_warns_and_is_the_same_object(module, name, new):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mod = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        obj = getattr(mod, name)
    assert obj is getattr(importlib.import_module(new), name)


def test_an_unknown_name_is_still_an_attribute_error():
    import numerics.studies.run as run

    with pytest.raises(AttributeError):
        run.no_such_name  # noqa: B018
