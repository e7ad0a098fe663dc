"""Role samples (THEORY §10): *signal*, ``S``, ``T``, independent of each other; checked disjoint.

The role names are the project's one vocabulary (:mod:`numerics.roles`): :data:`CERTIFICATE_ROLES`
are the samples :func:`depthcert.api.certify` asks for.

The i.i.d. unit is the sample. Two roles that share a sample (an identical ``(x, y)`` row)
are not independent; :func:`check_disjoint` refuses them. Rows are compared by a 64-bit hash
of their bytes (vectorised over samples; **Choice**: a hash collision could only refuse
disjoint data, never accept overlapping data).
"""
from __future__ import annotations

import numpy as np
import torch

from depthcert.api._data import DataStream
from numerics.roles import DATA_ROLES, S, SIGNAL, T

__all__ = ["CERTIFICATE_ROLES", "check_disjoint", "row_hashes"]

#: The samples a user's certificate needs, by data role (THEORY §10).
CERTIFICATE_ROLES = (SIGNAL, S, T)

_PRIME = np.uint64(0x100000001B3)


def _words(t: torch.Tensor) -> np.ndarray:
    """``(n, w)`` uint64 words of each row's bytes (zero-padded)."""
    a = np.ascontiguousarray(t.detach().cpu().reshape(t.shape[0], -1).numpy())
    b = a.view(np.uint8).reshape(t.shape[0], -1)
    pad = (-b.shape[1]) % 8
    if pad:
        b = np.concatenate([b, np.zeros((b.shape[0], pad), dtype=np.uint8)], axis=1)
    return b.view(np.uint64)


def row_hashes(stream: DataStream) -> np.ndarray:
    """``(n,)`` uint64 hashes of the ``(x, y)`` rows of ``stream``, in order (FNV-style over words)."""
    out = []
    for x, y in stream:
        # one dtype per kind, so that one sample given as int32 labels in one role and int64 in another matches
        y = y.double() if y.is_floating_point() else y.long()
        words = np.concatenate([_words(x.double() if x.is_floating_point() else x), _words(y)], axis=1)
        h = np.full(words.shape[0], np.uint64(0xCBF29CE484222325))
        with np.errstate(over="ignore"):
            for col in words.T:          # a loop over the words of a row, vectorised over samples
                h = (h ^ col) * _PRIME
                h ^= h >> np.uint64(29)  # fold the high bits down: a multiply only carries upwards, so words
                #                          with zero low bits (floats k/16, as digits' pixels) collided
        out.append(h)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def check_disjoint(roles: dict[str, DataStream]) -> None:
    """Raise ValueError if two roles share an identical row (names both roles, the count and a position).

    Example:
        >>> from depthcert.api._data import as_stream
        >>> m = torch.nn.Linear(1, 1)
        >>> a = as_stream((torch.arange(4.)[:, None], torch.zeros(4)), "S", m)
        >>> b = as_stream((torch.arange(3., 6.)[:, None], torch.zeros(3)), "T", m)
        >>> check_disjoint({"S": a, "T": b})
        Traceback (most recent call last):
        ...
        ValueError: S and T share 1 identical (x, y) rows (e.g. T[0]), must be disjoint samples (THEORY §10: independent roles).
    """
    unknown = [k for k in roles if k not in DATA_ROLES]
    if unknown:
        raise ValueError(f"role == {unknown[0]!r}, must be one of {list(DATA_ROLES)} (numerics.roles).")
    hashes = {k: row_hashes(v) for k, v in roles.items()}
    names = list(roles)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common, _, pos = np.intersect1d(hashes[a], hashes[b], return_indices=True)
            if common.size:
                raise ValueError(f"{a} and {b} share {common.size} identical (x, y) rows (e.g. {b}[{int(pos.min())}]), "
                                 "must be disjoint samples (THEORY §10: independent roles).")
