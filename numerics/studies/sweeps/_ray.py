"""The Ray backend of a sweep: each cell one Ray task (an existing cluster, or a local one).

Ray is an optional extra (``pip install "depthcert[ray]"``); without it asking for this
backend is bad input (exit 2 naming the install command), never a traceback. Each task
asks for ``threads`` CPUs and sets its thread limits before torch runs, so Ray's own
scheduling keeps ``tasks x threads <= cores`` on every node. The driver writes every
result (atomically) as its task finishes, so an interrupted Ray sweep resumes like a
local one.
"""
from __future__ import annotations

from typing import Callable, Sequence

from plumbing.validation import InputError
from plumbing.validation import check_ray_address as check_address
from numerics.studies.sweeps._spec import Cell

__all__ = ["check_address", "execute_ray", "import_ray"]

RAY_INSTALL = 'pip install "depthcert[ray]"'


def import_ray():
    """``import ray``, or :class:`InputError` naming the install command."""
    try:
        import ray
    except ImportError:
        raise InputError("--backend", f"'local', or 'ray' once Ray is installed ({RAY_INSTALL})", "ray") from None
    return ray


#: Connection attempts (about 1 s each) to a cluster's GCS before giving up (**Choice**; Ray's default is 20,
#: an environment's own ``RAY_gcs_server_port_wait_time_s`` wins).
GCS_ATTEMPTS = 1


def _connect(ray, address: str) -> None:
    """``ray.init(address)`` with at most :data:`GCS_ATTEMPTS` attempts; a failure is bad input naming the address."""
    import os

    # fewer attempts; the C++ client's warning per failed attempt silenced (the refusal says it in one line)
    env = {"RAY_gcs_server_port_wait_time_s": str(GCS_ATTEMPTS), "RAY_BACKEND_LOG_LEVEL": "error"}
    given = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        os.environ.setdefault(k, v)
    try:
        ray.init(address=address, log_to_driver=False)
    except (ValueError, ConnectionError, RuntimeError) as exc:   # something answers TCP there, but not a Ray cluster
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise InputError("--address", "a reachable Ray cluster", f"{address} ({first[:200]})") from None
    finally:
        for k, v in given.items():
            if v is None:
                os.environ.pop(k, None)


def _init(ray, address: str | None, threads: int) -> bool:
    """Connect (``address``) or start a local instance; True if we started it (and must stop it)."""
    if ray.is_initialized():
        return False
    if address:
        from plumbing.machine import check_reachable

        check_address(address)                    # its form, before anything is contacted
        check_reachable("--address", address)     # seconds, not Ray's minutes, for an address nobody listens on
        _connect(ray, address)
        return True
    from numerics.studies.sweeps._worker import available_cores

    # a local instance: workers inherit this process's environment (PYTHONPATH included)
    ray.init(num_cpus=max(available_cores(), threads), include_dashboard=False, log_to_driver=False)
    return True


def execute_ray(todo: Sequence[Cell], on_done: Callable[[Cell, dict], None], *, threads: int, runner: str,
                address: str | None = None, in_flight: int = 0) -> None:
    """Run the cells as Ray tasks of ``threads`` CPUs; at most ``in_flight`` at once (0: all)."""
    ray = import_ray()
    started = _init(ray, address, threads)
    try:
        from numerics.studies.sweeps._worker import run_cell

        task = ray.remote(num_cpus=threads, max_retries=0)(run_cell)
        pending, queue = {}, list(todo)
        limit = in_flight or len(queue)
        while queue or pending:
            while queue and len(pending) < limit:
                cell = queue.pop(0)
                pending[task.remote(cell.config, runner, threads)] = cell
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                on_done(pending.pop(ref), ray.get(ref))
    finally:
        if started:
            ray.shutdown()
