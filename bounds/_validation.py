"""Deprecated: the setup parameters are :mod:`bounds.parameters`; the constraint dialect is
:mod:`plumbing.validation`."""
from plumbing.deprecation import moved

__getattr__ = moved("bounds._validation", {
    **{n: "bounds.parameters" for n in ("BLOCK_PARAMETERS", "OPTIONAL", "PARAMETERS")},
    **{n: "plumbing.validation" for n in ("InputError", "Interval", "MISSING", "LEVEL", "check_values")}})
