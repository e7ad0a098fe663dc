"""Parameter constraints as data: one dialect for the API, the config loaders and the tests.

A constraint is an :class:`Interval` or a tuple of allowed choices; a config is checked
against a schema ``{section: {key: rule}}`` by :func:`check_schema`. Bad input always names
the key, the allowed values and the value received (STYLE: Errors), so that property tests
can generate invalid values from the constraints (scikit-learn's ``_parameter_constraints``).
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any, Mapping, Sequence

__all__ = ["INT_MAX", "LEVEL", "MISSING", "RAY_ADDRESS_FORMS", "InputError", "Interval", "check_ray_address",
           "check_integer", "check_number", "check_positive", "first_line",
           "check_probability", "check_schema", "check_value", "check_values", "split_sections"]


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
            super().__init__(f"{key} == {_shown(value)}, must be {allowed}.")


def _shown(value: object, limit: int = 300) -> str:
    """``repr(value)`` for a one-line message: cut at ``limit`` characters, a nesting too deep to print named."""
    try:
        text = repr(value)
    except RecursionError:
        return "<a value nested too deeply to print>"
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first non-empty line of ``str(exc)``, cut at ``limit`` characters; the type's name when it has none.

    An exception without a message (``EOFError()`` from an empty file) must not break the line that reports it.

    Example:
        >>> first_line(EOFError()), first_line(ValueError("\\nbad value\\nmore"))
        ('EOFError', 'bad value')
    """
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0][:limit] if lines else type(exc).__name__


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
        """Return ``value`` as float, or raise :class:`InputError` naming ``key``.

        An integer beyond what the computation can represent is refused here, before any
        work: beyond the float range for a real interval, beyond :data:`INT_MAX` (a 64-bit
        integer, what torch and numpy index with) for an integer one.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(key, self.describe(), value)
        if self.integer and isinstance(value, int) and abs(value) > INT_MAX:
            raise InputError(key, f"{self.describe()}, at most {INT_MAX} (a 64-bit integer)", _short(value))
        try:
            number = float(value)
        except OverflowError:
            raise InputError(key, f"{self.describe()}, within the float range (|x| < 1.8e308)", _short(value)) from None
        if not self.contains(number):
            raise InputError(key, self.describe(), value)
        return number


#: The largest integer a config value may hold: 2^63 - 1 (int64; torch sizes, numpy indices).
INT_MAX = 2**63 - 1


class _Short(int):
    """An integer too long to print whole: shown as its digit count (``repr`` of 10**400 is 401 digits)."""

    def __repr__(self) -> str:
        text = str(abs(int(self)))
        return f"{'-' if self < 0 else ''}{text[:6]}...({len(text)} digits)" if len(text) > 24 else text


def _short(value: int) -> int:
    return _Short(value)


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
        plumbing.validation.InputError: delta == 2.0, must be a finite number in [0, 1].
    """
    import numpy as np

    arr = np.asarray(value)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise InputError(key, interval.describe(), value)
    ok = interval.mask(arr)
    if not np.all(ok):
        raise InputError(key, interval.describe(), arr[~ok].flat[0].item() if arr.ndim else value)


LEVEL = Interval(0, 1, closed_low=False, closed_high=True)


def check_value(key: str, rule, value) -> None:
    """Check one value against its rule (an ``Interval`` or a tuple of choices).

    Raises:
        InputError: naming ``key``, the allowed values and ``value``.
    """
    if isinstance(rule, tuple):
        if value not in rule or isinstance(value, bool) != isinstance(rule[0], bool):
            raise InputError(key, f"one of {list(rule)}", value)
    else:
        rule.check(key, value)


def check_schema(config: Mapping, schema: Mapping[str, Mapping[str, Any]]) -> None:
    """Unknown sections/keys and values outside their rules are errors (dotted key named).

    ``schema[""]`` holds the top-level keys; every other entry is a ``[section]`` table.
    Keys absent from ``config`` are not checked (defaults fill them in).

    Raises:
        InputError: the first offending key.

    Example:
        >>> check_schema({"sizes": {"M": 0}}, {"": {}, "sizes": {"M": Interval(2, integer=True)}})
        Traceback (most recent call last):
        ...
        plumbing.validation.InputError: sizes.M == 0, must be an integer in [2, inf).
    """
    top = schema.get("", {})
    for section, value in config.items():
        if section in schema and section != "":
            if not isinstance(value, Mapping):
                raise InputError(section, "a [table]", value)
            for key in value:
                if key not in schema[section]:
                    raise InputError(f"{section}.{key}", f"one of {sorted(schema[section])}", value[key])
                check_value(f"{section}.{key}", schema[section][key], value[key])
        elif section in top:
            check_value(section, top[section], value)
        elif isinstance(value, Mapping):
            raise InputError(section, f"one of the sections {sorted(k for k in schema if k)} (this command does not read [{section}])", f"[{section}]")
        else:
            raise InputError(section, f"a section or one of {sorted(top)}", value)


