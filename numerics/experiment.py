"""Deprecated alias of :mod:`numerics.studies.run` (kept so that existing imports keep working)."""
import warnings

from numerics.studies.run import *  # noqa: F401,F403
from numerics.studies.run import __all__  # noqa: F401
from plumbing.deprecation import moved

__getattr__ = moved("numerics.experiment", {"atomic_write_text": "plumbing.io", "versions": "plumbing.io",
                                            "merge_config": "plumbing.config", "available_memory": "plumbing.machine"})

warnings.warn("numerics.experiment is deprecated: import from numerics.studies.run", DeprecationWarning, stacklevel=2)
