"""What this machine offers the process: CPU cores and free memory (checked before any work)."""
from __future__ import annotations

import os

__all__ = ["available_cores", "available_memory"]


def available_cores() -> int:
    """CPU cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # pragma: no cover - macOS / Windows
        return os.cpu_count() or 1


def available_memory() -> int:
    """Bytes of memory available now (``MemAvailable`` of ``/proc/meminfo``, else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
