"""The sweeps study: grids of run configs from a sweep file, on one machine or a Ray cluster.

* :func:`load_sweep` / :func:`make_spec` -- a base run config, a ``[grid]`` (every
  combination of dotted keys) and a ``[zip]`` (lists varied together); every cell's config
  is validated by the run study's ``validate_config`` before anything runs.
* :func:`sweep` -- run the missing cells (``backend="local"``: in process or on a
  process pool with ``workers x threads <= cores``; ``backend="ray"``: Ray tasks), each
  written atomically to ``DIR/cells/<key>/result.json`` as soon as it is done, then the
  tidy table ``DIR/results.csv`` (one row per cell). A re-run computes only missing (or
  stale) cells; a tqdm bar shows progress.
* :func:`load_cells`, :func:`results_table` -- the stored cells, for figures and studies
  (figures come from stored results, never from re-running).
* :func:`run_sweep` -- the older Python-only form (``DIR/points/<key>.json``), kept.
"""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Sequence

from plumbing.figures import pyplot, save_figure
from plumbing.io import atomic_write_text, check_writable_dir, dumps
from plumbing.validation import InputError
from plumbing.config import get_dotted, merge_config, set_dotted
from plumbing.store import FORMAT, ItemStore, MixedRecordsError, StoredFileError, config_hash
from numerics.studies.sweeps._exec import BACKENDS, available_cores, execute, resolve_parallelism
from numerics.studies.sweeps._spec import PLOT_KINDS, Cell, SweepSpec, grid_points, point_key
from numerics.studies.sweeps._spec import load_sweep as _load_sweep
from numerics.studies.sweeps._spec import make_spec as _make_spec
from numerics.studies.sweeps._table import results_frame, write_results_csv
from numerics.studies.sweeps._worker import DEFAULT_RUNNER

__all__ = ["BACKENDS", "DEFAULT_RUNNER", "PLOT_KINDS", "Cell", "SweepOutcome", "SweepSpec", "available_cores",
           "get_dotted", "cell_hashes", "grid_points", "load", "load_cells", "load_points", "load_spec", "load_sweep",
           "make_spec", "plot_sweep", "point_key", "resolve_parallelism", "results_table", "run", "run_sweep", "set_dotted",
           "sweep"]

CELLS = "cells"
RESULT = "result.json"


def _validate(config: Mapping) -> dict:
    from numerics.studies.run import validate_config

    return validate_config(config)


def load_sweep(path: str | Path, *, validate: Callable[[Mapping], Mapping] | None = None) -> SweepSpec:
    """Parse a sweep file and validate every cell (see :mod:`numerics.studies.sweeps._spec`).

    Raises:
        InputError: one line naming the table, key, allowed range and value.
    """
    return _load_sweep(path, validate=validate or _validate)


def make_spec(base: Mapping, grid: Mapping | None = None, zipped: Mapping | None = None, plots: Sequence[str] = (),
              *, validate: Callable[[Mapping], Mapping] | None = None) -> SweepSpec:
    """A validated sweep from Python data (``base`` config, ``grid``, ``zipped``)."""
    return _make_spec(base, grid, zipped, plots, validate=validate or _validate)


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    """What one call of :func:`sweep` did."""

    out_dir: str
    cells: int
    computed: int
    reused: int
    failed: int
    workers: int
    threads: int
    backend: str
    wall_s: float
    table: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _store(out_dir, hashes: Mapping[str, str] | None = None) -> ItemStore:
    return ItemStore(Path(out_dir) / CELLS, filename=RESULT, hashes=hashes, kind="sweep-cell")


def cell_hashes(spec: SweepSpec) -> dict[str, str]:
    """``{cell key: config_hash}``: what determines each cell, its full run config.

    **Choice**: the runner is not part of the hash (as before, a re-run with another
    runner reuses the stored cells, deterministic failures included); it is named in
    ``sweep.json``.
    """
    return {c.key: config_hash(c.config, "sweep-cell") for c in spec.cells}


def _note(text: str) -> None:
    print(f"depthcert sweep: note: {text}", file=sys.stderr)


def _is_current(stored: Mapping | None, cell: Cell) -> bool:
    return stored is not None and stored.get("config") == cell.config


def _check_local_memory(spec: SweepSpec, workers: int) -> None:
    """A cell that cannot fit in its share of this machine's memory is bad input before any cell runs."""
    from numerics.studies.run import check_memory
    from plumbing.machine import available_memory

    share = available_memory() // max(1, workers)
    for cell in spec.cells:
        try:
            check_memory(cell.config, available=share)
        except InputError as exc:
            params = ", ".join(f"{k}={v}" for k, v in cell.params.items())
            raise InputError(exc.key, f"{exc.allowed} (in the cell {params}, {workers} worker(s))",
                             exc.value) from None


