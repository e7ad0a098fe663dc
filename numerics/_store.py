"""Deprecated alias of :mod:`plumbing.store` (stored results moved below bounds/)."""
import warnings

from plumbing.store import *  # noqa: F401,F403
from plumbing.store import __all__  # noqa: F401

warnings.warn("numerics._store is deprecated: import from plumbing.store", DeprecationWarning, stacklevel=2)
