"""What the CLI does around a command that writes a results folder: lock it, and stop cleanly.

``sweep``, ``validity``, ``grow`` and ``reproduce`` hold ``--out``'s lock
(:class:`plumbing.lock.FolderLock`) while they run: a second writer exits 2 naming the
first. SIGINT and SIGTERM stop any command with one line on stderr, ``interrupted; N cells
stored; re-run to continue`` (exit 130 / 143, never a traceback): every finished item is
already stored atomically, so the work done is intact and a re-run resumes it.
"""
from __future__ import annotations

import contextlib
import json
import signal
import sys
from pathlib import Path

__all__ = ["WRITERS", "Interrupted", "close_progress_bars", "guarded", "interrupted_line"]

#: Commands that write ``--out`` and what they store there, item by item.
WRITERS = {"sweep": "cells", "validity": "draws", "grow": "steps", "reproduce": "cells"}


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM received (``signum``); raised where the command was."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _count(command: str, out: Path) -> int:
    """How many finished items ``out`` holds (files present; corrupt ones are found on resume)."""
    if command == "sweep":
        return len(list(out.glob("cells/*/result.json")))
    if command == "validity":
        return len(list(out.glob("draws/*.json")))
    if command == "reproduce":
        return len(list(out.glob("sweeps/*/cells/*/result.json")))
    try:
        return len(json.loads((out / "trajectory.json").read_text(encoding="utf-8"))["steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def interrupted_line(command: str, out: str | None) -> str:
    """``interrupted; N cells stored; re-run to continue`` (or ``interrupted`` for a command storing nothing)."""
    if command not in WRITERS or out is None:
        return "interrupted"
    return f"interrupted; {_count(command, Path(out))} {WRITERS[command]} stored; re-run to continue"


def close_progress_bars() -> None:
    """Close the tqdm bars an interrupted command left open (so its one line is not drawn over)."""
    std = sys.modules.get("tqdm.std")
    for bar in list(getattr(getattr(std, "tqdm", None), "_instances", None) or []):
        try:
            bar.close()
        except Exception:   # noqa: BLE001 -- a bar that cannot close must not hide the interruption
            pass


def _raise(signum, frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def guarded(command: str, out: str | None):
    """SIGTERM raises :class:`Interrupted` (SIGINT: KeyboardInterrupt) and ``out`` is locked for writers."""
    old = signal.signal(signal.SIGTERM, _raise)
    try:
        if command in WRITERS and out is not None:
            from plumbing.io import check_writable_dir
            from plumbing.lock import FolderLock

            existed = Path(out).exists()
            check_writable_dir(out)     # an unusable --out is bad input (named) before the lock
            try:
                with FolderLock(out, command):
                    yield
            finally:                    # a command refused before writing leaves no empty folder behind
                if not existed and Path(out).is_dir() and not any(Path(out).iterdir()):
                    Path(out).rmdir()
        else:
            yield
    finally:
        signal.signal(signal.SIGTERM, old)
