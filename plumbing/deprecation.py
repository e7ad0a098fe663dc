"""Deprecated aliases: a module-level ``__getattr__`` that warns and names the new place.

Example:
    >>> __getattr__ = moved("old.module", {"f": "plumbing.io"})   # doctest: +SKIP
"""
from __future__ import annotations

import importlib
import warnings
from typing import Callable, Mapping

__all__ = ["moved"]


def moved(module: str, names: Mapping[str, str]) -> Callable[[str], object]:
    """``__getattr__`` for ``module``: each of ``names`` (name -> new module) warns, then resolves.

    Raises:
        AttributeError: for any other name, as Python does.
    """
    def __getattr__(name: str):
        if name in names:
            warnings.warn(f"{module}.{name} is deprecated: import it from {names[name]}",
                          DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(names[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
