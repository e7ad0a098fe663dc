"""Stage 2's output, shared by the readout draw (:mod:`._draw`) and the full family (:mod:`._family`).

Its own module so that neither imports the other for it (no circle).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import torch

__all__ = ["Selection"]


@dataclasses.dataclass(frozen=True)
class Selection:
    """Stage 2 output: ``f_new`` of each draw and what (C2) compared."""

    V_new: torch.Tensor        # (B, d, r)
    returned: tuple[str, ...]  # "trained" | "jumpboard_0" (f~_S) | "jumpboard_1" (f~_pop)
    R_S: Mapping[str, np.ndarray]   # candidate -> (B,): old, new, jump_S, jump_pop, trained
    train: object              # numerics.block_training.BlockTrainResult
    moments_S: tuple | None = None  # ReadoutMoments of each draw's S (exact class)
    blocks_new: tuple | None = None  # full family: the trained block of each draw where it won (C2), else None
