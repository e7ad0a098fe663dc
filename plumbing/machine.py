"""What this machine offers the process: CPU cores and free memory (checked before any work)."""
from __future__ import annotations

import os

__all__ = ["CONNECT_TIMEOUT_S", "MAX_PLANNED_SECONDS", "MEMORY_SHARE", "available_cores", "available_memory", "check_fits", "proc_kib",
           "check_reachable", "check_work", "human_bytes"]


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def proc_kib(path: str, field: str) -> int | None:
    """``field`` (a ``Name:`` line in kB) of a ``/proc`` file such as ``/proc/meminfo``, in bytes; None where unknown."""
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` of ``/proc/meminfo``, else physical memory)."""
    got = proc_kib("/proc/meminfo", "MemAvailable")
    return got if got is not None else os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


#: Share of the available memory a command may plan to use (**Choice**, as ``run``'s check).
MEMORY_SHARE = 0.7
#: The longest work a command plans before it starts (**Choice**: a week); a size asking more is refused.
MAX_PLANNED_SECONDS = 7 * 24 * 3600


def human_bytes(n: float) -> str:
    """``1536`` -> ``'1.5 KB'`` (binary units)."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"  # pragma: no cover


def check_fits(needs, available: int | None = None) -> None:
    """Refuse, before anything is allocated, sizes whose memory cannot fit.

    Args:
        needs: ``{key: (value, bytes, linear)}``: the setting named by ``key`` (a config key or an
            option), its value, the bytes it makes the command hold, and whether those grow linearly
            with it (then the largest value that fits is stated).
        available: bytes available (default :func:`available_memory`).

    Raises:
        InputError: names the key with the largest need, its value, the memory it needs and the
            limit (``MEMORY_SHARE`` of the available memory), e.g. ``saturation.probe_n ==
            10000000000, must be at most 1.9e+08 on this machine: it needs 1.2 TB of memory, 21 GB
            available (at most 70% planned)``.
    """
    from plumbing.validation import InputError

    avail = available_memory() if available is None else available
    budget = MEMORY_SHARE * avail
    total = sum(float(b) for _, b, _ in needs.values())
    if total <= budget:
        return
    key = max(needs, key=lambda k: float(needs[k][1]))
    value, need, linear = needs[key]
    others = total - float(need)
    limit = f"at most {max(int(value * (budget - others) / need), 0):.3g} on this machine" if linear and need else \
        "smaller on this machine"
    raise InputError(key, f"{limit}: it needs {human_bytes(total)} of memory, {human_bytes(avail)} available "
                     f"(at most {MEMORY_SHARE:.0%} planned)", value)


def check_work(key: str, value, seconds_each: float, unit: str, limit_s: float = MAX_PLANNED_SECONDS) -> None:
    """Refuse a count whose work cannot end within ``limit_s``: ``value`` units of at least ``seconds_each``.

    Raises:
        InputError: e.g. ``--estimate == 1e+21, must be at most 604800: each draw takes at least
            1 s and at most 604800 s (a week) of work is planned``.
    """
    from plumbing.validation import InputError

    if value * seconds_each > limit_s:
        raise InputError(key, f"at most {int(limit_s / seconds_each)}: each {unit} takes at least {seconds_each:g} s "
                         f"and at most {limit_s:g} s (a week) of work is planned", value)


#: Seconds an address has to accept a TCP connection (**Choice**; Ray itself waits minutes for an address
#: nobody listens on).
CONNECT_TIMEOUT_S = 3.0


def check_reachable(key: str, address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse, within ``timeout_s``, a cluster address that is not ``HOST:PORT`` (``ray://`` allowed) or where
    nothing accepts a TCP connection; ``auto`` / ``local`` are left to the caller.

    Raises:
        InputError: names ``key``, the form or the reachability, and the value.
    """
    import socket

    from plumbing.validation import InputError

    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(key, "HOST:PORT of a Ray cluster (or ray://HOST:PORT, auto)", address)
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except (OSError, UnicodeError) as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (getattr(exc, "strerror", None) or type(exc).__name__)
        raise InputError(key, f"a reachable Ray cluster (a TCP connection within {timeout_s:g} s)",
                         f"{address} ({why})") from None
