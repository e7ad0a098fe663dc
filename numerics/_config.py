"""Nested configs as data: merge, dotted keys, and validation against a declarative schema.

Every study (``numerics.studies``) declares its config as a schema -- ``{section: {key:
rule}}`` where a rule is an :class:`~bounds._validation.Interval` or a tuple of allowed
choices, and the section ``""`` holds the top-level keys -- and validates user input with
:func:`check_schema`, so bad input always names the dotted key, the allowed values and the
value received (STYLE: Errors).
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

from bounds._validation import InputError

__all__ = ["check_schema", "check_value", "get_dotted", "merge_config", "set_dotted"]


def merge_config(base: Mapping, override: Mapping) -> dict:
    """Deep-merge ``override`` into a copy of ``base`` (tables merge, values replace).

    Example:
        >>> merge_config({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}})
        {'a': {'b': 1, 'c': 3}}
    """
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_config(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def get_dotted(data: Mapping, key: str) -> Any:
    """``data["a"]["b"]`` for ``key == "a.b"``.

    Example:
        >>> get_dotted({"a": {"b": 3}}, "a.b")
        3
    """
    for part in key.split("."):
        data = data[part]
    return data


def set_dotted(data: dict, key: str, value: Any) -> dict:
    """Set ``data["a"]["b"] = value`` for ``key == "a.b"`` (creating tables), return ``data``.

    Example:
        >>> set_dotted({}, "a.b", 1)
        {'a': {'b': 1}}
    """
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return data


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
        >>> from bounds._validation import Interval
        >>> check_schema({"sizes": {"M": 0}}, {"": {}, "sizes": {"M": Interval(2, integer=True)}})
        Traceback (most recent call last):
        ...
        bounds._validation.InputError: sizes.M == 0, must be an integer in [2, inf).
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
