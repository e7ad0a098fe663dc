"""One site's statistics from every rank's shard: equal to one :class:`SiteAccumulator` over their union.

The union of the shards, in rank order, is the probe; its ``n_chunks`` chunks are fixed global slices
(the ends of :class:`~numerics.estimators.SiteAccumulator`), so the sequential test's order never depends on
which rank finishes first. A rank reads its shard once (:meth:`ShardSums.update`, with the global index of
each batch's first sample) and keeps

* the sums of ``SiteAccumulator`` (``sum X_i``, ``sum phi phi^T``, ``E[m m^T]``'s sum, ``sum ||m_i||^2``,
  ``sum ||X_i||^2``) and its maxima, in float64, cut at the global chunk ends exactly as the
  one-process accumulator cuts them;
* the same sums over the samples before each chunk whose bet direction is refreshed (after 1, 2, 4, ...
  chunks): the direction of chunk ``c`` depends on every earlier shard, so it is known only after the
  reduction;
* the per-sample factors of the betting scalars ``Z_i = <X_i, w_c>`` (``X_i``, or ``m_i`` and ``phi_i``
  when smaller), while they fit ``buffer_bytes``; beyond that a second pass over the shard recomputes them
  (:func:`second_pass_parts`).

Where a rank boundary cuts one of the one-process scan's parts, the next rank continues that part's
subsample of ``E[m m^T]`` (its first ``_E_ROWS`` token rows) where the previous rank stopped.
:func:`reduce_sums` all-reduces the sums (sum) and maxima (max), :func:`directions` computes every chunk's
direction from the global prefix sums, and :func:`combine` gathers the ``Z_i`` of all ranks in rank order,
replays the bets (bound ``b_c``, aGRAPA ``lambda_c``, violations) as the one-process accumulator does and
returns that accumulator's state.
"""
from __future__ import annotations

import torch

from numerics.distributed import _comm
from numerics.estimators import SiteAccumulator
from numerics.estimators._site_stats import _E_ROWS, _bet_direction, _flat, _per_sample_X, _token_gram, _x_sq_norms

__all__ = ["ShardSums", "combine"]

F64 = torch.float64


