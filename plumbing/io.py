"""Atomic writes, JSON without inf/nan, versions: the I/O every layer shares.

It lives in :mod:`plumbing`, below :mod:`bounds` (no torch, no matplotlib at import), so that
:mod:`bounds` holds mathematics only and every layer uses one implementation.
"""
from __future__ import annotations

import errno
import json
import math
import os
import platform
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from plumbing.validation import InputError, first_line

__all__ = ["WriteFailed", "atomic_write", "atomic_write_json", "atomic_write_text", "check_output_paths", "check_writable_dir", "dumps",
           "package_version",
           "path_kind", "to_plain", "to_toml", "versions"]


def _jsonable(obj: Any) -> Any:
    """Replace non-finite floats by ``None`` and numpy scalars/arrays by Python values."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return _jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def dumps(obj: Any, **kw) -> str:
    """JSON text of ``obj`` (non-finite floats become ``null``: JSON has no inf/nan)."""
    return json.dumps(_jsonable(obj), allow_nan=False, **kw)


#: The errors of a full disk, a quota or a file-size limit (``RLIMIT_FSIZE``: EFBIG).
FULL = frozenset(e for e in (errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", None)) if e is not None)


class WriteFailed(OSError, InputError):
    """A file could not be written (disk full, quota, file-size limit): which file, why, and that the
    previous file is intact and the partial one removed. An :class:`OSError` (``errno`` kept) and an
    :class:`InputError`, so that the CLI ends in one line (exit 2) and code catching ``OSError`` still does."""

    def __init__(self, path: Path, exc: BaseException, existed: bool):
        reason = getattr(exc, "strerror", None) or first_line(exc, 200)
        before = "the previous file is intact" if existed else "no file was there before, none is left"
        message = (f"{path}: could not be written ({reason}: the disk is full or a file-size limit was hit); "
                   f"{before} and the partial file is removed; free space (or raise the limit) and re-run")
        OSError.__init__(self, message)
        self.errno, self.strerror, self.filename = getattr(exc, "errno", None), reason, str(path)
        self.key, self.allowed, self.value = str(path), "a file that can be written", reason

    def __str__(self) -> str:
        return self.args[0]


def _full(exc: BaseException) -> bool:
    """``exc`` is a full disk or a file-size limit (torch.save reports one as a RuntimeError naming the write)."""
    if isinstance(exc, OSError):
        return exc.errno in FULL
    return isinstance(exc, RuntimeError) and "write" in str(exc).lower() and "fail" in str(exc).lower()


def _mode(path: Path, existed: bool) -> int:
    """The permission bits of the file replaced, or of a new file under the process's umask."""
    if existed:
        try:
            return os.stat(path).st_mode & 0o7777
        except OSError:
            pass
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills a temp file in the same folder, which is
    then flushed to disk and renamed over ``path``; on any failure the temp file is removed and
    ``path`` is left as it was.

    Raises:
        WriteFailed: the disk is full or a file-size limit was hit (:data:`FULL`): the path, the reason and
            that the previous file is intact (the partial temp file removed).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    existed, tmp = path.exists(), None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, _mode(path, existed))      # the mode a plain open() would give, not mkstemp's 0600
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if _full(exc):
            raise WriteFailed(path, exc, existed) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (temp file in the same folder + rename)."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def check_writable_dir(path: str | os.PathLike, key: str = "--out") -> Path:
    """Create the folder ``path`` if needed and check that a file can be written there.

    Raises:
        InputError: naming ``key``, what is needed and the path with the system's reason
            (e.g. ``/proc/x``: no such file or directory), before any work is done.
    """
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p, prefix=".write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise InputError(key, "a folder that can be created and written", f"{path} ({exc.strerror or exc})") from None
    return p


