"""Running the missing cells of a sweep: in process, on a process pool, or as Ray tasks.

Oversubscription is what makes parallel torch slow on a small machine (two processes of
2 threads each on 2 cores ran 2.7-10x slower here), so every backend fixes
``workers x threads <= cores``: each pool worker is a fresh process (``spawn``: never a
``fork`` of a process whose thread pools have started) whose initializer sets the
BLAS/OpenMP environment before torch is imported (and the driver computes too, so
spawning never delays a sweep); each Ray task asks for ``threads``
CPUs and sets the same limits. The driver alone writes the store (atomically, one
``result.json`` per cell, as soon as the cell is done).
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import sys
import time
from typing import Callable, Sequence

from plumbing.validation import InputError
from numerics.studies.sweeps._spec import Cell
from numerics.studies.sweeps._worker import available_cores, init_worker, run_cell, warm_up

__all__ = ["BACKENDS", "available_cores", "execute", "resolve_parallelism"]

BACKENDS = ("local", "ray")


def _env_threads() -> int | None:
    """The user's ``OMP_NUM_THREADS``, if set to a positive integer (a limit we keep)."""
    try:
        value = int(os.environ.get("OMP_NUM_THREADS", ""))
    except ValueError:
        return None
    return value if value >= 1 else None


def resolve_parallelism(backend: str, workers: int | None, threads: int | None) -> tuple[int, int]:
    """``(workers, threads)`` with ``workers x threads <= cores`` (local), or raise :class:`InputError`.

    Local defaults: one worker; ``threads = cores // workers``, but never above the
    user's ``OMP_NUM_THREADS`` when it is set (on a shared machine two threads per process
    can run many times slower than one). Ray: ``threads`` CPUs per task (default 1);
    ``workers`` caps the tasks in flight.
    """
    if backend not in BACKENDS:
        raise InputError("--backend", f"one of {list(BACKENDS)}", backend)
    cores = available_cores()
    for name, v in (("--workers", workers), ("--threads", threads)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(name, "an integer >= 1", v)
    if backend == "ray":
        return workers or 0, threads or 1
    workers = workers or 1
    if workers > cores:
        raise InputError("--workers", f"an integer in [1, {cores}] (cores available)", workers)
    threads = threads or max(1, min(cores // workers, _env_threads() or cores))
    if workers * threads > cores:
        raise InputError("--threads", f"an integer with workers x threads <= {cores} cores (workers = {workers})",
                         threads)
    return workers, threads


def execute(todo: Sequence[Cell], on_done: Callable[[Cell, dict], None], *, backend: str, workers: int,
            threads: int, runner: str, address: str | None = None) -> None:
    """Run every cell of ``todo``; call ``on_done(cell, record)`` in the driver as each finishes."""
    if not todo:
        return
    if backend == "ray":
        from numerics.studies.sweeps._ray import execute_ray

        return execute_ray(todo, on_done, threads=threads, runner=runner, address=address, in_flight=workers)
    workers = min(workers, len(todo))
    if workers == 1:
        return _in_process(todo, on_done, threads, runner)
    return _pool(todo, on_done, workers, threads, runner)


def _in_process(todo, on_done, threads: int, runner: str) -> None:
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for cell in todo:
            on_done(cell, run_cell(cell.config, runner))
    finally:
        torch.set_num_threads(old)


@contextlib.contextmanager
def _spawnable_main():
    """A ``__main__`` read from stdin (``python - < script``) cannot be re-imported by a
    spawned worker; hide its fake path while the workers start (they never need it)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    hide = path is not None and not os.path.isfile(path)
    if hide:
        del main.__file__
    try:
        yield
    finally:
        if hide:
            main.__file__ = path


#: Remaining work (estimated, seconds of one process) below which no worker is spawned:
#: a spawned process pays the torch import and the first cell's one-off set-up
#: (lambdified bounds, ...), measured here at 5-10 s of CPU, and shares the cores meanwhile.
SPAWN_MIN_WORK_S = 10.0


def _pool(todo, on_done, workers: int, threads: int, runner: str) -> None:
    """``workers - 1`` spawned processes plus the driver itself, each on ``threads`` threads.

    The driver runs the first cells itself and spawns the pool only when the remaining
    work, estimated from its fastest cell so far, exceeds :data:`SPAWN_MIN_WORK_S`; it
    keeps computing while the workers start and hands cells to the pool only once a
    process has reported ready (at most two per ready process: one running, one queued).
    So a short sweep runs entirely in the driver -- on all ``workers x threads`` threads, as
    fast as a serial one -- and a long one never waits for start-up.
    """
    import torch

    queue, times, old = list(todo), [], torch.get_num_threads()
    torch.set_num_threads(workers * threads)      # alone on the cores until a pool is spawned
    try:
        while queue:
            if len(times) >= 2 and len(queue) * min(times) >= SPAWN_MIN_WORK_S:
                torch.set_num_threads(threads)        # from now on workers x threads <= cores
                return _share(queue, on_done, workers, threads, runner)
            cell, t0 = queue.pop(0), time.perf_counter()
            on_done(cell, run_cell(cell.config, runner))
            times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)


def _share(queue: list, on_done, workers: int, threads: int, runner: str) -> None:
    """Run ``queue`` on the driver and ``workers - 1`` spawned processes (see :func:`_pool`)."""
    pool = cf.ProcessPoolExecutor(max_workers=workers - 1, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=init_worker, initargs=(threads,))
    pending, ready = {}, 0
    try:
        with _spawnable_main():
            warm = {pool.submit(warm_up, runner) for _ in range(workers - 1)}
        while queue or pending:
            for fut in [f for f in warm if f.done()]:
                warm.discard(fut)
                fut.result()
                ready += 1
            for fut in [f for f in pending if f.done()]:
                on_done(pending.pop(fut), fut.result())
            while queue and len(pending) < 2 * ready:                # one running, one queued per worker
                cell = queue.pop(0)
                pending[pool.submit(run_cell, cell.config, runner)] = cell
            if queue:
                cell = queue.pop(0)
                on_done(cell, run_cell(cell.config, runner))          # the driver's own share
            elif pending:
                cf.wait(set(pending) | warm, return_when=cf.FIRST_COMPLETED)
    except BaseException:
        _stop(pool)
        raise
    _stop(pool) if warm else pool.shutdown(wait=True)


def _stop(pool) -> None:
    """Stop the workers this pool started (idle, or still importing torch)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
