"""Resumable sweeps (depth / width / data) and growth vs scratch (Paper B, THEORY §8).

* :func:`run_sweep` -- a grid over dotted config keys (``"sizes.M"``, ``"model.depth"``,
  ...); each finished point is written atomically to ``out_dir/points/<key>.json`` and a
  re-run skips the points already there; a tqdm progress bar shows what is left.
* :func:`growth_vs_scratch` -- function-preserving growth (insert a zero-output block
  into a trained depth-``D`` network, train the whole grown network) vs training the same
  depth-``D+1`` architecture from scratch with the same total step budget.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import torch

__all__ = ["get_dotted", "growth_vs_scratch", "grid_points", "load_points", "point_key", "run_sweep",
           "set_dotted"]


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
    """Set ``data["a"]["b"] = value`` for ``key == "a.b"`` (creating tables), return ``data``."""
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return data


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
        runner: config -> result dict (default :func:`numerics.experiment.run_experiment`).
        progress: show a tqdm bar.

    Returns:
        The records, in grid order.
    """
    from numerics.experiment import atomic_write_text, merge_config, to_json

    if runner is None:
        from numerics.experiment import run_experiment as runner
    folder = Path(out_dir) / "points"
    records, points = [], grid_points(grid)
    bar = _progress(len(points), progress)
    for params in points:
        path = folder / f"{point_key(params)}.json"
        config = merge_config(base_config, {})
        for key, value in params.items():
            set_dotted(config, key, value)
        stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if stored is not None and stored["config"] == json.loads(to_json(config)):
            records.append(stored)
        else:  # new point, or a stale one from another base config: (re)run it
            record = {"params": params, "config": config, "result": runner(config)}
            atomic_write_text(path, to_json(record))
            records.append(json.loads(to_json(record)))
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


def growth_vs_scratch(config: Mapping, *, grow_steps: int, base_steps: int, seed: int = 0) -> dict:
    """Paper B's comparison at one final architecture, THEORY §8.

    The final architecture is the depth-``D`` reference model with a ``full`` block inserted
    at the top (``u -> f_top(u + V relu(U u + b))``):

    * grown: train the depth-``D`` model for ``base_steps``, insert the zero-output block
      (function-preserving: checked bitwise), then train *every* parameter for
      ``grow_steps``;
    * scratch: the same architecture from the same initialisation (untrained base, the
      same inserted block), every parameter trained for ``base_steps + grow_steps``.

    Both see the same training sample, optimiser and step budget; test risk is the
    exact-``y`` population risk (Monte Carlo over ``x``, with standard errors).

    Returns:
        dict with train loss, population risk (and stderr) of both,
        ``relative_test_gain = (R_scratch - R_grown) / R_scratch``, and the checks
        ``function_preserving_at_insertion``, ``same_architecture``, ``steps``.
    """
    from numerics.data import population_risk
    from numerics.experiment import _build_model, _make_task, _train_reference, merge_config, validate_config
    from numerics.insertion import insert_block
    from numerics.training import train

    cfg = validate_config(config)
    task = _make_task({**cfg["task"], "seed": cfg["seed"]})
    r, width = cfg["reference"], cfg["model"]["width"]
    x, y = task.sample(r["n"], seed=seed + 1)   # the reference's own training sample
    kw = dict(optimizer=r["optimizer"], lr=r["lr"], batch_size=r["batch_size"], seed=seed, loss=task.loss)
    base, _ = _train_reference(merge_config(cfg, {"reference": {"steps": base_steps}}), task, seed)
    grown = insert_block(base, base.depth, "full", width=width, seed=seed)
    with torch.no_grad():
        preserved = torch.equal(grown(x[:256]), base(x[:256]))
    res_grown = train(grown, _all_trainable(grown), x, y, steps=grow_steps, **kw)
    scratch = insert_block(_build_model(cfg, seed), cfg["model"]["depth"], "full", width=width, seed=seed)
    res_scratch = train(scratch, _all_trainable(scratch), x, y, steps=base_steps + grow_steps, **kw)
    shapes = [[tuple(p.shape) for p in m.parameters()] for m in (grown, scratch)]
    n_pop = cfg["sizes"]["population"]
    R_g = population_risk(grown, task, n_pop, seed + 4)
    R_s = population_risk(scratch, task, n_pop, seed + 4)
    return {"train_loss_grown": res_grown.final_loss, "train_loss_scratch": res_scratch.final_loss,
            "R_grown": R_g[0], "R_grown_stderr": R_g[1], "R_scratch": R_s[0], "R_scratch_stderr": R_s[1],
            "relative_test_gain": (R_s[0] - R_g[0]) / R_s[0],
            "function_preserving_at_insertion": preserved, "same_architecture": shapes[0] == shapes[1],
            "steps": {"grown": base_steps + grow_steps, "scratch": base_steps + grow_steps}}


def _all_trainable(model) -> dict:
    return {n: p.requires_grad_(True) for n, p in model.named_parameters()}
