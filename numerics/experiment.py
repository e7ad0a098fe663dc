"""Alias of :mod:`numerics.studies.run` (kept so that existing imports keep working)."""
from numerics.studies.run import *  # noqa: F401,F403
from numerics.studies.run import __all__  # noqa: F401
