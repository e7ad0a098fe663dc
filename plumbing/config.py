"""Nested configs as data: merge tables, read and set dotted keys.

Validation against a schema is :func:`plumbing.validation.check_schema` (one dialect).
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

__all__ = ["get_dotted", "merge_config", "set_dotted"]


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
