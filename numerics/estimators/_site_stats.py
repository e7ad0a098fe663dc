"""Streaming sufficient statistics of one site and the saturation tests on them (THEORY §8).

Per probe sample ``i`` with activation gradients ``m_i`` (tokens ``(T, d)``) and features
``phi_i`` (``(T, r)``), ``X_i = sum_t m_it phi_it^T``. :class:`SiteAccumulator` keeps, over
batches, ``sum_i X_i`` (``d x r``), ``sum_i sum_t phi phi^T`` (``r x r``), ``sum_i ||X_i||^2``,
``sum_i ||m_i||^2`` and maxima: memory ``O(d r + r^2)``, never ``O(n d)``. Batch sums are
exact, so any batching gives the one-batch numbers (up to float rounding).

Two tests of ``H0: G = E[X] = 0`` (saturation of the protocol block, THEORY §8):

* :func:`hoeffding_test` -- the U-statistic ``S_hat`` against
  ``t = b^2 sqrt(2 ln(2/level) / floor(n/2))`` (Hoeffding's U-statistic inequality, valid for
  ``||X_i|| <= b``, powerless: ``t`` does not see the variance and scales with ``b^2``).
* :func:`adaptive_test` -- **Choice** (ours): split-sample empirical Bernstein. The first
  half ``A`` of the probe fixes a unit direction ``w = G_A / ||G_A||``; on the second half
  ``B`` the scalars ``Z_i = <X_i, w>`` are i.i.d. given ``A`` with mean ``<G, w>``, which is 0
  under ``H0`` and lie in ``[-b, b]``. Maurer--Pontil's empirical Bernstein bound (Theorem 4,
  one-sided, ``bounds.confidence.empirical_bernstein_lower``) gives a lower confidence
  bound on ``<G, w> <= ||G||``; the test rejects iff it is > 0. Finite-sample level
  ``<= level`` whenever ``b`` really bounds ``||X_i||`` (with ``b`` the sample maximum -- no
  data-free bound exists for a general network -- the level is a plug-in, flagged
  ``b_from_data``). Its threshold scales with the standard deviation of ``Z``, not ``b^2``.

Both report ``n_needed``: the probe size at which a site with ``||G||^2 = g`` (e.g. ``2 beta
Delta`` for a target gain ``Delta``, Theorem 1) would be detected when the statistic
equals its expectation (for the adaptive test: ``w`` aligned with ``G``, ``Var(Z)`` as
measured) -- a planning number, not a guarantee.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from bounds.confidence import empirical_bernstein_lower

__all__ = ["SiteAccumulator", "SiteTest", "adaptive_test", "hoeffding_test", "n_needed_adaptive",
           "n_needed_hoeffding", "projection_scores"]

F64 = torch.float64


class SiteAccumulator:
    """Running sums of one site over probe batches (phase ``"A"`` then ``"B"``).

    Example:
        >>> acc = SiteAccumulator(d=2, r=1)
        >>> m, phi = torch.ones(4, 1, 2, dtype=F64), torch.ones(4, 1, 1, dtype=F64)
        >>> acc.update(m[:2], phi[:2]); acc.close_split(); acc.update(m[2:], phi[2:], "B")
        >>> acc.n, acc.G.tolist(), round(acc.z_mean, 12)
        (4, [[1.0], [1.0]], 1.414213562373)
    """

    def __init__(self, d: int, r: int):
        self.d, self.r = d, r
        self.n = self.n_A = self.n_B = 0
        self.G_sum = torch.zeros(d, r, dtype=F64)
        self.S_sum = torch.zeros(r, r, dtype=F64)
        self.m_sq = self.x_sq = self.x_max = self.ag_max = self.phi_max = 0.0
        self.m_bar_sq: float | None = None
        self.direction: torch.Tensor | None = None
        self.z_sum = self.z_sq = self.z_max = 0.0

    @torch.no_grad()
    def update(self, m: torch.Tensor, phi: torch.Tensor, part: str = "A") -> None:
        """Add a batch: ``m (n, T, d)`` activation gradients, ``phi (n, T, r)`` features."""
        if m.dim() != 3 or phi.dim() != 3 or m.shape[:2] != phi.shape[:2]:
            raise ValueError(f"expected m (n, T, d) and phi (n, T, r) with the same n, T, "
                             f"got {tuple(m.shape)} and {tuple(phi.shape)}.")
        n, T = m.shape[:2]
        flat_m, flat_phi = m.reshape(n * T, -1), phi.reshape(n * T, -1)
        self.G_sum += (flat_m.T @ flat_phi).to(F64)
        self.S_sum += (flat_phi.T @ flat_phi).to(F64)
        m_norm2 = m.pow(2).sum(dim=(1, 2)).to(F64)
        x_norm2 = _x_sq_norms(m, phi).to(F64)
        self.n += n
        self.m_sq += float(m_norm2.sum())
        self.x_sq += float(x_norm2.sum())
        self.ag_max = max(self.ag_max, float(m_norm2.max().sqrt()))
        self.x_max = max(self.x_max, float(x_norm2.max().clamp(min=0).sqrt()))
        self.phi_max = max(self.phi_max, float(phi.pow(2).sum(dim=(1, 2)).max().sqrt()))
        if part == "B":
            if self.direction is None:
                raise RuntimeError("close_split() must be called before phase B.")
            z = ((m @ self.direction.to(m.dtype)) * phi).sum(dim=(1, 2)).to(F64)
            self.n_B += n
            self.z_sum += float(z.sum())
            self.z_sq += float(z.pow(2).sum())
            self.z_max = max(self.z_max, float(z.abs().max()))

    def add_m_bar(self, m_bar: torch.Tensor) -> None:
        """Accumulate ``||m_bar_i||^2`` (conditional gradients, for the realisability ratio)."""
        self.m_bar_sq = (self.m_bar_sq or 0.0) + float(m_bar.pow(2).sum().to(F64))

    def close_split(self) -> None:
        """Fix ``w = G_A / ||G_A||`` from the samples seen so far (phase A)."""
        self.n_A = self.n
        norm = float(self.G_sum.norm())
        self.direction = self.G_sum / norm if norm > 0 else torch.zeros_like(self.G_sum)

    @property
    def G(self) -> torch.Tensor:
        """``G_hat = (1/n) sum_i X_i``, ``(d, r)``."""
        return self.G_sum / max(self.n, 1)

    @property
    def Sigma(self) -> torch.Tensor:
        """``Sigma_phi_hat = (1/n) sum_i sum_t phi phi^T``, ``(r, r)``."""
        return self.S_sum / max(self.n, 1)

    @property
    def u_statistic(self) -> float:
        """Unbiased ``S_hat = (||sum X_i||^2 - sum ||X_i||^2) / (n (n-1))`` of ``||G||_F^2``."""
        n = self.n
        return float((self.G_sum.pow(2).sum() - self.x_sq) / (n * (n - 1))) if n > 1 else math.nan

    @property
    def z_mean(self) -> float:
        return self.z_sum / self.n_B if self.n_B else math.nan

    @property
    def z_var(self) -> float:
        """Unbiased sample variance of ``Z`` on phase B."""
        nb = self.n_B
        return max((self.z_sq - nb * self.z_mean**2) / (nb - 1), 0.0) if nb > 1 else math.nan


def _x_sq_norms(m: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    """``||X_i||_F^2`` with ``X_i = sum_t m_it phi_it^T``, never forming ``X_i`` unless cheaper."""
    n, T, d = m.shape
    r = phi.shape[2]
    if T == 1:
        return m.pow(2).sum(dim=(1, 2)) * phi.pow(2).sum(dim=(1, 2))
    if T * (d + r) <= d * r:   # Gram form: sum_{t,s} (m_t . m_s)(phi_t . phi_s)
        return ((m @ m.transpose(1, 2)) * (phi @ phi.transpose(1, 2))).sum(dim=(1, 2))
    return torch.einsum("ntd,ntr->ndr", m, phi).pow(2).sum(dim=(1, 2))


def projection_scores(G: torch.Tensor, Sigma: torch.Tensor, slices: dict) -> dict:
    """``P_f = tr(G_f Sigma_f^+ G_f^T)`` for each family's columns ``f`` (THEORY §8), and ``"all"``."""
    from numerics._numerics import psd_pinv

    out = {}
    for fam, cols in {**slices, "all": list(range(G.shape[1]))}.items():
        idx = torch.as_tensor(cols, dtype=torch.long)
        g, s = G[:, idx], Sigma[idx][:, idx]
        out[fam] = float(torch.trace(g @ psd_pinv(s) @ g.T))
    return out


