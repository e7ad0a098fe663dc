"""What a workload config's samples and networks cost in memory, estimated before anything is built.

:func:`sample_memory` is the one estimate for the configs of ``saturation`` and ``grow`` (and
the API's ``run_saturation`` / ``grow``): every sample size (``task.n_population``,
``task.n_test``, ``reference.n``, ``saturation.probe_n``, ``saturation.beta_n``, the batch
sizes) and every width (``model.width``, ``task.width``, ``saturation.width``) with the bytes
it makes the command hold (float64, 8 bytes a number; **Choice**: a row holds its input, its
label and two copies of the scanned state; a network four copies of its parameters, for the
gradient and Adam's two moments). :func:`check_config_sizes` refuses, before any work, a config
whose estimate exceeds the memory available (:func:`plumbing.machine.check_fits`) or whose step
counts cannot end within the week a command plans (:func:`plumbing.machine.check_work`). No torch
here: the CLI calls it on the file as read, before its heavy imports; a key missing from a raw
file counts nothing (the validated, merged config is checked again).
"""
from __future__ import annotations

from typing import Mapping

from plumbing.machine import check_fits, check_work

#: The most draws one validity study may ask for (**Choice**: 10^5 draws of the demo take about a day); here, without
#: torch, so that the CLI refuses a larger count before its heavy imports (``numerics.studies.validity.MAX_DRAWS``).
MAX_DRAWS = 100_000

__all__ = ["SECONDS_PER_STEP", "bootstrap_memory", "check_config_sizes", "sample_memory"]

#: Inputs per sample of the data sets whose width is not in the config (``numerics.builders.DATA_TASK_DIMS``,
#: CIFAR's 3 x 32 x 32 bytes).
_DATA_D_IN = {"digits": 64, "mnist1d": 40, "cifar": 3072}
#: A lower bound of the time of one training step of any network (**Choice**: 10 us; a step of the smallest
#: MLP of this repository takes longer on any CPU), so only step counts that can never finish are refused.
SECONDS_PER_STEP = 1e-5


def _int(section: Mapping, key: str, default: int = 0) -> int:
    v = section.get(key, default) if isinstance(section, Mapping) else default
    ok = isinstance(v, int) and not isinstance(v, bool) and 0 < v < 2**63   # beyond int64: the schema's refusal
    return v if ok else default


def sample_memory(cfg: Mapping) -> dict[str, tuple[int, float, bool]]:
    """``{key: (value, bytes, linear)}`` for the sizes and widths of a workload config (module docstring).

    Example:
        >>> needs = sample_memory({"task": {"d_in": 4, "n_population": 1000}, "model": {"width": 16}})
        >>> needs["task.n_population"]
        (1000, 296000.0, True)
    """
    task, model = cfg.get("task", {}), cfg.get("model", {})
    ref, sat = cfg.get("reference", {}), cfg.get("saturation", {})
    kind = task.get("kind") if isinstance(task, Mapping) else None
    if isinstance(kind, str) and kind in _DATA_D_IN:   # a kind of the wrong type is the schema's to name
        d_in = _DATA_D_IN[kind]
    else:   # a text task's row is seq_len tokens; a teacher's, d_in numbers
        d_in = _int(task, "seq_len", 1) if kind == "chars" else _int(task, "d_in", 1)
    d, depth = _int(model, "width", 1), _int(model, "depth", 0)
    r = _int(sat, "width", 0)
    row = 8.0 * (d_in + 1 + 2 * d)                    # input, label, the state and its gradient
    probe_row = row + 8.0 * r                         # and the features of the scanned block
    out: dict[str, tuple[int, float, bool]] = {}
    for section, name, key, per in ((task, "task", "n_population", row), (task, "task", "n_test", row),
                                    (ref, "reference", "n", row), (ref, "reference", "batch_size", row),
                                    (sat, "saturation", "probe_n", probe_row), (sat, "saturation", "beta_n", probe_row),
                                    (sat, "saturation", "batch_size", probe_row)):
        n = _int(section, key)
        if n:
            out[f"{name}.{key}"] = (n, n * per, True)
    if d:
        out["model.width"] = (d, 8.0 * 4 * (depth + 1) * (d * d + 2 * d), False)
    w = _int(task, "width")
    if w:
        out["task.width"] = (w, 8.0 * (_int(task, "depth", 0) + 1) * (w * w + 2 * w), False)
    if r:   # the block's V (d x r), its random features (d x r) and the scan's r x r second moments
        out["saturation.width"] = (r, 8.0 * (2 * r * r + 2 * d * r), False)
    return out


def check_config_sizes(cfg: Mapping, available: int | None = None) -> None:
    """Refuse a workload config that cannot fit in memory or whose steps cannot end within a week.

    Raises:
        InputError: names the key, its value and the limit (memory available, or the most steps).
    """
    ref, growth = cfg.get("reference", {}), cfg.get("growth", {})
    depths = _int(growth, "max_depth", 1)
    for key, section, name, times in (("reference.steps", ref, "steps", 1), ("reference.anneal_steps", ref, "anneal_steps", 1),
                                      ("growth.steps_per_growth", growth, "steps_per_growth", depths)):
        n = _int(section, name)
        if n:
            check_work(key, n, SECONDS_PER_STEP * times,
                       "training step" + (f" (done at each of growth.max_depth = {times} depths)" if times > 1 else ""))
    check_fits(sample_memory(cfg), available)


def bootstrap_memory(n_boot: int, cells: int) -> dict[str, tuple[int, float, bool]]:
    """``{"--n-boot": (n_boot, bytes, True)}``: a resample holds its cell indices and a few resampled columns
    (**Choice**: ``4 * cells + 16`` numbers of 8 bytes), for :func:`plumbing.machine.check_fits`."""
    return {"--n-boot": (n_boot, 8.0 * n_boot * (4 * cells + 16), True)}
