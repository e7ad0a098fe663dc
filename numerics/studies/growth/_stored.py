"""What a growth folder holds, checked before it is resumed: ``trajectory.json`` and ``checkpoint.pt``.

Both carry :func:`plumbing.store.config_hash` of the validated grow config; a re-run resumes
only from files of the same hash. A truncated or unreadable file is named on stderr and the
growth is recomputed from the start (never blamed on ``--config``, never read as absent).
"""
from __future__ import annotations

import pickle
import sys
import zipfile
from pathlib import Path
from typing import Any, Callable, Mapping

import torch

from plumbing.store import StoredFileError, config_hash, load_json, record_hash
from plumbing.validation import first_line
from plumbing.store import stamp as stamp_record

__all__ = ["grow_hash", "read_stored", "stamp"]

_KIND = "grow-trajectory"


def grow_hash(cfg: Mapping) -> str:
    """The hash of what determines a growth run: its validated config."""
    return config_hash(cfg, _KIND)


def stamp(traj: dict, cfg: Mapping) -> dict:
    """``traj`` with its ``integrity`` entry (hash, format, version)."""
    return stamp_record(traj, grow_hash(cfg), _KIND)


def _note(text: str) -> None:
    print(f"depthcert grow: note: {text}", file=sys.stderr)


def _checkpoint(path: Path) -> Any:
    try:
        return torch.load(path, weights_only=True)   # tensors and plain values only: a crafted file runs no code
    except (RuntimeError, EOFError, OSError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError) as exc:
        raise StoredFileError(path, f"not a complete checkpoint ({first_line(exc, 120)})") from None


def read_stored(out: Path, cfg: Mapping, note: Callable[[str], None] = _note) -> tuple[dict, dict] | None:
    """``(trajectory, checkpoint)`` of ``out`` if both are readable and made by ``cfg``; else None (``note`` says why)."""
    traj_path, ck_path = out / "trajectory.json", out / "checkpoint.pt"
    if not (traj_path.is_file() and ck_path.is_file()):
        return None
    want = grow_hash(cfg)
    try:
        traj = load_json(traj_path)
        if not isinstance(traj, dict) or not isinstance(traj.get("steps"), list):
            raise StoredFileError(traj_path, "not a growth trajectory (no list of steps)")
        if record_hash(traj) != want:
            note(f"{out} holds a growth made by a different configuration: recomputing it from the start")
            return None
        ck = _checkpoint(ck_path)
        if not isinstance(ck, dict) or ck.get("config_hash") != want or not {"step", "state_dict", "insertions"} <= set(ck):
            raise StoredFileError(ck_path, "not the checkpoint of this trajectory (another hash or missing entries)")
    except StoredFileError as exc:
        note(f"{exc.key}: {exc.value}; recomputing the growth from the start")
        return None
    return traj, ck
