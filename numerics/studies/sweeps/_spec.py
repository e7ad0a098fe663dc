"""Sweep files: a base ``run`` config, a ``[grid]`` (cartesian) and a ``[zip]`` (varied together).

A sweep file (TOML, data only)::

    base = "exp.toml"                 # a `depthcert run` config, relative to this file
    plots = ["appendix-m"]            # optional: figures drawn from the stored cells afterwards

    [grid]                            # every combination
    "model.depth" = [1, 2, 3, 4, 6, 8]
    seed = [0, 1, 2]

    [zip]                             # optional: equal-length lists, varied together
    "model.width" = [4, 8]
    "insertion.width" = [8, 16]

Every cell's config is validated with the run study's ``validate_config`` *before*
anything runs, so a bad value anywhere in the grid is one :class:`InputError` naming the
table, the dotted key, the allowed range and the value.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from plumbing.io import dumps
from plumbing.validation import InputError, MISSING
from plumbing.config import loads_toml, merge_config, read_config_text, set_dotted

__all__ = ["MAX_CELLS", "PLOT_KINDS", "Cell", "SweepSpec", "grid_points", "load_sweep", "make_spec", "point_key"]

#: Figures a sweep file may ask for (``depthcert plot --kind``).
PLOT_KINDS = ("bound-vs-M", "region", "appendix-m", "dstar", "rebound", "data", "covariance")
_TOP_KEYS = ("base", "grid", "zip", "plots")
#: The most cells one sweep may have (**Choice**: every cell is validated before anything runs,
#: about 0.6 ms each on one core, so 10^4 cells take seconds; a larger study is split in sweeps).
MAX_CELLS = 10_000


def grid_points(grid: Mapping[str, Sequence]) -> list[dict]:
    """Cartesian product of a ``{dotted key: values}`` grid, as a list of ``{key: value}``.

    Raises:
        ValueError: an empty list of values (names the key).

    Example:
        >>> grid_points({"sizes.M": [10, 20], "model.depth": [1]})
        [{'sizes.M': 10, 'model.depth': 1}, {'sizes.M': 20, 'model.depth': 1}]
    """
    for key, values in grid.items():
        if len(values) == 0:
            raise ValueError(f"grid[{key!r}] == [], must hold at least one value.")
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def point_key(params: Mapping) -> str:
    """A file-safe name of one grid point, stable across runs (sorted, hashed).

    Example:
        >>> point_key({"model.depth": 2, "seed": 0}).split("__")[0]
        'depth=2_seed=0'
    """
    text = json.dumps(dict(sorted(params.items())), sort_keys=True, default=str)
    readable = "_".join(f"{k.split('.')[-1]}={v}" for k, v in sorted(params.items()))
    safe = "".join(c if c.isalnum() or c in "=_-." else "-" for c in readable)[:80]
    return f"{safe}__{hashlib.sha1(text.encode()).hexdigest()[:10]}"


@dataclasses.dataclass(frozen=True)
class Cell:
    """One cell of a sweep: its key (folder name), the varied values and the full config."""

    key: str
    params: Mapping[str, Any]
    config: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: the base config, the grid, the zip, the figures, and the cells."""

    base: Mapping[str, Any]
    grid: Mapping[str, tuple]
    zip: Mapping[str, tuple]
    plots: tuple[str, ...]
    cells: tuple[Cell, ...]
    base_path: str | None = None

    def to_dict(self) -> dict:
        return {"base_path": self.base_path, "base": self.base, "grid": {k: list(v) for k, v in self.grid.items()},
                "zip": {k: list(v) for k, v in self.zip.items()}, "plots": list(self.plots),
                "cells": [{"key": c.key, "params": dict(c.params)} for c in self.cells]}