def sweep(spec: SweepSpec, out_dir: str | Path, *, backend: str = "local", workers: int | None = None,
          threads: int | None = None, address: str | None = None, progress: bool = True,
          runner: str = DEFAULT_RUNNER, note: Callable[[str], None] | None = _note) -> SweepOutcome:
    """Run the cells of ``spec`` that ``out_dir`` does not hold yet; write ``results.csv``.

    Args:
        spec: a validated sweep (:func:`load_sweep`, :func:`make_spec`).
        out_dir: ``DIR``; cells go to ``DIR/cells/<key>/result.json``.
        backend: ``"local"`` or ``"ray"``.
        workers: local: processes (default 1, at most the cores); ray: tasks in flight.
        threads: torch/BLAS threads per cell (default ``cores // workers``; ray: 1).
        address: a Ray cluster address (default: start a local instance).
        progress: show a tqdm bar.
        runner: ``"module:function"`` run on each cell's config.
        note: told (one line each) about stored cells recomputed because their file is corrupt
            or they were made by another config (default: stderr).

    Returns:
        A :class:`SweepOutcome`.

    Raises:
        InputError: bad backend/workers/threads, or Ray missing for ``backend="ray"``.
    """
    workers, threads = resolve_parallelism(backend, workers, threads)
    if backend == "ray":
        from numerics.studies.sweeps._ray import import_ray

        import_ray()   # fail before anything runs
    check_writable_dir(out_dir)   # an unwritable --out is bad input, before anything runs
    if backend == "local" and runner == DEFAULT_RUNNER:   # the run study's cells must fit beside the others
        _check_local_memory(spec, workers)                  # (Ray: the worker's; other runners: their own)
    t0, out, store = time.perf_counter(), Path(out_dir), _store(out_dir, cell_hashes(spec))
    todo = _prepare(spec, out, store, runner, note)
    bar = _progress(len(spec.cells), len(spec.cells) - len(todo), progress)

    def on_done(cell: Cell, record: dict) -> None:
        record["sweep"] = {**record.get("sweep", {}), "key": cell.key, "params": dict(cell.params),
                           "backend": backend}
        store.put(cell.key, record)
        bar.update(1)

    try:
        execute(todo, on_done, backend=backend, workers=workers, threads=threads, runner=runner, address=address)
    finally:
        bar.close()
    table = write_results_csv(_records(spec, store), list(spec.grid) + list(spec.zip), out / "results.csv")
    n_failed = sum(1 for _, r in _records(spec, store) if r.get("sweep", {}).get("status") == "failed")
    return SweepOutcome(str(out), len(spec.cells), len(todo), len(spec.cells) - len(todo), n_failed,
                        workers, threads, backend, time.perf_counter() - t0, str(table))


def run(spec: SweepSpec | str | Path, out_dir: str | Path, **options) -> SweepOutcome:
    """The sweeps study's entry point beside :func:`sweep`: ``spec`` a :class:`SweepSpec` or a sweep file
    (:func:`load_sweep`); ``options`` those of :func:`sweep`. Its typed result is the frozen
    :class:`SweepOutcome` (``to_dict()``); the writer is :func:`sweep` itself (``results.csv``, one file per
    cell), the loader :func:`load`."""
    return sweep(spec if isinstance(spec, SweepSpec) else load_sweep(spec), out_dir, **options)


def load(out_dir: str | Path, *, ok_only: bool = True) -> list[dict]:
    """The stored cells of a sweep folder (:func:`load_cells`)."""
    return load_cells(out_dir, ok_only=ok_only)


def _prepare(spec: SweepSpec, out: Path, store: ItemStore, runner: str, note) -> list[Cell]:
    """The cells to (re)compute (missing, stale, corrupt: ``note`` says which); ``sweep.json`` with their hashes.

    A ``results.csv`` of old cells is removed until the sweep rewrites it, so that an
    interrupted re-run never leaves a table describing another config.
    """
    pending = set(store.pending([c.key for c in spec.cells], note))
    todo = [c for c in spec.cells if c.key in pending or not _is_current(store.get(c.key), c)]
    if todo and (out / "results.csv").is_file():
        (out / "results.csv").unlink()
    described = spec.to_dict()
    for entry in described["cells"]:
        entry["config_hash"] = store.expected(entry["key"])
    atomic_write_text(out / "sweep.json", dumps({**described, "runner": runner, "format": FORMAT}, indent=2) + "\n")
    return todo


def _records(spec: SweepSpec, store: ItemStore) -> list[tuple[str, dict]]:
    return [(c.key, r) for c in spec.cells if (r := store.get(c.key)) is not None]


def load_spec(out_dir: str | Path) -> dict:
    """The ``sweep.json`` a sweep wrote in ``out_dir`` (base, grid, zip, plots, cells).

    Raises:
        StoredFileError: ``sweep.json`` is truncated or not a sweep description (named).
    """
    from plumbing.store import load_json

    path = Path(out_dir) / "sweep.json"
    spec = load_json(path)
    if not isinstance(spec, dict) or not isinstance(spec.get("cells"), list) or \
            not all(isinstance(c, dict) and isinstance(c.get("key"), str) for c in spec["cells"]):
        raise StoredFileError(path, "not a sweep description (no list of cells with keys)")
    return spec