class ShardSums:
    """This rank's part of one site's statistics (global probe of ``n_total`` samples, ``n_chunks`` chunks)."""

    def __init__(self, d: int, r: int, n_total: int, n_chunks: int = 16, b: float | None = None,
                 device=None, buffer_bytes: int = 0, batch_size: int | None = None):
        self.ref = SiteAccumulator(d, r, n_total, n_chunks, b, device=device)   # the global chunk ends and rule
        self.d, self.r, self.device, self.batch_size = d, r, device, batch_size
        ends = self.ref.ends
        # refresh points: the chunk counts after which the direction is (re)computed, before the last chunk
        self.refresh = [c for c in range(1, len(ends)) if c & (c - 1) == 0]
        k = len(self.refresh)
        self.vec = torch.zeros(self._width() * (1 + k), dtype=F64, device=device)   # totals, then one row per refresh
        self.maxima = torch.zeros(4, dtype=F64, device=device)   # ag_max, x_max, phi_max, x_max of chunk 0
        self.n = 0
        self.budget = int(buffer_bytes)
        self.kept: list | None = []   # (chunk, X or (m, phi)) per part, None once over budget
        self._bytes = 0

    def _width(self) -> int:
        return self.d * self.r + self.r * self.r + self.d * self.d + 2   # G, S, E, m_sq, x_sq

    def chunk_of(self, i: int) -> int:
        """The global chunk of global sample ``i``."""
        return next(c for c, e in enumerate(self.ref.ends) if i < e)

    def update(self, m: torch.Tensor, phi: torch.Tensor, first: int) -> None:
        """Add samples ``first, first + 1, ...`` of the union: ``m (n, T, d)``, ``phi (n, T, r)`` (cut at chunk ends)."""
        i = 0
        while i < m.shape[0]:
            c = self.chunk_of(first + i)
            j = min(m.shape[0], i + self.ref.ends[c] - (first + i))
            self._part(m[i:j], phi[i:j], c, self._e_rows(first + i, c, m.shape[1]))
            i = j

    def _e_rows(self, g: int, c: int, T: int) -> int | None:
        """The token rows of ``E[m m^T]``'s subsample left to a part starting at global sample ``g`` in chunk ``c``:
        the one-process scan takes the first ``_E_ROWS`` rows of its part (from the later of the batch's and
        the chunk's start), which a rank boundary may cut in two (None: every row, ``d <= _E_ROWS``)."""
        if self.d <= _E_ROWS:
            return None
        start = self.ref.ends[c - 1] if c else 0
        if self.batch_size:
            start = max(start, g - g % self.batch_size)
        return max(0, _E_ROWS - (g - start) * T)

    @torch.no_grad()
    def _part(self, m, phi, c: int, e_rows: int | None) -> None:
        """The sums of ``SiteAccumulator._update_part`` on one part of chunk ``c`` (same arithmetic)."""
        n, T = m.shape[:2]
        X = _per_sample_X(m, phi)
        flat_phi = phi.reshape(n * T, -1)
        G = (X.sum(dim=0) if X is not None else _flat(m).T @ flat_phi).to(F64)
        S = (flat_phi.T @ flat_phi).to(F64)
        E = _token_gram(m, e_rows).to(F64)
        m_norm2 = m.pow(2).sum(dim=(1, 2)).to(F64)
        x_norm2 = (X.pow(2).sum(dim=(1, 2)) if X is not None else _x_sq_norms(m, phi)).to(F64)
        row = torch.cat([G.reshape(-1), S.reshape(-1), E.reshape(-1), m_norm2.sum().reshape(1), x_norm2.sum().reshape(1)])
        w = row.numel()
        self.vec[:w] += row
        for k, p in enumerate(self.refresh):   # prefix sums before chunk p (chunks 0 .. p-1)
            if c < p:
                self.vec[w * (k + 1): w * (k + 2)] += row
        x_max = x_norm2.max().clamp(min=0).sqrt()
        new = torch.stack([m_norm2.max().sqrt(), x_max, phi.pow(2).sum(dim=(1, 2)).max().sqrt(),
                           x_max if c == 0 else torch.zeros((), dtype=F64, device=x_max.device)])
        self.maxima = torch.maximum(self.maxima, new.to(self.maxima.device))
        self.n += n
        if c > 0:
            self._keep(c, X, m, phi)

    def _keep(self, c: int, X, m, phi) -> None:
        if self.kept is None:
            return
        item = X if X is not None else (m, phi)
        self._bytes += sum(t.numel() * t.element_size() for t in ((item,) if X is not None else item))
        if self._bytes > self.budget:
            self.kept = None   # over budget: the bets come from a second pass
        else:
            self.kept.append((c, item))

    @property
    def needs_second_pass(self) -> bool:
        """True when the bets' factors did not fit ``buffer_bytes`` (then the bets come from a second pass)."""
        return self.kept is None


def _z(item, D: torch.Tensor) -> torch.Tensor:
    """``Z_i = <X_i, D>`` as ``SiteAccumulator._bet`` computes it (float64)."""
    if isinstance(item, tuple):
        m, phi = item
        return ((m @ D.to(m.dtype)) * phi).sum(dim=(1, 2)).to(F64)
    return (item * D.to(item.dtype)).sum(dim=(1, 2)).to(F64)


def bet_parts(sums: ShardSums, parts, directions: dict) -> torch.Tensor:
    """This rank's ``Z_i`` of chunks ``>= 1``, in its order: ``parts`` yields ``(chunk, X or (m, phi))``."""
    zs = [_z(item, directions[c]) for c, item in parts]
    return torch.cat(zs) if zs else torch.zeros(0, dtype=F64, device=sums.device)


def second_pass_parts(sums: ShardSums, m: torch.Tensor, phi: torch.Tensor, first: int):
    """``(chunk, factors)`` of one batch on a second pass (cut at chunk ends, chunk 0 left out)."""
    i = 0
    while i < m.shape[0]:
        c = sums.chunk_of(first + i)
        j = min(m.shape[0], i + sums.ref.ends[c] - (first + i))
        if c > 0:
            X = _per_sample_X(m[i:j], phi[i:j])
            yield c, (X if X is not None else (m[i:j], phi[i:j]))
        i = j


def reduce_sums(sums: ShardSums, device) -> tuple[torch.Tensor, torch.Tensor, int]:
    """``(summed vec, maxima, n)`` over the ranks (one all-reduce each)."""
    vec = _comm.all_sum(sums.vec, device)
    maxima = _comm.all_max(sums.maxima, device)
    n = int(_comm.all_sum(torch.tensor([float(sums.n)], dtype=F64), device)[0])
    return vec, maxima, n


