"""Nested configs as data: merge tables, read and set dotted keys.

Validation against a schema is :func:`plumbing.validation.check_schema` (one dialect).
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

__all__ = ["MAX_CONFIG_BYTES", "MAX_NESTING", "check_config_file", "get_dotted", "loads_toml", "merge_config", "nesting_depth", "read_config_text",
           "set_dotted"]


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


#: The deepest nesting of tables and arrays a config file may have (**Choice**: real configs
#: nest at most 3 deep; this leaves room and keeps every recursive reader far from its limit).
MAX_NESTING = 32


def nesting_depth(data: Any) -> int:
    """How deeply tables and arrays nest in ``data`` (a scalar: 0), without recursion.

    Example:
        >>> nesting_depth({"a": {"b": [1, [2]]}, "c": 1})
        4
    """
    deepest, stack = 0, [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, Mapping):
            children = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            deepest = max(deepest, depth)
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


#: The largest config file read (**Choice**: the largest config of this repository is 3 KB and a sweep's grid
#: of thousands of cells fits in a few hundred KB; a larger file is refused by its size, before it is read).
MAX_CONFIG_BYTES = 1 << 20


def check_config_file(path, key: str, what: str = "an existing TOML file"):
    """``Path(path)`` if it is a regular file of at most :data:`MAX_CONFIG_BYTES` bytes (``stat`` only, nothing read).

    Raises:
        InputError: missing, a FIFO / device / folder, or too large (names the size and the limit).
    """
    from pathlib import Path

    from plumbing.validation import InputError

    p = Path(path)
    try:
        regular = p.is_file()
        size = p.stat().st_size if regular else 0
        exists = regular or p.exists()
    except (OSError, ValueError):
        regular, size, exists = False, 0, False
    if not regular:
        raise InputError(key, what + (" (a regular file, not a FIFO, device or folder)" if exists else ""), str(path))
    if size > MAX_CONFIG_BYTES:
        raise InputError(key, f"a config file of at most {MAX_CONFIG_BYTES} bytes (refused by its size, not read)",
                         f"{path} ({size} bytes)")
    return p


def read_config_text(path, key: str, what: str = "an existing TOML file") -> str:
    """The text of a config file, refused before reading when it is not a regular file or is too large.

    Args:
        path: the file.
        key: the option or key that named it (``--config``, ``base``), named in errors.
        what: the allowed value as the error states it.

    Raises:
        InputError: missing, a FIFO / device / folder (never opened: it could block), more than
            :data:`MAX_CONFIG_BYTES` bytes (by ``stat``, nothing read), or not UTF-8.
    """
    from plumbing.validation import InputError

    p = check_config_file(path, key, what)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)   # a file grown since stat() is still read only this far
    except OSError as exc:
        raise InputError(key, "a readable TOML file", f"{path} ({exc.strerror})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError(key, f"a config file of at most {MAX_CONFIG_BYTES} bytes", f"{path} (more than {MAX_CONFIG_BYTES} bytes)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(key, "valid TOML", f"{path}: {exc}") from None


def loads_toml(text: str, key: str, where: str) -> dict:
    """Parse TOML text (data only, never evaluated), refusing what the readers cannot hold.

    Args:
        text: the file's content.
        key: the option or key that named the file (``--config``, ``base``), named in errors.
        where: the file, named in errors.

    Raises:
        InputError: invalid TOML, or nesting deeper than :data:`MAX_NESTING` (found while
            parsing: the parser's recursion limit, or after it: dotted keys nest without it).
    """
    import tomllib

    from plumbing.validation import InputError

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(key, "valid TOML", f"{where}: {exc}") from None
    except RecursionError:
        raise InputError(key, f"TOML nested at most {MAX_NESTING} deep (arrays, tables, dotted keys)",
                         f"{where}: nested deeper than the parser can follow") from None
    depth = nesting_depth(data)
    if depth > MAX_NESTING:
        raise InputError(key, f"TOML nested at most {MAX_NESTING} deep (arrays, tables, dotted keys)",
                         f"{where}: nested {depth} deep")
    return data