def load_cells(out_dir: str | Path, *, ok_only: bool = True) -> list[dict]:
    """The stored cell records of a sweep folder, in the sweep's cell order.

    Cells not computed yet are absent; a cell made by another config than ``sweep.json``
    describes (a sweep re-run with a changed base, interrupted) or a corrupt cell file is
    never combined with the others: the loader refuses and names them.

    Args:
        ok_only: drop cells recorded as failed.

    Raises:
        StoredFileError: ``sweep.json`` or a cell's ``result.json`` is corrupt (named).
        MixedRecordsError: cells whose hash differs from ``sweep.json``'s (named).
    """
    path = Path(out_dir) / "sweep.json"
    spec = load_spec(out_dir) if path.is_file() else None
    cells = spec["cells"] if spec else None
    hashes = {c["key"]: c["config_hash"] for c in cells if "config_hash" in c} if cells else None
    store = _store(out_dir, hashes or None)
    recs = store.load(None if cells is None else [c["key"] for c in cells])
    if spec and not hashes:
        _check_legacy(out_dir, spec, store)
    return [r for r in recs if not ok_only or r.get("sweep", {}).get("status", "ok") == "ok"]


def _check_legacy(out_dir, spec: Mapping, store: ItemStore) -> None:
    """A ``sweep.json`` written before config hashes: each stored cell must hold the base's values and its params.

    Raises:
        MixedRecordsError: the cells whose stored config contradicts ``sweep.json`` (named).
    """
    from numerics.studies.sweeps._table import flatten_scalars

    base, bad = flatten_scalars(spec.get("base") or {}), []
    for cell in spec["cells"]:
        record = store.get(cell["key"])
        have = flatten_scalars(record.get("config") or {}) if isinstance(record, Mapping) else {}
        if any(k in have and have[k] != v for k, v in {**base, **cell.get("params", {})}.items()):
            bad.append(cell["key"])
    if bad:
        raise MixedRecordsError(Path(out_dir) / CELLS, bad, "hold a config other than sweep.json describes")


def results_table(out_dir: str | Path):
    """The tidy ``pandas.DataFrame`` of a sweep folder (what ``results.csv`` holds)."""
    spec = load_spec(out_dir)
    records = [(r["sweep"]["key"], r) for r in load_cells(out_dir, ok_only=False)]
    return results_frame(records, list(spec["grid"]) + list(spec["zip"]))


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

    return tqdm(total=total, initial=initial, disable=not enabled, desc="sweep", unit="cell")


def run_sweep(base_config: Mapping, grid: Mapping[str, Sequence], out_dir: str | Path, *,
              runner: Callable[[Mapping], Mapping] | None = None, progress: bool = True) -> list[dict]:
    """Run ``runner(config)`` at every grid point; resumable.

    Each point's record ``{"params", "config", "result"}`` is written atomically to
    ``out_dir/points/<point_key>.json`` as soon as it finishes; points whose file exists
    with the same full config are loaded, not re-run (so an interrupted sweep resumes where
    it stopped); a file left by a different base config is recomputed and overwritten.

    Args:
        base_config: the experiment config the grid modifies.
        grid: ``{dotted key: list of values}``.
        runner: config -> result dict (default :func:`numerics.studies.run.run_experiment`).
        progress: show a tqdm bar.

    Returns:
        The records, in grid order.
    """
    if runner is None:
        from numerics.studies.run import run_experiment as runner
    folder = Path(out_dir) / "points"
    records, points = [], grid_points(grid)
    bar = _progress(len(points), 0, progress)
    for params in points:
        path = folder / f"{point_key(params)}.json"
        config = merge_config(base_config, {})
        for key, value in params.items():
            set_dotted(config, key, value)
        stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if stored is not None and stored["config"] == json.loads(dumps(config)):
            records.append(stored)
        else:  # new point, or a stale one from another base config: (re)run it
            record = {"params": params, "config": config, "result": runner(config)}
            atomic_write_text(path, dumps(record, indent=2) + "\n")
            records.append(json.loads(dumps(record)))
        bar.update(1)
    bar.close()
    return records


def load_points(out_dir: str | Path) -> list[dict]:
    """All saved point records of a sweep folder (for plots: figures come from saved results)."""
    folder = Path(out_dir) / "points"
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def plot_sweep(points: Sequence[Mapping], x_key: str, y_keys: Sequence[str], path: str | Path,
               *, logx: bool = False) -> Path:
    """Line plot of saved sweep points: ``y_keys`` (dotted paths into each result) vs ``x_key``.

    Args:
        points: sweep records ``{"params": {...}, "result": {...}}`` (see
            :func:`load_points`).
        x_key: a grid key (dotted, e.g. ``"sizes.M"``), read from ``params`` or ``config``.
        y_keys: dotted keys of ``result`` (e.g. ``"routes.direct.bound"``, ``"L_test_new"``).
    """
    plt = pyplot()
    def x_of(p):
        return p["params"][x_key] if x_key in p["params"] else get_dotted(p["config"], x_key)

    pts = sorted(points, key=x_of)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = [x_of(p) for p in pts]
    for key in y_keys:
        ax.plot(xs, [get_dotted(p["result"], key) for p in pts], marker="o", label=key)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(x_key)
    ax.legend(fontsize=7)
    return save_figure(fig, path)
