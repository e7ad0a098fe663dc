"""Role samples (THEORY §10): *signal*, ``S``, ``T``, independent of each other; checked disjoint.

The role names are the project's one vocabulary (:mod:`numerics.roles`): :data:`CERTIFICATE_ROLES`
are the samples :func:`depthcert.api.certify` asks for.

The i.i.d. unit is the sample. Two roles that share a sample (an identical ``(x, y)`` row)
are not independent; :func:`check_disjoint` refuses them. **Exact**: a 64-bit hash of each
row's bytes (vectorised over samples, every word mixed by splitmix64's finaliser) only
pre-filters; every pair of rows with equal hashes is then compared byte for byte, so a hash
collision can neither refuse disjoint data nor accept overlapping data. Rows are compared in
one dtype per kind (floating as float64, integers as int64: one sample given with int32 labels
in one role and int64 in another is the same row).
"""
from __future__ import annotations

import numpy as np
import torch

from numerics.user_network._data import DataStream
from numerics.roles import DATA_ROLES, S, SIGNAL, T

__all__ = ["CERTIFICATE_ROLES", "check_disjoint", "row_hashes", "shared_rows"]

#: The samples a user's certificate needs, by data role (THEORY §10).
CERTIFICATE_ROLES = (SIGNAL, S, T)

_PRIME = np.uint64(0x100000001B3)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _words(t: torch.Tensor) -> np.ndarray:
    """``(n, w)`` uint64 words of each row's bytes (zero-padded)."""
    a = np.ascontiguousarray(t.detach().cpu().reshape(t.shape[0], -1).numpy())
    b = a.view(np.uint8).reshape(t.shape[0], -1)
    pad = (-b.shape[1]) % 8
    if pad:
        b = np.concatenate([b, np.zeros((b.shape[0], pad), dtype=np.uint8)], axis=1)
    return b.view(np.uint64)


def _row_words(x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """``(n, w)`` words of the rows ``(x_i, y_i)`` in the canonical dtypes (module docstring)."""
    y = y.double() if y.is_floating_point() else y.long()
    x = x.double() if x.is_floating_point() else x.long()
    return np.concatenate([_words(x), _words(y)], axis=1)


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit reaches every output bit (a plain multiply moves bits up only)."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def row_hashes(stream: DataStream) -> np.ndarray:
    """``(n,)`` uint64 hashes of the ``(x, y)`` rows of ``stream``, in order (a pre-filter only)."""
    out = []
    for x, y in stream:
        words = _row_words(x, y)
        h = np.full(words.shape[0], np.uint64(0xCBF29CE484222325))
        with np.errstate(over="ignore"):
            for col in words.T:          # a loop over the words of a row, vectorised over samples
                h = _mix((h ^ col) * _PRIME)
        out.append(h)
    return np.concatenate(out) if out else np.zeros(0, dtype=np.uint64)


def _gather(stream: DataStream, idx: np.ndarray) -> np.ndarray:
    """The words of the rows ``idx`` of ``stream`` (in the order of ``idx``), one pass over the stream."""
    order = np.argsort(idx, kind="stable")
    wanted, rows, seen = idx[order], [], 0
    for x, y in stream:
        lo, hi = np.searchsorted(wanted, [seen, seen + x.shape[0]])
        if hi > lo:
            local = torch.as_tensor(wanted[lo:hi] - seen, device=x.device)
            rows.append(_row_words(x[local], y[local]))
        seen += x.shape[0]
    words = np.concatenate(rows)
    out = np.empty_like(words)
    out[order] = words
    return out


def _candidate_pairs(ha: np.ndarray, hb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every index pair ``(i, j)`` with ``ha[i] == hb[j]`` (vectorised)."""
    ob = np.argsort(hb, kind="stable")
    sb = hb[ob]
    lo, hi = np.searchsorted(sb, ha, "left"), np.searchsorted(sb, ha, "right")
    counts = hi - lo
    ia = np.repeat(np.arange(ha.size), counts)
    offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return ia, ob[np.repeat(lo, counts) + offsets]


def shared_rows(a: DataStream, b: DataStream, ha=None, hb=None) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)``: the index pairs with ``a``'s row ``i`` byte-identical to ``b``'s row ``j``.

    Hashes pre-filter (``ha``, ``hb``: :func:`row_hashes`, computed if None); each candidate
    pair is compared exactly.
    """
    ha = row_hashes(a) if ha is None else ha
    hb = row_hashes(b) if hb is None else hb
    ia, ib = _candidate_pairs(ha, hb)
    if not ia.size:
        return ia, ib
    wa, wb = _gather(a, ia), _gather(b, ib)
    if wa.shape[1] != wb.shape[1]:   # rows of different sizes are never identical
        return ia[:0], ib[:0]
    same = np.all(wa == wb, axis=1)
    return ia[same], ib[same]


def check_disjoint(roles: dict[str, DataStream], hashes: dict | None = None) -> dict:
    """Raise ValueError if two roles share an identical row (names both roles, the count and both indices).

    ``hashes``: row hashes of some of the roles, from an earlier call (not read again). Returns every role's row
    hashes, for a later check that adds a role.

    Example:
        >>> from numerics.user_network._data import as_stream
        >>> m = torch.nn.Linear(1, 1)
        >>> a = as_stream((torch.arange(4.)[:, None], torch.zeros(4)), "S", m)
        >>> b = as_stream((torch.arange(3., 6.)[:, None], torch.zeros(3)), "T", m)
        >>> check_disjoint({"S": a, "T": b})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: S and T share 1 identical (x, y) rows (e.g. S[3] == T[0], compared exactly), must be ...
    """
    unknown = [k for k in roles if k not in DATA_ROLES]
    if unknown:
        raise ValueError(f"role == {unknown[0]!r}, must be one of {list(DATA_ROLES)} (numerics.roles).")
    hashes = {k: hashes[k] if hashes and k in hashes else row_hashes(v) for k, v in roles.items()}
    names = list(roles)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ia, ib = shared_rows(roles[a], roles[b], hashes[a], hashes[b])
            if ia.size:
                k = int(np.argmin(ib))
                raise ValueError(f"{a} and {b} share {np.unique(ib).size} identical (x, y) rows (e.g. {a}[{int(ia[k])}] "
                                 f"== {b}[{int(ib[k])}], compared exactly), must be disjoint samples "
                                 "(THEORY §10: independent roles).")
    return hashes
