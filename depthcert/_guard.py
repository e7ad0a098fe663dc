"""What the CLI does around a command that writes a results folder: lock it, and stop cleanly.

Every command that writes a folder (:data:`LOCKED`: ``--out``; ``plot``'s default
``DIR/plots``; ``grow --model``'s default ``./grow_out``) holds its lock
(:class:`plumbing.lock.FolderLock`) while it runs: a second writer exits 2 naming the
first. Before any work, :func:`check_outputs` refuses an output path that is one of the
command's inputs, a directory, a device or FIFO, or the path of another of its outputs
(:func:`plumbing.io.check_output_paths`), and a figure path in a format matplotlib cannot
write (``bounds --plot x.toml``). SIGINT and SIGTERM stop any command with one
line on stderr, ``interrupted; N cells stored; re-run to continue`` (exit 130 / 143, never
a traceback): every finished item is already stored atomically, so the work done is intact
and a re-run resumes it.
"""
from __future__ import annotations

import contextlib
import json
import signal
import sys
from pathlib import Path

__all__ = ["LOCKED", "WRITERS", "Interrupted", "check_outputs", "close_progress_bars", "guarded", "interrupted_line",
           "out_folder"]

#: Commands that write ``--out`` and what they store there, item by item.
WRITERS = {"sweep": "cells", "validity": "draws", "grow": "steps", "reproduce": "cells"}
#: Commands that write a folder: each holds the folder's lock while it runs (one writer per folder).
LOCKED = ("run", "demo", "sweep", "plot", "reproduce", "validity", "saturation", "grow", "certify", "study")


def out_folder(args) -> str | None:
    """The folder the parsed ``args`` make their command write (``None``: none)."""
    out = getattr(args, "out", None)
    if out is None and args.command == "plot" and _is_dir(getattr(args, "dir", None)):
        return str(Path(args.dir) / "plots")
    if out is None and args.command == "grow" and getattr(args, "model", None):
        return "grow_out"        # depthcert._cmd_user's default
    return out


def _is_dir(path: str | None) -> bool:
    try:
        return bool(path) and Path(path).is_dir()
    except (OSError, ValueError):     # a name too long to examine: not a folder this command can use
        return False


def _file_part(spec: str | None) -> str | None:
    """``FILE.py`` of ``FILE.py:name`` (``None`` if not of that form)."""
    path, sep, _ = (spec or "").rpartition(":")
    return path if sep and path else None


def _written(epilog: str, args) -> list[str]:
    """The files a command's help (``epilog``) lists in its folder (``DIR/name``; ``KIND``, ``NAME`` filled in)."""
    import re

    names = re.findall(r"(?m)^\s+(?:DIR|FOLDER)/([\w.-]+)(?![\w./-])", epilog)     # files, not DIR/sub/ folders
    fill = {"KIND": getattr(args, "kind", None), "NAME": getattr(args, "name", None)}
    out = []
    for name in names:
        for key, value in fill.items():
            name = name.replace(key, str(value)) if value is not None else name
        out += [name.rstrip(".,")] if not any(k in name for k in ("KEY", "KIND", "NAME")) else []
    return out


def check_outputs(args, epilog: str = "") -> None:
    """Refuse, before any work, outputs of the parsed ``args`` that would overwrite one of their inputs
    (``--config``, ``--weights``, the ``--model`` / ``--data`` files, ``--chain``), an existing directory
    or a device, or that two outputs share (:func:`plumbing.io.check_output_paths`). The files written
    in the command's folder are those its help (``epilog``) lists as ``DIR/name``.

    Raises:
        InputError: the option, what is allowed and the path.
    """
    from plumbing.figures import check_figure_format
    from plumbing.io import check_output_paths, path_kind

    inputs = [("--config", getattr(args, "config", None)), ("--weights", getattr(args, "weights", None)),
              ("--model", _file_part(getattr(args, "model", None))), ("--data", _file_part(getattr(args, "data", None))),
              ("--chain", getattr(args, "chain", None))]
    outputs = []
    for flag, attr in (("--plot", "plot"), ("--plot-terms", "plot_terms")):   # bounds: figures (no suffix: .png)
        path = getattr(args, attr, None)
        raw = path is None or path_kind(path, flag) in ("dir", "other")   # a folder or a device: refused as named
        outputs += [(flag, path if raw else check_figure_format(path, flag))]   # a format matplotlib cannot write: refused
    outputs += [("--save-model", getattr(args, "save_model", None))]
    folder = out_folder(args)
    if folder is not None and args.command in LOCKED:
        outputs += [(f"--out (writes {name})", Path(folder) / name) for name in _written(epilog, args)]
    check_output_paths(outputs, inputs)


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


def _missing_folders(path: Path) -> list[Path]:
    """``path`` and its ancestors that do not exist yet, innermost first (what creating ``path`` creates)."""
    out = []
    try:
        while not path.exists() and path != path.parent:
            out.append(path)
            path = path.parent
    except (OSError, ValueError):   # a name too long to examine: check_writable_dir names it
        pass
    return out


@contextlib.contextmanager
def guarded(command: str, out: str | None):
    """SIGTERM raises :class:`Interrupted` (SIGINT: KeyboardInterrupt) and ``out`` is locked for writers
    (:data:`LOCKED`; ``out``: :func:`out_folder`)."""
    old = signal.signal(signal.SIGTERM, _raise)
    try:
        if command in LOCKED and out is not None:
            from plumbing.io import check_writable_dir
            from plumbing.lock import FolderLock

            created = _missing_folders(Path(out))
            check_writable_dir(out)     # an unusable --out is bad input (named) before the lock
            try:
                with FolderLock(out, command):
                    yield
            finally:                    # a command refused before writing leaves no empty folder behind
                for folder in created:  # innermost first: plot's DIR/plots, then a DIR made for it
                    if folder.is_dir() and not any(folder.iterdir()):
                        folder.rmdir()
        else:
            yield
    finally:
        signal.signal(signal.SIGTERM, old)
