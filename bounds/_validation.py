"""Parameter constraints as data, shared by the config loader, the API and the tests.

Each constraint is an :class:`Interval`; :data:`PARAMETERS` maps every setup key to its
constraint so that invalid values can be generated automatically in property tests
(scikit-learn's ``_parameter_constraints`` idea).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


#: Sentinel for a key that is absent from the input.
MISSING = _Missing()


class InputError(ValueError):
    """Bad user input: names the key, the allowed range and the value received."""

    def __init__(self, key: str, allowed: str, value: object):
        self.key, self.allowed, self.value = key, allowed, value
        if value is MISSING:
            super().__init__(f"{key} is missing, must be {allowed}.")
        else:
            super().__init__(f"{key} == {value!r}, must be {allowed}.")


@dataclasses.dataclass(frozen=True)
class Interval:
    """A real interval, optionally of integers; ``None`` ends are unbounded."""

    low: float | None = None
    high: float | None = None
    closed_low: bool = True
    closed_high: bool = True
    integer: bool = False

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        if self.integer and value != int(value):
            return False
        if self.low is not None and (value < self.low or (value == self.low and not self.closed_low)):
            return False
        if self.high is not None and (value > self.high or (value == self.high and not self.closed_high)):
            return False
        return True

    def mask(self, values):
        """Vectorised :meth:`contains` over a numpy array."""
        import numpy as np

        v = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(v)
        with np.errstate(invalid="ignore"):
            if self.integer:
                ok &= v == np.round(v)
            if self.low is not None:
                ok &= (v >= self.low) if self.closed_low else (v > self.low)
            if self.high is not None:
                ok &= (v <= self.high) if self.closed_high else (v < self.high)
        return ok

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a finite number"
        lo = "(-inf" if self.low is None else ("[" if self.closed_low else "(") + f"{self.low:g}"
        hi = "inf)" if self.high is None else f"{self.high:g}" + ("]" if self.closed_high else ")")
        return f"{kind} in {lo}, {hi}"

    def check(self, key: str, value: object) -> float:
        """Return ``value`` as float, or raise :class:`InputError` naming ``key``."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(key, self.describe(), value)
        if not self.contains(float(value)):
            raise InputError(key, self.describe(), value)
        return float(value)


def check_values(key: str, interval: Interval, value: object) -> None:
    """Every entry of ``value`` (a number or an array) lies in ``interval``.

    Raises:
        InputError: naming ``key``, the interval and the first value outside it (a bool or
            a non-number is rejected as such).

    Example:
        >>> check_values("delta", Interval(0, 1), [0.1, 0.2])
        >>> check_values("delta", Interval(0, 1), [0.1, 2.0])
        Traceback (most recent call last):
        ...
        bounds._validation.InputError: delta == 2.0, must be a finite number in [0, 1].
    """
    import numpy as np

    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise InputError(key, interval.describe(), value)
    ok = interval.mask(arr)
    if not np.all(ok):
        raise InputError(key, interval.describe(), arr[~ok].flat[0].item() if arr.ndim else value)


_unit_open = Interval(0, 1, closed_low=False, closed_high=False)
_nonneg = Interval(0)
_pos = Interval(0, closed_low=False)
_real = Interval()

#: Top-level setup keys (THEORY §5-§6) and their allowed ranges.
PARAMETERS: Mapping[str, Interval] = {
    "L_test_old": _nonneg,
    "delta_R": _real,          # measured; Theorem 2 needs > 0 and says so when it is not
    "delta_erm": _nonneg,      # (C2) makes it >= 0
    "delta_test_R": _real,     # random test-level margin, any sign
    "M": Interval(1),
    "K": Interval(1),
    "delta": _unit_open,
    "delta_prime": _unit_open,
    "B": _pos,
    "L_loss": _pos,
}

#: Optional top-level keys.
OPTIONAL: Mapping[str, Interval] = {
    "delta_erm_S": _nonneg,
    "eps_M": _nonneg,
    "eps_K": _nonneg,
    "n_grid": Interval(1, integer=True),
    "delta_R_failure": Interval(0, 1, closed_low=True, closed_high=False),
    "R_old": _nonneg,
}

#: ``[block]`` keys per family (THEORY §4).
BLOCK_PARAMETERS: Mapping[str, Mapping[str, Interval]] = {
    "readout": {"d": Interval(1, integer=True), "L_top": _nonneg, "rho_phi": _nonneg, "nu_V": _nonneg},
    "full": {"d": Interval(1, integer=True), "L_top": _nonneg, "rho": _nonneg,
             "nu_U": _nonneg, "nu_V": _nonneg},
}

LEVEL = Interval(0, 1, closed_low=False, closed_high=True)
