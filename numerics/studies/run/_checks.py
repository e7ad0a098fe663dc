"""Resources a run needs, checked before any work: memory of the samples that must be held.

Only three samples are held in memory: the reference model's own sample (``reference.n``),
the signal sample of ``G`` and ``beta`` (``sizes.population``; ``beta`` re-evaluates
``f_top`` along the segment on all of it) and the training states of ``S``
(``sizes.M``; training draws mini-batches from all of it). ``T`` and the Monte-Carlo
samples are streamed in chunks, so their sizes cost time, not memory. A size that cannot
fit is an :class:`~plumbing.validation.InputError` naming the key, the largest size that
fits and the memory it would need.
"""
from __future__ import annotations

from typing import Mapping

from plumbing.machine import available_memory
from plumbing.validation import InputError
from numerics.data import SAMPLE_CHUNK as CHUNK_ROWS   # rows of one streamed chunk
from numerics.studies.run._config import as_run_config

__all__ = ["available_memory", "check_memory", "memory_needs"]

#: Share of the available memory a run may plan to use.
BUDGET = 0.7


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"


def memory_needs(cfg: Mapping, draws_at_once: int = 1) -> dict[str, tuple[int, int]]:
    """``{key: (value, bytes per unit of it)}`` for the sizes held in memory (float64 / int64)."""
    cfg = as_run_config(cfg)
    d, r, d_in = cfg.model.width, cfg.insertion.width, cfg.task.d_in
    k = 1   # regression targets (n, 1) or class labels (n,): one column
    bt, M = cfg.block_training, cfg.sizes.M
    out = {
        "sizes.M": (M, 8 * (d + k) * draws_at_once),
        "sizes.population": (cfg.sizes.population, 8 * (d_in + k + 3 * d + 2 * r)),
        "reference.n": (cfg.reference.n, 8 * 2 * (d_in + k)),
    }
    if bt.steps is not None:   # one loss per step and draw, plus the mini-batch indices of every step when sampled at once
        per_step = 8 * ((bt.batch_size if bt.batch_size < M else 0) + 1) * draws_at_once
        out["block_training.steps"] = (bt.steps, per_step)
    return out


def width_needs(cfg: Mapping, draws_at_once: int = 1) -> dict[str, int]:
    """``{key: bytes}`` of what grows with a width: parameters (with gradients and Adam's two
    moments: 4 copies) and one streamed chunk of activations (a few copies per layer)."""
    cfg = as_run_config(cfg)
    m, t = cfg.model, cfg.task
    d, r = m.width, cfg.insertion.width
    return {
        "model.width": 8 * (4 * (m.depth + 1) * (d * d + 2 * d) + 4 * CHUNK_ROWS * d),
        "task.width": 8 * ((t.depth + 1) * (t.width ** 2 + 2 * t.width) + 4 * CHUNK_ROWS * t.width),
        "insertion.width": 8 * (4 * d * r * draws_at_once + 2 * CHUNK_ROWS * r),
    }


def check_memory(cfg: Mapping, draws_at_once: int = 1, available: int | None = None) -> None:
    """Raise if what a run must hold cannot fit in memory (docstring of ``numerics.studies.run._checks``).

    The key named is the one with the largest need (a size or a width), so a user sees which
    setting to lower.

    Raises:
        InputError: e.g. ``sizes.M == 1000000000000, must be at most 4.2e+08 on this
            machine: held in memory it needs 37.3 TB, 13.1 GB available``.
    """
    cfg = as_run_config(cfg)
    avail = available_memory() if available is None else available
    budget = BUDGET * avail
    needs = memory_needs(cfg, draws_at_once)
    widths = width_needs(cfg, draws_at_once)
    bytes_of = {**{k: v * per for k, (v, per) in needs.items()}, **widths}
    total = sum(bytes_of.values())
    if total <= budget:
        return
    key = max(bytes_of, key=bytes_of.get)
    others = total - bytes_of[key]
    if key in needs:
        value, per = needs[key]
        fits = max(int((budget - others) // per), 0)
        why = "" if fits else " (not one row fits: a row's size grows with model.width and insertion.width)"
        raise InputError(key, f"at most {fits:.3g} on this machine{why}: held in memory it needs "
                         f"{_human(value * per)}, {_human(avail)} available", value)
    section, name = key.split(".")
    raise InputError(key, f"a width whose parameters and activations fit: it needs {_human(bytes_of[key])}, "
                     f"{_human(avail)} available", getattr(getattr(cfg, section), name))