@dataclasses.dataclass(frozen=True)
class SiteTest:
    """One saturation test at one site: reject ``H0: G = 0`` iff ``statistic > threshold``."""

    name: str
    statistic: float
    threshold: float
    reject: bool
    n_needed: int | None
    level: float
    b: float
    b_from_data: bool
    lower_bound: float | None = None   # adaptive: level-(1 - level) lower bound on ||G||

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def n_needed_hoeffding(b: float, g: float, level: float) -> int | None:
    """Smallest even ``n`` with ``g > b^2 sqrt(2 ln(2/level) / (n/2))``; None if ``g <= 0``.

    Example:
        >>> n_needed_hoeffding(1.0, 0.1, 0.05)
        1476
    """
    if not g > 0 or not math.isfinite(g):
        return None
    half = math.floor(2 * math.log(2 / level) * b**4 / g**2) + 1
    return 2 * half


def _eb_threshold(var: float, b: float, n_b: int, level: float) -> float:
    """``mean - EB lower bound``: ``sqrt(2 V ln(2/level)/n) + 7 (2b) ln(2/level) / (3 (n-1))``."""
    return float(0.0 - empirical_bernstein_lower(0.0, var, n_b, 2.0 * b, level))


def n_needed_adaptive(var: float, b: float, g: float, level: float) -> int | None:
    """Smallest ``n = 2 n_B`` with ``sqrt(g) > `` the empirical-Bernstein threshold on ``n_B``.

    Example:
        >>> n_needed_adaptive(0.01, 1.0, 0.1, 0.05) < n_needed_hoeffding(1.0, 0.1, 0.05)
        True
    """
    if not g > 0 or not math.isfinite(g) or not math.isfinite(var):
        return None
    target, hi = math.sqrt(g), 2
    while _eb_threshold(var, b, hi, level) >= target:
        hi *= 2
        if hi > 2**60:
            return None
    lo = max(hi // 2, 2)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if _eb_threshold(var, b, mid, level) >= target else (lo, mid)
    return 2 * hi


def _bound(acc_max: float, b: float | None) -> tuple[float, bool]:
    if b is None:
        return acc_max, True
    if acc_max > b * (1 + 1e-9):
        raise ValueError(f"b == {b!r}, must be >= max_i ||X_i|| == {acc_max!r}.")
    return float(b), False


def hoeffding_test(acc: SiteAccumulator, level: float, b: float | None = None, target_sq: float | None = None
                   ) -> SiteTest:
    """Hoeffding U-statistic test (THEORY §8): reject iff ``S_hat > b^2 sqrt(2 ln(2/level)/floor(n/2))``."""
    bound, from_data = _bound(acc.x_max, b)
    t = bound**2 * math.sqrt(2 * math.log(2 / level) / (acc.n // 2))
    s_hat = acc.u_statistic
    return SiteTest("hoeffding", s_hat, t, bool(s_hat > t), n_needed_hoeffding(bound, target_sq or 0.0, level),
                    level, bound, from_data)


def adaptive_test(acc: SiteAccumulator, level: float, b: float | None = None, target_sq: float | None = None
                  ) -> SiteTest:
    """Split-sample empirical-Bernstein test (module docstring): reject iff ``mean Z > threshold``."""
    if acc.n_B < 2:
        raise ValueError(f"n_B == {acc.n_B}, must be >= 2 (probe too small for the split test).")
    bound, from_data = _bound(acc.x_max, b)
    t = _eb_threshold(acc.z_var, bound, acc.n_B, level)
    mean = acc.z_mean
    return SiteTest("adaptive", mean, t, bool(mean > t), n_needed_adaptive(acc.z_var, bound, target_sq or 0.0, level),
                    level, bound, from_data, lower_bound=mean - t)