def split_sections(config: Mapping, schema: Mapping[str, Mapping[str, Any]],
                   readers: Mapping[str, Sequence[str]]) -> tuple[dict, list[str]]:
    """The part of ``config`` this command reads, and a note for each part another command reads.

    One config file may hold the sections of several commands (``[insertion]`` for ``run``,
    ``[saturation]`` for ``saturation``, ...): a section, a top-level key or a dotted key of a
    shared section (``task.n_test``) that ``schema`` does not have but ``readers`` names is set
    aside with a note naming who reads it; anything else is left for :func:`check_schema` to
    accept or refuse (a key no command knows is an error naming its table).

    Args:
        config: the user's config.
        schema: this command's schema (``""``: its top-level keys).
        readers: section, top-level key or ``section.key`` -> the commands that read it.

    Returns:
        ``(config without the other commands' parts, notes)``.

    Example:
        >>> split_sections({"seed": 1, "growth": {"max": 2}}, {"": {"seed": None}}, {"growth": ["grow"]})
        ({'seed': 1}, ['[growth] is read by grow, not by this command: ignored here'])
    """
    own, notes = {}, []
    top = schema.get("", {})

    def foreign(name: str, mine: bool, shown: str | None = None) -> bool:
        if mine or name not in readers:
            return False
        notes.append(f"{shown or name} is read by {', '.join(readers[name])}, not by this command: ignored here")
        return True

    for key, value in config.items():
        if not isinstance(value, Mapping):    # one of this command's [tables] given as a scalar stays: refused later
            if not foreign(key, key in top or (key in schema and key != ""), f"top-level key {key!r}"):
                own[key] = value
        elif not foreign(key, key in schema and key != "", f"[{key}]"):
            table = schema.get(key, {})
            own[key] = {k: v for k, v in value.items() if not foreign(f"{key}.{k}", k in table)}
    return own, notes


# ---- scalar arguments of the Python API (ValueError / TypeError naming the argument) -------------
def check_probability(name: str, value: float) -> float:
    """``value`` in ``(0, 1)``.

    Raises:
        ValueError: ``{name} == value, must be in (0, 1).``
    """
    if not (0.0 < float(value) < 1.0):
        raise ValueError(f"{name} == {value!r}, must be in (0, 1).")
    return float(value)


def check_positive(name: str, value, *, integer: bool = False):
    """A positive scalar (a positive ``int`` when ``integer``), naming the argument on failure.

    Raises:
        TypeError: not an int when ``integer``; ValueError: not ``> 0``.
    """
    if integer and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"{name} == {value!r}, must be a positive int.")
    if not value > 0:
        raise ValueError(f"{name} == {value!r}, must be > 0.")
    return value


def check_integer(name: str, value, low: int) -> int:
    """An integer (Python or numpy, not bool) ``>= low``.

    Raises:
        ValueError: ``{name} == value, must be an integer >= low.``
    """
    import numpy as np

    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} == {value!r}, must be an integer >= {low}.")
    return int(value)


def check_number(name: str, value, allow_zero: bool = False) -> float:
    """A finite number ``> 0`` (``>= 0`` when ``allow_zero``).

    Raises:
        ValueError: ``{name} == value, must be a finite number > 0.``
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) \
        and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} == {value!r}, must be a finite number {'>=' if allow_zero else '>'} 0.")
    return float(value)


#: The forms of a Ray address a sweep accepts (**Choice**: those ``ray.init(address=...)`` documents).
RAY_ADDRESS_FORMS = "'auto', 'local', HOST:PORT or ray://HOST:PORT (PORT in 1..65535)"


def check_ray_address(address: str | None, key: str = "address") -> None:
    """Refuse, before any work, a Ray address of none of the forms :data:`RAY_ADDRESS_FORMS` (``None``: start a local one).

    Raises:
        InputError: naming ``key``, the forms allowed and the value.

    Example:
        >>> check_ray_address("head:6379"), check_ray_address("ray://10.0.0.2:10001")
        (None, None)
    """
    import re

    if address is None or address in ("auto", "local"):
        return
    m = re.fullmatch(r"(?:ray://)?(?:[A-Za-z0-9][A-Za-z0-9._-]{0,252}|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})", str(address))
    if m is None or not 1 <= int(m.group(1)) <= 65535:
        raise InputError(key, RAY_ADDRESS_FORMS, address)