def path_kind(path: str | os.PathLike, key: str) -> str:
    """``"missing"``, ``"file"`` (regular), ``"dir"`` or ``"other"`` (device, FIFO, socket) for ``path``, following symlinks.

    Raises:
        InputError: the path cannot be examined (too long, a NUL byte, no permission): ``key``, the reason.
    """
    import stat

    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:
        return "missing"
    except (OSError, ValueError) as exc:
        raise InputError(key, "a usable path", f"{str(path)[:200]} ({getattr(exc, 'strerror', None) or exc})") from None
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _same_path(a: Path, b: Path) -> bool:
    """``a`` and ``b`` name one file: equal after resolving symlinks, or one inode (a hard link)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:              # one of them does not exist: not the same file
        return False


def check_output_paths(outputs: Iterable[tuple[str, str | os.PathLike | None]],
                       inputs: Iterable[tuple[str, str | os.PathLike | None]] = ()) -> None:
    """Refuse, before any work, an output path that would destroy a user's file or lose an output.

    Each ``(option, path)`` of ``outputs`` (``None`` paths skipped) must be a regular file or
    not exist yet -- not a directory, not a device, FIFO or socket -- and must be neither one of
    ``inputs`` (the same file after symlinks and hard links) nor another output's path.

    Raises:
        InputError: naming the option, what is allowed and the path.

    Example:
        >>> check_output_paths([("--save-model", "m.py")], [("--model", "m.py")])
        Traceback (most recent call last):
        ...
        plumbing.validation.InputError: --save-model == 'm.py', must be a path that is not an input of this command (--model m.py).
    """
    inputs = [(flag, Path(p)) for flag, p in inputs if p is not None]
    seen: list[tuple[str, Path]] = []
    for flag, path in outputs:
        if path is None:
            continue
        p = Path(path)
        kind = path_kind(p, flag)
        if kind == "dir":
            raise InputError(flag, "a file path, not a directory (e.g. DIR/name.png)", str(path))
        if kind == "other":
            raise InputError(flag, "a regular file path (not a device, FIFO or socket)", str(path))
        for other, q in inputs:
            if _same_path(p, q):
                raise InputError(flag, f"a path that is not an input of this command ({other} {q})", str(path))
        for other, q in seen:
            if _same_path(p, q):
                raise InputError(flag, f"a path other than {other}'s ({q}): two outputs of one command at one path",
                                 str(path))
        seen.append((flag, p))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    return atomic_write_text(path, dumps(obj, indent=2, sort_keys=False) + "\n")


def package_version() -> str:
    """depthcert's installed version, from the package metadata (plumbing imports nothing above it).

    ``"0+unknown"`` when the package is not installed (a bare source tree on ``PYTHONPATH``);
    ``tests/test_layers.py`` checks that it equals ``depthcert.__version__`` where it is installed.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("depthcert")
    except PackageNotFoundError:
        return "0+unknown"


def versions() -> dict[str, str]:
    """Versions of Python and the numerical packages, for result files."""
    out = {"python": platform.python_version(), "depthcert": package_version()}
    for name in ("numpy", "sympy", "scipy", "torch", "z3"):
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", None) or getattr(mod, "get_version_string", lambda: "?")()
        except ImportError:
            continue
    return out


def to_plain(obj: Any) -> Any:
    """``obj`` with numpy values as Python ones and non-finite floats as ``None`` (what :func:`dumps` writes).

    Example:
        >>> import numpy as np
        >>> to_plain({"a": np.float64(0.5), "b": np.array([1.0, np.inf])})
        {'a': 0.5, 'b': [1.0, None]}
    """
    return _jsonable(obj)


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, int):
        return str(v)
    return repr(float(v))  # repr round-trips a float64 exactly


def to_toml(data: Mapping[str, Any]) -> str:
    """Flat top-level keys then one level of ``[tables]`` (enough for setups and configs).

    Floats are written with ``repr`` (a float64 round-trips exactly).

    Example:
        >>> print(to_toml({"M": 20, "delta": 0.05, "loss": {"B": 1.5}}), end="")
        M = 20
        delta = 0.05
        <BLANKLINE>
        [loss]
        B = 1.5
    """
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, Mapping)]
    for k, v in data.items():
        if isinstance(v, Mapping):
            lines += ["", f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"
