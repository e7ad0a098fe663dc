"""Deprecated alias of :mod:`numerics.studies.sweeps` and :func:`numerics.studies.growth.growth_vs_scratch`
(kept so that existing imports keep working)."""
import warnings

from numerics.studies.growth import growth_vs_scratch  # noqa: F401
from numerics.studies.sweeps import *  # noqa: F401,F403
from numerics.studies.sweeps import __all__ as _all

__all__ = [*_all, "growth_vs_scratch"]

warnings.warn("numerics.sweeps is deprecated: import from numerics.studies.sweeps (growth_vs_scratch: "
              "numerics.studies.growth)", DeprecationWarning, stacklevel=2)
