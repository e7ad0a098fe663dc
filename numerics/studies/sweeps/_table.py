"""The tidy table of a sweep: ``results.csv``, one row per cell (pandas).

Columns: ``cell`` and ``status``; the varied keys as they are named in the sweep file
(``model.depth``, ``seed``, ...); every config value as ``config.<dotted key>``; every
scalar of the stored result under its dotted path (``L_test_new``, ``quantities.G_norm``,
``routes.direct.bound``, ``diagnostics.sites.s_max``, ``timings.total_s``, ...). Lists
(per-site vectors, the covariance matrix) stay in the cells' JSON.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from plumbing.io import atomic_write_text

__all__ = ["flatten_scalars", "results_frame", "write_results_csv"]

_SKIP = {"config", "sweep", "notes", "versions", "integrity"}


def flatten_scalars(data: Mapping, prefix: str = "") -> dict[str, Any]:
    """Scalars of a nested dict under dotted names (lists and ``None``-free tables skipped).

    Example:
        >>> flatten_scalars({"a": 1, "b": {"c": 2.5, "d": [1, 2]}, "e": None})
        {'a': 1, 'b.c': 2.5, 'e': None}
    """
    out = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_scalars(value, name + "."))
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
    return out


def _row(record: Mapping, params_keys: Sequence[str], key: str) -> dict:
    sweep = record.get("sweep", {})
    params = sweep.get("params", {})
    row = {"cell": key, "status": sweep.get("status", "ok")}
    row.update({k: params.get(k) for k in params_keys})
    row.update({f"config.{k}": v for k, v in flatten_scalars(record.get("config", {})).items()})
    row.update({k: v for k, v in flatten_scalars({k: v for k, v in record.items() if k not in _SKIP}).items()
                if not _route_roles_text(k)})
    if sweep.get("error"):
        row["error"] = sweep["error"]
    return row


def _route_roles_text(column: str) -> bool:
    """``routes.<name>.roles.<role>``: the words of which sample a route read, the same in every cell (each cell's
    ``result.json`` keeps them; the table keeps ``S_only``)."""
    parts = column.split(".")
    return len(parts) == 4 and parts[0] == "routes" and parts[2] == "roles"


def results_frame(records: Sequence[tuple[str, Mapping]], params_keys: Sequence[str]):
    """A ``pandas.DataFrame`` with one row per ``(key, record)``."""
    import pandas as pd

    return pd.DataFrame([_row(rec, params_keys, key) for key, rec in records])


def write_results_csv(records: Sequence[tuple[str, Mapping]], params_keys: Sequence[str], path: str | Path) -> Path:
    """Write :func:`results_frame` to ``path`` as CSV, atomically."""
    return atomic_write_text(path, results_frame(records, params_keys).to_csv(index=False))
