"""Deprecated alias of :mod:`plumbing.config` and :mod:`plumbing.validation` (moved below bounds/)."""
import warnings

from plumbing.config import get_dotted, merge_config, set_dotted  # noqa: F401
from plumbing.validation import check_schema, check_value  # noqa: F401

__all__ = ["check_schema", "check_value", "get_dotted", "merge_config", "set_dotted"]

warnings.warn("numerics._config is deprecated: import from plumbing.config / plumbing.validation",
              DeprecationWarning, stacklevel=2)
