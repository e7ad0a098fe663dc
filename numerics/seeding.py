"""Independent random streams, one per role (teacher, reference, S, T, Monte Carlo, probe).

The data roles (samples) are named once in :mod:`numerics.roles` (THEORY §10); the other
streams here draw parameters or orders.

A certificate pays for every choice made after seeing data, so every random draw of a
study comes from a stream named by its *role*, derived from the config's seeds by
``numpy.random.SeedSequence`` with the role as spawn key -- never by adding small
integers to one seed (``seed + 1`` of one role is ``seed`` of another). Two roles, or one
role under two seeds, give unrelated streams.

Which base seed a role is derived from is data (:data:`ROLES`): roles fixed *before* the
training sample ``S`` and the test sample ``T`` are drawn (the teacher, the reference
model, the insertion features, the signal sample of ``f~_pop``, ...) derive from
``seed``; roles drawn with or after them derive from ``data_seed``. A study records the
seeds it used (:meth:`Streams.used`) and the split in its result, and
:func:`check_streams` verifies a record: every seed is the one derived for its role, and
no two streams coincide.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Mapping

import numpy as np

from numerics.roles import DATA_ROLES, MONTE_CARLO, POPULATION, PROBE, REFERENCE_SAMPLE, S, SCAN_PROBE, SIGNAL, T

__all__ = ["ROLES", "Streams", "check_streams", "derived_seed", "role_seed"]

#: role -> the config key it derives from ("seed": fixed before S and T; "data_seed": with or after).
ROLES: Mapping[str, str] = {
    "teacher": "seed",             # the synthetic task itself
    "reference_init": "seed",      # initial weights of f_old
    REFERENCE_SAMPLE: "seed",      # f_old's own training sample (independent of S, T)
    "reference_training": "seed",  # mini-batch order of f_old's training
    "insertion": "seed",           # frozen features U0, b0 of the inserted block (or insertion.seed)
    SIGNAL: "seed",                # sample for G, beta: f~_pop is fixed before S and T (Theorem 2)
    "check_population": "seed",    # large sample of exact population moments (validity checks only)
    "torch_global": "seed",        # the global torch RNG: nothing should draw from it; seeded for safety
    SCAN_PROBE: "seed",            # the run's own scan at its site (n_needed_improvable): one per setup
    S: "data_seed",                # training sample of the block
    T: "data_seed",                # test sample
    POPULATION: "data_seed",       # Monte-Carlo x-sample of Delta_R and the population risks
    "block_training": "data_seed", # mini-batch order of the block's training
    MONTE_CARLO: "data_seed",      # Rademacher sign draws and other Monte Carlo
    PROBE: "data_seed",            # probe sample of the diagnostics / saturation scores
}
if not set(DATA_ROLES) <= set(ROLES):     # one vocabulary (numerics.roles): every data role has its stream
    raise ImportError(f"data roles without a stream: {sorted(set(DATA_ROLES) - set(ROLES))}")

_MASK63 = (1 << 63) - 1
_MASK32 = (1 << 32) - 1


def _key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")


def _check_base(base_seed) -> int:
    if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)) or base_seed < 0:
        raise ValueError(f"base_seed == {base_seed!r}, must be an integer >= 0.")
    return int(base_seed)


def role_seed(role: str, base_seed: int) -> int:
    """A 63-bit seed for ``role`` derived from ``base_seed`` (``SeedSequence`` spawn key).

    Example:
        >>> role_seed("S", 0) != role_seed("T", 0), role_seed("S", 0) == role_seed("S", 0)
        (True, True)
    """
    seq = np.random.SeedSequence(entropy=_check_base(base_seed), spawn_key=(_key(role),))
    return int(seq.generate_state(1, np.uint64)[0]) & _MASK63


def derived_seed(base_seed: int, purpose: str, index: int) -> int:
    """The ``index``-th seed of ``purpose`` under ``base_seed`` (e.g. the data seed of draw ``i``).

    ``SeedSequence(base_seed, spawn_key=(purpose, index))``: independent of every role
    stream and of the other indices, never ``base_seed + index``.

    Example:
        >>> derived_seed(7, "validity/data", 0) != derived_seed(7, "validity/data", 1)
        True
    """
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
        raise ValueError(f"index == {index!r}, must be an integer >= 0.")
    seq = np.random.SeedSequence(entropy=_check_base(base_seed), spawn_key=(_key(purpose), int(index)))
    return int(seq.generate_state(1, np.uint64)[0]) & _MASK63


@dataclasses.dataclass(frozen=True)
class Streams:
    """The streams of one run: ``seed`` for roles fixed before ``S``/``T``, ``data_seed`` after.

    ``overrides`` gives a role its own base seed (e.g. the config key ``insertion.seed``
    for the ``insertion`` role); the role is still derived through :func:`role_seed`.

    Example:
        >>> st = Streams(seed=4, data_seed=7)
        >>> st.seed_for("teacher") == Streams(4, 8).seed_for("teacher")   # fixed before S, T
        True
        >>> st.seed_for("S") == Streams(4, 8).seed_for("S")
        False
    """

    seed: int
    data_seed: int
    overrides: tuple[tuple[str, int], ...] = ()

    def base(self, role: str) -> int:
        if role not in ROLES:
            raise ValueError(f"role == {role!r}, must be one of {sorted(ROLES)}.")
        own = dict(self.overrides)
        if role in own:
            return own[role]
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

    def drawn_with_data(self) -> list[str]:
        """Roles derived from ``data_seed`` (drawn with or after ``S`` and ``T``)."""
        return [r for r, base in ROLES.items() if base == "data_seed"]

    def used(self) -> dict[str, int]:
        """``{role: seed}`` for every role, plus the label-noise sub-stream of each sampling role."""
        out = {role: self.seed_for(role) for role in ROLES}
        for role in SAMPLING_ROLES:
            out[f"{role}/noise"] = noise_seed(out[role])
        return out


#: Roles whose samples carry labels: their label noise comes from a sub-stream (``noise_seed``).
SAMPLING_ROLES = ("reference_sample", "S", "T", "probe")


def noise_seed(sample_seed: int) -> int:
    """The seed of the label-noise stream of a sample drawn with ``sample_seed`` (a sub-stream)."""
    return role_seed("label_noise", sample_seed)


def check_streams(used: Mapping[str, int], streams: Streams | None = None) -> None:
    """Verify the seeds a run used: no two streams coincide, each is derived for its role.

    Args:
        used: stream name -> integer seed, as recorded by a run (:meth:`Streams.used`,
            ``result.json["streams"]``); ``"<role>/noise"`` names a label-noise sub-stream.
        streams: when given, each role's seed must be ``streams.seed_for(role)`` (derived,
            not an offset of another seed) and each sub-stream its ``noise_seed``.

    Raises:
        ValueError: the offending streams (a shared seed, or a seed not derived for its role).

    Example:
        >>> old = {"teacher": 4, "S": 6, "T": 7, "population": 8, "block_training": 4}   # seed + k
        >>> check_streams(old)
        Traceback (most recent call last):
        ...
        ValueError: streams ['block_training', 'teacher'] share the seed 4: two roles must never share a stream.
        >>> check_streams(Streams(4, 7).used(), Streams(4, 7))
    """
    by_seed: dict[int, list[str]] = {}
    for name, value in used.items():
        by_seed.setdefault(int(value) & _MASK32, []).append(name)   # torch's CPU generator reads 32 bits
    shared = sorted((sorted(names), value) for value, names in by_seed.items() if len(names) > 1)
    if shared:
        names, value = shared[0]
        seeds = sorted({int(used[n]) for n in names})
        what = (f"share the seed {seeds[0]}" if len(seeds) == 1 else
                f"have seeds {seeds} equal in their low 32 bits (all torch's CPU generator reads)")
        raise ValueError(f"streams {names} {what}: two roles must never share a stream.")
    if streams is None:
        return
    for name, value in sorted(used.items()):
        role, _, sub = name.partition("/")
        expect = streams.seed_for(role) if not sub else noise_seed(streams.seed_for(role))
        if int(value) != expect:
            raise ValueError(f"stream {name!r} used the seed {value}, must be the one derived for its role "
                             f"({expect}): seeds are derived per role, never by offsets.")
