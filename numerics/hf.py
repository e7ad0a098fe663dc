"""Deprecated alias of :mod:`numerics.interop.hf` (local Hugging Face models moved to the interop home)."""
import warnings

from numerics.interop.hf import *  # noqa: F401,F403
from numerics.interop.hf import __all__  # noqa: F401

warnings.warn("numerics.hf is deprecated: import from numerics.interop.hf", DeprecationWarning, stacklevel=2)