def _unpack(row: torch.Tensor, d: int, r: int):
    G = row[: d * r].reshape(d, r)
    S = row[d * r: d * r + r * r].reshape(r, r)
    E = row[d * r + r * r: d * r + r * r + d * d].reshape(d, d)
    return G, S, E, float(row[-2]), float(row[-1])


def directions(sums: ShardSums, vec: torch.Tensor) -> dict:
    """``{chunk: w_c}`` for every chunk ``>= 1``: refreshed after 1, 2, 4, ... chunks from the global prefix sums."""
    w, out, D = sums._width(), {}, None
    refresh = dict(zip(sums.refresh, range(len(sums.refresh))))
    for c in range(1, len(sums.ref.ends)):
        if c in refresh:
            k = refresh[c]
            G, S, E, _, _ = _unpack(vec[w * (k + 1): w * (k + 2)], sums.d, sums.r)
            D = _bet_direction(G, S, E, sums.ref.rule)
            norm = float(D.norm())
            D = D / norm if norm > 0 else torch.zeros_like(D)
        out[c] = D
    return out


def replay(acc: SiteAccumulator, z: torch.Tensor, dirs: dict, chunk0: tuple[float, float, float]) -> None:
    """Set ``acc``'s bets from the union's ``Z_i`` (chunks ``>= 1``, in order) as its own updates would
    (``SiteAccumulator._next_chunk``); ``chunk0``: ``(<G_sum, w_1>, sum ||X_i||^2, max ||X_i||)`` of chunk 0."""
    ends, zs, lams = acc.ends, [], []
    for c in range(1, len(ends)):
        acc.direction = dirs[c]
        seen = torch.cat(zs) if zs else None
        if acc.b_prior is not None:
            acc.b_bet = acc.b_prior
        else:
            acc.b_bet = 2.0 * (acc._z_max if zs else chunk0[2])
        if zs:
            mu, second = float(seen.mean()), float(seen.pow(2).mean())
        else:
            mu, second = chunk0[0] / ends[0], chunk0[1] / ends[0]
        cap = 1.0 / (2.0 * acc.b_bet) if acc.b_bet > 0 else 0.0
        acc.lam = min(max(mu / second, 0.0), cap) if second > 0 else 0.0
        zc = z[ends[c - 1] - ends[0]: ends[c] - ends[0]]
        acc.b_violations += int((zc.abs() > acc.b_bet).sum())
        zs.append(zc)
        lams.append(torch.full_like(zc, acc.lam))
        acc._z_max = max(acc._z_max, float(zc.abs().max())) if zc.numel() else acc._z_max
    acc._z, acc._lams = zs, lams


def combine(sums: ShardSums, reduced: tuple, dirs: dict, z_local: torch.Tensor, device) -> SiteAccumulator:
    """The one-process :class:`SiteAccumulator` of the union of every rank's shard (a collective call).

    Args:
        sums: this rank's :class:`ShardSums` after its pass.
        reduced: :func:`reduce_sums` of ``sums``; dirs: :func:`directions` from it.
        z_local: this rank's ``Z_i`` of chunks ``>= 1``, in its order (:func:`bet_parts`).
        device: the collectives' device (:func:`numerics.distributed.comm_device`).
    """
    vec, maxima, n = reduced
    acc = sums.ref
    if n != acc.n_total:
        raise RuntimeError(f"the ranks' shards hold {n} probe samples in all, expected {acc.n_total}.")
    d, r, w = sums.d, sums.r, sums._width()
    G, S, E, m_sq, x_sq = _unpack(vec[:w], d, r)
    acc.G_sum, acc.S_sum, acc.E_sum, acc.m_sq, acc.x_sq, acc.n = G.clone(), S.clone(), E.clone(), m_sq, x_sq, n
    acc.ag_max, acc.x_max, acc.phi_max = (float(v) for v in maxima[:3])
    z = _comm.all_gather_cat(z_local, device).to(acc.G_sum.device)
    if z.numel() != n - acc.ends[0]:
        raise RuntimeError(f"gathered {z.numel()} betting scalars, expected {n - acc.ends[0]}.")
    if len(acc.ends) > 1:
        G1, _, _, _, x_sq1 = _unpack(vec[w: 2 * w], d, r)
        replay(acc, z, dirs, (float((G1 * dirs[1]).sum()), x_sq1, float(maxima[3])))
    return acc
