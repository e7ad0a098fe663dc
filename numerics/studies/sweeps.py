"""The sweeps study: resumable grids of run configs (depth / width / data), and their plot.

* :func:`run_sweep` -- a grid over dotted config keys (``"sizes.M"``, ``"model.depth"``,
  ...); each finished point is written atomically to ``out_dir/points/<key>.json`` and a
  re-run skips the points already there; a tqdm progress bar shows what is left.
* :func:`plot_sweep` -- a line plot from the saved points.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from bounds._io import atomic_write_text, dumps, pyplot, save_figure
from numerics._config import get_dotted, merge_config, set_dotted

__all__ = ["get_dotted", "grid_points", "load_points", "plot_sweep", "point_key", "run_sweep", "set_dotted"]




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
    """A file-safe name of one grid point, stable across runs (sorted, hashed)."""
    text = json.dumps(dict(sorted(params.items())), sort_keys=True, default=str)
    readable = "_".join(f"{k.split('.')[-1]}={v}" for k, v in sorted(params.items()))
    safe = "".join(c if c.isalnum() or c in "=_-." else "-" for c in readable)[:80]
    return f"{safe}__{hashlib.sha1(text.encode()).hexdigest()[:10]}"


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
    bar = _progress(len(points), progress)
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


def _progress(total: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, desc="sweep", unit="point")


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
