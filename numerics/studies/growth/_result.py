"""The growth study's typed result (:func:`numerics.studies.growth.run`), its writer and loader."""
from __future__ import annotations

import copy
import dataclasses
import types
from pathlib import Path
from typing import Any, Mapping

from plumbing.results import StudyResult

__all__ = ["GrowthResult", "load", "write"]

TRAJECTORY = "trajectory.json"


@dataclasses.dataclass(frozen=True)
class GrowthResult(StudyResult):
    """A growth trajectory (``trajectory.json``) as a typed record (also a read-only mapping of it).

    Attributes:
        stopped_because: one of :data:`numerics.studies.growth.STOP_REASONS`.
        stop_depth: the depth growth stopped at; inserted: blocks inserted.
        L_test: the test loss of every step's network, in order.
        data: the whole trajectory (``to_dict()``).

    **Not** :class:`depthcert.GrowthResult` (the answer of :func:`depthcert.grow`: the grown network
    itself, a ``pandas`` trajectory and the scans' reports): this is a stored file's content, written and
    read back without the network (:func:`write`, :func:`load`), like every study result.
    """

    stopped_because: str = ""
    stop_depth: int = 0
    inserted: int = 0
    L_test: tuple = ()

    @classmethod
    def from_dict(cls, content: Mapping[str, Any]) -> "GrowthResult":
        """The typed record of a trajectory.

        Raises:
            KeyError: not a growth trajectory.
        """
        steps = content["steps"]
        return cls(data=types.MappingProxyType(copy.deepcopy(dict(content))), stopped_because=content["stopped_because"],
                   stop_depth=content["stop_depth"], inserted=len(content["insertions"]),
                   L_test=tuple(s["L_test"] for s in steps))


def write(result: GrowthResult, out_dir: str | Path) -> Path:
    """``trajectory.json`` of ``result`` (atomic) in ``out_dir``."""
    from plumbing.io import atomic_write_json, check_writable_dir

    return atomic_write_json(check_writable_dir(out_dir) / TRAJECTORY, result.to_dict())


def load(path: str | Path) -> GrowthResult:
    """The :class:`GrowthResult` of a stored growth folder (or its ``trajectory.json``).

    Raises:
        FileNotFoundError, StoredFileError: no trajectory there, or an incomplete one (named).
    """
    from plumbing.store import load_result

    return GrowthResult.from_dict(load_result(path, TRAJECTORY))