def _flatten(table: Mapping, prefix: str = "") -> dict:
    """TOML ``a.b = [...]`` (nested tables) and ``"a.b" = [...]`` (quoted) both give ``"a.b"``."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out


def _check_lists(table: str, values: Mapping) -> dict[str, tuple]:
    out = {}
    for key, v in values.items():
        if not isinstance(v, list) or not v:
            raise InputError(f"[{table}] {key}", "a non-empty list of values", v)
        if len({json.dumps(x, sort_keys=True, default=str) for x in v}) != len(v):
            raise InputError(f"[{table}] {key}", "a list of distinct values", v)
        out[key] = tuple(v)
    return out


def _rows(grid: Mapping[str, tuple], zipped: Mapping[str, tuple]) -> list[dict]:
    lengths = {k: len(v) for k, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise InputError("[zip]", "lists of equal length", lengths)
    both = sorted(set(grid) & set(zipped))
    if both:
        raise InputError(f"[zip] {both[0]}", "a key that is not also in [grid]", list(zipped[both[0]]))
    zip_rows = [dict(zip(zipped, row)) for row in zip(*zipped.values())] or [{}]
    return [{**g, **z} for g in grid_points(grid) for z in zip_rows]


def _cell_error(exc: InputError, params: Mapping, grid: Mapping, zipped: Mapping) -> InputError:
    where = "[grid] " if exc.key in grid else "[zip] " if exc.key in zipped else ""
    if not where:   # the base file's value, or a constraint between keys
        cell = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return InputError(exc.key, f"{exc.allowed} (in the cell {cell})", exc.value)
    return InputError(where + exc.key, exc.allowed, exc.value)


def make_spec(base: Mapping, grid: Mapping | None = None, zipped: Mapping | None = None,
              plots: Sequence[str] = (), *, validate: Callable[[Mapping], Mapping],
              base_path: str | None = None) -> SweepSpec:
    """Build and validate a sweep from Python data (what :func:`load_sweep` does after parsing).

    Args:
        base: the run config the cells modify.
        grid: ``{dotted key: list}``, every combination.
        zipped: ``{dotted key: list}`` of equal lengths, varied together.
        plots: figure kinds (:data:`PLOT_KINDS`).
        validate: the run study's ``validate_config`` (config -> full config, or raises).

    Raises:
        InputError: an empty grid, a bad list, unequal zip lengths, an unknown plot kind,
            or any cell whose config ``validate`` rejects (named by table and key).
    """
    grid, zipped = _check_lists("grid", _flatten(grid or {})), _check_lists("zip", _flatten(zipped or {}))
    if not grid and not zipped:
        raise InputError("[grid]", "at least one dotted key with a non-empty list of values", {})
    n_cells = math.prod(len(v) for v in grid.values()) * max((len(v) for v in zipped.values()), default=1)
    if n_cells > MAX_CELLS:
        raise InputError("[grid]", f"at most {MAX_CELLS} cells (the stated maximum: split the sweep)",
                         f"{n_cells} cells")
    bad = [plots] if isinstance(plots, str) else [p for p in plots if p not in PLOT_KINDS]
    if bad:
        raise InputError("plots", f"a list of kinds from {list(PLOT_KINDS)}", bad[0])
    cells = []
    for params in _rows(grid, zipped):
        raw = merge_config(base, {})
        for key, value in params.items():
            set_dotted(raw, key, value)
        try:
            config = json.loads(dumps(validate(raw)))
        except InputError as exc:
            raise _cell_error(exc, params, grid, zipped) from None
        cells.append(Cell(point_key(params), params, config))
    return SweepSpec(json.loads(dumps(base)), grid, zipped, tuple(plots), tuple(cells), base_path)


def _read_toml(path: Path, key: str) -> dict:
    what = "an existing TOML file" + (" (relative to the sweep file)" if key == "base" else "")
    return loads_toml(read_config_text(path, key, what), key, str(path))


def load_sweep(path: str | Path, *, validate: Callable[[Mapping], Mapping]) -> SweepSpec:
    """Parse and validate a sweep file (see the module docstring); nothing runs.

    Raises:
        InputError: a missing/unreadable file, an unknown top-level key, a missing
            ``base``, or anything :func:`make_spec` rejects.
    """
    path = Path(path)
    data = _read_toml(path, "--config")
    unknown = sorted(set(data) - set(_TOP_KEYS))
    if unknown:
        raise InputError(unknown[0], f"one of {list(_TOP_KEYS)}", data[unknown[0]])
    if not isinstance(data.get("base", MISSING), str):
        raise InputError("base", "a path to a `depthcert run` config (TOML, relative to the sweep file)",
                         data.get("base", MISSING))
    for table in ("grid", "zip"):
        if not isinstance(data.get(table, {}), Mapping):
            raise InputError(f"[{table}]", "a table of dotted keys -> lists", data[table])
    try:
        base_file = (path.parent / data["base"]).resolve()
    except (RuntimeError, OSError) as exc:     # a symlink loop (RuntimeError before Python 3.13)
        raise InputError("base", "a path to an existing TOML file (relative to the sweep file)",
                         f"{data['base']} ({exc})") from None
    plots = data.get("plots", [])
    return make_spec(_read_toml(base_file, "base"), data.get("grid"), data.get("zip"),
                     plots if isinstance(plots, list) else str(plots), validate=validate, base_path=str(base_file))
