"""Stored results: read a ``result.json``, and a folder of records written one by one.

Studies are resumable from their own outputs (STYLE: Studies): each finished item (a
sweep cell, a validity draw, a growth step) is written atomically as soon as it is done,
and a re-run computes only what is missing. :class:`ItemStore` is that folder.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from plumbing.io import atomic_write_text, dumps

__all__ = ["ItemStore", "load_json", "load_result"]


def load_json(path: str | Path) -> Any:
    """The JSON content of ``path``."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def load_result(result: Mapping | str | Path, name: str = "result.json") -> Mapping:
    """A result dict, or the content of a JSON path / of a folder holding ``name``."""
    if isinstance(result, Mapping):
        return result
    path = Path(result)
    if path.is_dir():
        path = path / name
    return load_json(path)


class ItemStore:
    """A folder of JSON records, one per key, each written atomically.

    ``folder/<key>.json`` by default, or ``folder/<key>/<filename>`` when ``filename`` is
    given (e.g. ``cells/<key>/result.json``). A record that cannot be read (a crash can
    leave none half-written, but a user can) counts as missing and is recomputed.

    Example:
        >>> import tempfile
        >>> store = ItemStore(tempfile.mkdtemp())
        >>> _ = store.put("a", {"x": 1.5})
        >>> store.get("a"), store.get("b"), store.keys()
        ({'x': 1.5}, None, ['a'])
    """

    def __init__(self, folder: str | Path, filename: str | None = None):
        self.folder, self.filename = Path(folder), filename

    def path(self, key: str) -> Path:
        return self.folder / key / self.filename if self.filename else self.folder / f"{key}.json"

    def get(self, key: str) -> Any | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return load_json(path)
        except (OSError, ValueError):
            return None

    def put(self, key: str, record: Any) -> Path:
        return atomic_write_text(self.path(key), dumps(record, indent=2) + "\n")

    def keys(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        if self.filename:
            return sorted(p.parent.name for p in self.folder.glob(f"*/{self.filename}"))
        return sorted(p.stem for p in self.folder.glob("*.json"))

    def records(self) -> list[Any]:
        """Every readable record, in key order."""
        out = (self.get(k) for k in self.keys())
        return [r for r in out if r is not None]
