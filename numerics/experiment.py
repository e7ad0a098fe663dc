"""Deprecated alias of :mod:`numerics.studies.run` (kept so that existing imports keep working)."""
import warnings

from numerics.studies.run import *  # noqa: F401,F403
from numerics.studies.run import __all__  # noqa: F401

warnings.warn("numerics.experiment is deprecated: import from numerics.studies.run", DeprecationWarning, stacklevel=2)
