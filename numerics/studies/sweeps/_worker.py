"""What runs inside a sweep worker: thread limits set before torch is imported, one cell.

This module imports nothing heavy at import time: a worker process (spawned, or a Ray
worker) first calls :func:`limit_threads`, which sets the BLAS/OpenMP environment and only
then imports torch and fixes its intra-op threads, so that ``workers x threads <= cores``.
"""
from __future__ import annotations

import importlib
import os
import time
from typing import Any, Mapping

from plumbing.machine import available_cores

__all__ = ["DEFAULT_RUNNER", "available_cores", "init_worker", "limit_threads", "run_cell", "warm_up"]

#: The function a cell runs, as ``"module:function"`` (importable in every worker).
DEFAULT_RUNNER = "numerics.studies.run:run_experiment"
_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS")



def limit_threads(threads: int) -> None:
    """Set the thread environment (read by the BLAS/OpenMP runtimes at load) and torch's threads."""
    for name in _THREAD_ENV:
        os.environ[name] = str(threads)
    import torch

    torch.set_num_threads(threads)


def init_worker(threads: int) -> None:
    """Process-pool initializer: runs in each fresh worker before any cell.

    A worker ignores SIGINT (Ctrl-C reaches the whole process group): the driver stops
    the workers it started and reports the interruption once.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit_threads(threads)
    try:
        import torch

        torch.set_num_interop_threads(1)
    except RuntimeError:   # already set in this process: keep it
        pass


def warm_up(runner: str = DEFAULT_RUNNER) -> int:
    """Import the runner's module (torch and the study) so the first cell starts at once; the pid."""
    _resolve(runner)
    return os.getpid()


def _resolve(runner: str):
    module, _, name = runner.partition(":")
    return getattr(importlib.import_module(module), name)


def run_cell(config: Mapping[str, Any], runner: str = DEFAULT_RUNNER, threads: int | None = None) -> dict:
    """Run one cell; return the record to store (the runner's result plus a ``sweep`` entry).

    A cell that cannot be carried out (no first-order signal, divergence) is recorded as
    ``status = "failed"`` with its message instead of stopping the sweep; the record is
    stored, so a re-run does not retry a deterministic failure.
    """
    from numerics.training import DivergenceError

    if threads is not None:
        limit_threads(threads)
    import torch

    t0 = time.perf_counter()
    info = {"status": "ok", "error": None, "threads": torch.get_num_threads(), "pid": os.getpid()}
    try:
        record = dict(_resolve(runner)(config))
    except (ArithmeticError, DivergenceError) as exc:
        record = {"config": dict(config)}
        info.update(status="failed", error=f"{type(exc).__name__}: {exc}")
    info["wall_s"] = time.perf_counter() - t0
    record["sweep"] = info
    return record
