"""One writer per folder: ``DIR/.depthcert.lock`` holding the owner's pid, host and command.

The lock file is created atomically (a complete temporary file hard-linked to the lock's
name, which fails if the name exists; ``O_CREAT | O_EXCL`` where hard links are not
available), so two processes can never both believe they own a folder. A second writer is
refused by name (:class:`FolderLockedError`); a lock left by a process that is no longer
running on this host is taken over, with a note. Released on exit, exceptions included.
"""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Callable

from plumbing.validation import InputError

__all__ = ["LOCK_NAME", "FolderLock", "FolderLockedError", "lock_owner"]

#: The lock file's name inside the folder it protects.
LOCK_NAME = ".depthcert.lock"


class FolderLockedError(InputError):
    """The folder is being written by another process (named: pid, host, command, since when)."""

    def __init__(self, folder: str | Path, owner: dict):
        self.key, self.allowed, self.value = "--out", "a folder no other depthcert process is writing", str(folder)
        who = f"pid {owner.get('pid')} on {owner.get('host')} ({owner.get('command')}, since {owner.get('started')})"
        ValueError.__init__(self, f"--out {folder} is being written by {who}; wait for it to finish, or use "
                                  f"another --out (if that process is gone, delete {Path(folder) / LOCK_NAME}).")


def lock_owner(folder: str | Path) -> dict | None:
    """The owner recorded in ``folder``'s lock (``{}`` if unreadable), or ``None`` if unlocked."""
    path = Path(folder) / LOCK_NAME
    try:
        owner = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _alive(pid: object) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's process: alive
        return True
    return True


def _create(path: Path, text: str) -> bool:
    """Create ``path`` holding ``text`` if it does not exist (atomically); False if it exists."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:           # no hard links here: exclusive creation (content written right after)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return True
    finally:
        tmp.unlink(missing_ok=True)


class FolderLock:
    """Hold ``folder``'s lock for the life of a ``with`` block.

    Args:
        folder: the folder written (created if needed).
        command: who writes it (recorded, shown to a second writer).
        note: told when a stale lock is taken over (default: stderr).

    Raises:
        FolderLockedError: another live process holds the lock (or one on another host).

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> with FolderLock(d, "doc"):
        ...     lock_owner(d)["command"]
        'doc'
        >>> lock_owner(d) is None
        True
    """

    def __init__(self, folder: str | Path, command: str, note: Callable[[str], None] | None = None):
        self.folder, self.command = Path(folder), command
        self.note = note or (lambda text: print(f"depthcert {command}: note: {text}", file=sys.stderr))
        self.owner = {"pid": os.getpid(), "host": socket.gethostname(), "command": command,
                      "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        self.held = False

    @property
    def path(self) -> Path:
        return self.folder / LOCK_NAME

    def acquire(self) -> FolderLock:
        self.folder.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            if _create(self.path, json.dumps(self.owner)):
                self.held = True
                return self
            owner = lock_owner(self.folder)
            if owner is None:
                continue                      # released meanwhile: try again
            if owner.get("host") != self.owner["host"] or _alive(owner.get("pid")):
                raise FolderLockedError(self.folder, owner or {"pid": "?", "host": "?", "command": "?"})
            self._remove_stale(owner)
        raise FolderLockedError(self.folder, lock_owner(self.folder) or {})

    def _remove_stale(self, owner: dict) -> None:
        """Move the dead owner's lock aside; put back a lock that another process took meanwhile."""
        aside = self.path.with_name(f"{LOCK_NAME}.stale.{os.getpid()}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return
        try:
            moved = json.loads(aside.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            moved = {}
        if moved != owner and moved:         # a live writer took it over first: give it back
            _create(self.path, json.dumps(moved))
        else:
            self.note(f"{self.path}: taking over the lock of pid {owner.get('pid')} ({owner.get('command')}), "
                      "which is no longer running")
        aside.unlink(missing_ok=True)

    def release(self) -> None:
        if self.held and (lock_owner(self.folder) or {}).get("pid") == self.owner["pid"]:
            self.path.unlink(missing_ok=True)
        self.held = False

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
