"""Deprecated alias of :mod:`numerics.interop.gromo` (the GroMo adapter moved to the interop home)."""
import warnings

from numerics.interop.gromo import *  # noqa: F401,F403
from numerics.interop.gromo import __all__  # noqa: F401

warnings.warn("numerics.studies.gromo is deprecated: import from numerics.interop.gromo", DeprecationWarning,
              stacklevel=2)
