"""Independent random streams, one per role (teacher, reference, S, T, Monte Carlo, probe).

A certificate pays for every choice made after seeing data, so every random draw of a
study comes from a stream named by its *role*, derived from the config's seeds by
``numpy.random.SeedSequence`` with the role as spawn key -- never by adding small
integers to one seed (``seed + 1`` of one role is ``seed`` of another). Two roles, or one
role under two seeds, give unrelated streams.

Which base seed a role is derived from is data (:data:`ROLES`): roles fixed *before* the
training sample ``S`` and the test sample ``T`` are drawn (the teacher, the reference
model, the insertion features, ...) derive from ``seed``; roles drawn with or after them
derive from ``data_seed``. A study records this split in its result.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Mapping

import numpy as np

__all__ = ["ROLES", "Streams", "role_seed"]

#: role -> the config key it derives from ("seed": fixed before S and T; "data_seed": with or after).
ROLES: Mapping[str, str] = {
    "teacher": "seed",             # the synthetic task itself
    "reference_init": "seed",      # initial weights of f_old
    "reference_sample": "seed",    # f_old's own training sample (independent of S, T)
    "reference_training": "seed",  # mini-batch order of f_old's training
    "insertion": "seed",           # frozen features U0, b0 of the inserted block
    "S": "data_seed",              # training sample of the block
    "T": "data_seed",              # test sample
    "population": "data_seed",     # Monte-Carlo x-sample of population risks
    "signal": "data_seed",         # independent sample for G, beta (f~_pop)
    "block_training": "data_seed", # mini-batch order of the block's training
    "monte_carlo": "data_seed",    # Rademacher sign draws and other Monte Carlo
    "probe": "data_seed",          # probe sample of the diagnostics / saturation scores
}

_MASK63 = (1 << 63) - 1


def _role_key(role: str) -> int:
    return int.from_bytes(hashlib.sha256(role.encode("utf-8")).digest()[:8], "little")


def role_seed(role: str, base_seed: int) -> int:
    """A 63-bit seed for ``role`` derived from ``base_seed`` (``SeedSequence`` spawn key).

    Example:
        >>> role_seed("S", 0) != role_seed("T", 0), role_seed("S", 0) == role_seed("S", 0)
        (True, True)
    """
    if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)) or base_seed < 0:
        raise ValueError(f"base_seed == {base_seed!r}, must be an integer >= 0.")
    seq = np.random.SeedSequence(entropy=int(base_seed), spawn_key=(_role_key(role),))
    return int(seq.generate_state(1, np.uint64)[0]) & _MASK63


@dataclasses.dataclass(frozen=True)
class Streams:
    """The streams of one run: ``seed`` for roles fixed before ``S``/``T``, ``data_seed`` after.

    Example:
        >>> st = Streams(seed=4, data_seed=7)
        >>> st.seed_for("teacher") == Streams(4, 8).seed_for("teacher")   # fixed before S, T
        True
        >>> st.seed_for("S") == Streams(4, 8).seed_for("S")
        False
    """

    seed: int
    data_seed: int

    def base(self, role: str) -> int:
        if role not in ROLES:
            raise ValueError(f"role == {role!r}, must be one of {sorted(ROLES)}.")
        return self.seed if ROLES[role] == "seed" else self.data_seed

    def seed_for(self, role: str) -> int:
        """The integer seed of ``role`` (for APIs that take ``seed=``)."""
        return role_seed(role, self.base(role))

    def torch(self, role: str):
        """A ``torch.Generator`` seeded for ``role``."""
        import torch

        return torch.Generator().manual_seed(self.seed_for(role))

    def numpy(self, role: str) -> np.random.Generator:
        """A ``numpy.random.Generator`` seeded for ``role``."""
        return np.random.default_rng(self.seed_for(role))

    def fixed_before_data(self) -> list[str]:
        """Roles derived from ``seed`` (fixed before ``S`` and ``T`` are drawn)."""
        return [r for r, base in ROLES.items() if base == "seed"]
