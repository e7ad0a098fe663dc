"""User-input errors that the CLI turns into one line and exit code 2.

:class:`InputError` is defined in :mod:`plumbing.validation` (the lowest layer, so that
``bounds`` needs nothing from the CLI layer) and re-exported here.
"""
from plumbing.validation import InputError

__all__ = ["InputError"]
