"""Deprecated alias of :mod:`plumbing.io` and :mod:`plumbing.figures` (I/O moved out of the math layer)."""
import warnings

from plumbing.figures import pyplot, save_figure  # noqa: F401
from plumbing.io import (atomic_write_json, atomic_write_text, check_writable_dir, dumps,  # noqa: F401
                         to_plain, versions)

warnings.warn("bounds._io is deprecated: import from plumbing.io / plumbing.figures",
              DeprecationWarning, stacklevel=2)
