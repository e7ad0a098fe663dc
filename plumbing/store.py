"""Stored results: read a ``result.json``, and a folder of records written one by one.

Studies are resumable from their own outputs (STYLE: Studies): each finished item (a
sweep cell, a validity draw, a growth step) is written atomically as soon as it is done,
and a re-run computes only what is missing. :class:`ItemStore` is that folder.

A stored record knows what made it: :func:`config_hash` of the configuration that
determines it (the sections its command reads, defaults filled in), the store's format
:data:`FORMAT` and the package version, written under ``"integrity"``. A re-run recomputes
a record whose hash differs (*stale*) or whose file cannot be read (*corrupt*, named);
a loader refuses to combine records of another hash and names them (:class:`MixedRecordsError`).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from plumbing.io import atomic_write_text, dumps, package_version
from plumbing.validation import InputError

__all__ = ["FORMAT", "INTEGRITY", "ItemStore", "MixedRecordsError", "StoredFileError", "config_hash",
           "load_json", "load_result", "record_hash", "stamp"]

#: Version of the stored-record format (part of every hash: a new format recomputes).
FORMAT = 1
#: The record key holding ``{"config_hash", "kind", "format", "depthcert"}``.
INTEGRITY = "integrity"


class StoredFileError(InputError):
    """A stored file that cannot be read (truncated, not JSON, not what it should hold): path and reason."""

    def __init__(self, path: str | Path, problem: str, hint: str = "re-run the command that wrote it to recompute it"):
        self.key, self.allowed, self.value = str(path), hint, problem
        ValueError.__init__(self, f"{path}: {problem}; {hint}.")


class MixedRecordsError(InputError):
    """Records made by different configurations in one folder: the records that differ are named."""

    def __init__(self, folder: str | Path, keys: list[str], what: str):
        shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        self.key, self.allowed, self.value = str(folder), "records of one configuration", keys
        ValueError.__init__(self, f"{folder}: {len(keys)} stored record(s) {what}: {shown}; "
                                  "re-run the command that wrote the folder to recompute them (nothing is combined).")


def config_hash(cfg: Any, kind: str) -> str:
    """SHA-256 of what determines a stored record: ``cfg`` (canonical JSON), ``kind``, :data:`FORMAT`, version.

    Args:
        cfg: the configuration the command reads, after defaults are filled in (JSON data).
        kind: what is stored (e.g. ``"sweep-cell numerics.studies.run:run_experiment"``).

    Example:
        >>> config_hash({"a": 1, "b": 2}, "x") == config_hash({"b": 2, "a": 1}, "x") != config_hash({"a": 1}, "x")
        True
    """
    text = dumps({"config": cfg, "kind": kind, "format": FORMAT, "depthcert": _version()}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_hash(record: Any) -> str | None:
    """The ``config_hash`` a stored record carries (``None``: none, e.g. written by an older version)."""
    info = record.get(INTEGRITY) if isinstance(record, Mapping) else None
    return info.get("config_hash") if isinstance(info, Mapping) else None


def _version() -> str:
    return package_version()   # from the package metadata: plumbing imports nothing above it


def stamp(record: Mapping, digest: str, kind: str | None) -> dict:
    """``record`` with its ``integrity`` entry: ``digest`` (a :func:`config_hash`), ``kind``, format, version."""
    return {**record, INTEGRITY: {"config_hash": digest, "kind": kind, "format": FORMAT, "depthcert": _version()}}


def load_json(path: str | Path) -> Any:
    """The JSON content of ``path``.

    Raises:
        FileNotFoundError: no such file.
        StoredFileError: the file exists but is not complete JSON (named, with the reason).
    """
    path = Path(path)
    raw = path.read_bytes()
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise StoredFileError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except RecursionError:
        raise StoredFileError(path, "JSON nested deeper than any stored result") from None
    except json.JSONDecodeError as exc:
        cut = exc.msg.startswith("Unterminated") or (exc.msg.startswith("Expecting") and exc.pos >= len(raw.rstrip()))
        what = "empty" if not raw.strip() else "truncated (incomplete JSON)" if cut else "not JSON"
        raise StoredFileError(path, f"{what} ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def load_result(result: Mapping | str | Path, name: str = "result.json") -> Mapping:
    """A result dict, or the content of a JSON path / of a folder holding ``name``."""
    if isinstance(result, Mapping):
        return result
    path = Path(result)
    if path.is_dir():
        path = path / name
    return load_json(path)


class ItemStore:
    """A folder of JSON records, one per key, each written atomically, each knowing its config hash.

    ``folder/<key>.json`` by default, or ``folder/<key>/<filename>`` when ``filename`` is
    given (e.g. ``cells/<key>/result.json``). ``hashes`` is the :func:`config_hash` every
    record must carry (one string for all keys, or ``{key: hash}``; ``None``: not checked):
    :meth:`put` stamps it, :meth:`state` tells *current*, *stale* (another hash), *corrupt*
    or *missing*, :meth:`pending` lists what a re-run must compute, :meth:`load` refuses
    stale and corrupt records by name. ``own_key`` (optional) reads the key a record says it
    belongs to (e.g. from the draw index stored in it; ``None``: it does not say): a record
    whose own key is not the key of the file it was read from (a file copied over another)
    is *misplaced*: a re-run recomputes it with a note naming the file, :meth:`load` refuses it.

    Example:
        >>> import tempfile
        >>> store = ItemStore(tempfile.mkdtemp())
        >>> _ = store.put("a", {"x": 1.5})
        >>> store.get("a"), store.get("b"), store.keys()
        ({'x': 1.5}, None, ['a'])
    """

    def __init__(self, folder: str | Path, filename: str | None = None, *, hashes: str | Mapping[str, str] | None = None,
                 kind: str | None = None, own_key: Callable[[Any], str | None] | None = None):
        self.folder, self.filename, self.hashes, self.kind = Path(folder), filename, hashes, kind
        self.own_key = own_key

    def path(self, key: str) -> Path:
        return self.folder / key / self.filename if self.filename else self.folder / f"{key}.json"

    def expected(self, key: str) -> str | None:
        """The hash ``key``'s record must carry (``None``: not checked)."""
        return self.hashes.get(key) if isinstance(self.hashes, Mapping) else self.hashes

    def state(self, key: str) -> tuple[str, Any, str | None]:
        """``(state, record, problem)``; state is ``"missing"``, ``"corrupt"``, ``"stale"``, ``"misplaced"``
        (its own key, ``own_key``, is another's) or ``"current"``."""
        path = self.path(key)
        if not path.is_file():
            return "missing", None, None
        try:
            record = load_json(path)
        except StoredFileError as exc:
            return "corrupt", None, str(exc.value)
        except OSError as exc:
            return "corrupt", None, f"unreadable ({exc.strerror or exc})"
        want = self.expected(key)
        if want is not None and record_hash(record) != want:
            return "stale", record, "made by a different configuration" if record_hash(record) else \
                "carries no configuration hash (written by an older version)"
        own = self._own_key(record)
        if own is not None and own != key:
            return "misplaced", record, f"holds the record of {own}, not of {key} (a file copied over another?)"
        return "current", record, None

    def _own_key(self, record: Any) -> str | None:
        if self.own_key is None:
            return None
        try:
            return self.own_key(record)
        except (KeyError, TypeError, ValueError, AttributeError):
            return "<unreadable>"

    def get(self, key: str) -> Any | None:
        """The current record of ``key``; ``None`` if missing or stale.

        Raises:
            StoredFileError: the record's file is corrupt (named).
        """
        state, record, problem = self.state(key)
        if state in ("corrupt", "misplaced"):
            raise StoredFileError(self.path(key), problem)
        return record if state == "current" else None

    def pending(self, keys: Iterable[str], note: Callable[[str], None] | None = None) -> list[str]:
        """The keys a re-run must compute: missing, stale, corrupt or misplaced; ``note`` is told about the last three."""
        todo, stale = [], []
        for key in keys:
            state, _, problem = self.state(key)
            if state != "current":
                todo.append(key)
            if state in ("corrupt", "misplaced") and note:
                note(f"{self.path(key)}: {problem}; recomputing it")
            stale += [key] if state == "stale" else []
        if stale and note:
            note(f"{len(stale)} stored record(s) in {self.folder} were made by a different configuration "
                 f"or by a version without configuration hashes (e.g. {stale[0]}): recomputing them")
        return todo

    def put(self, key: str, record: Any) -> Path:
        want = self.expected(key)
        if want is not None and isinstance(record, Mapping):
            record = stamp(record, want, self.kind)
        return atomic_write_text(self.path(key), dumps(record, indent=2) + "\n")

    def keys(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        if self.filename:
            return sorted(p.parent.name for p in self.folder.glob(f"*/{self.filename}"))
        return sorted(p.stem for p in self.folder.glob("*.json"))

    def load(self, keys: Iterable[str] | None = None) -> list[Any]:
        """The records of ``keys`` (default all) that exist, in order; never a mixture.

        Raises:
            StoredFileError: a corrupt or misplaced record (the first, named).
            MixedRecordsError: records of another hash than expected (all named).
        """
        out, stale = [], []
        for key in self.keys() if keys is None else keys:
            state, record, problem = self.state(key)
            if state in ("corrupt", "misplaced"):
                raise StoredFileError(self.path(key), problem)
            stale += [key] if state == "stale" else []
            out += [record] if state == "current" else []
        if stale:
            raise MixedRecordsError(self.folder, stale, "were made by a different configuration than the rest")
        return out

    def records(self) -> list[Any]:
        """Every record, in key order (:meth:`load`: corrupt or stale records raise)."""
        return self.load()
