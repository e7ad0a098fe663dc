"""Streaming sufficient statistics of one site and the saturation tests on them (THEORY §8).

Per probe sample ``i`` with activation gradients ``m_i`` (tokens ``(T, d)``) and features
``phi_i`` (``(T, r)``), ``X_i = sum_t m_it phi_it^T``. :class:`SiteAccumulator` keeps, over
batches, ``sum_i X_i`` (``d x r``), ``sum_i sum_t phi phi^T`` (``r x r``), ``sum_i ||X_i||^2``,
``sum_i ||m_i||^2`` and maxima: memory ``O(d r + r^2)`` (plus two floats per sample for the
betting test), never ``O(n d)``. Sums are exact, so any batching gives the one-batch numbers
(up to float rounding); the betting test works on fixed chunks of the probe, not on the
computational batches, so it is the same for every batch size too.

Two tests of ``H0: G = E[X] = 0`` (saturation of the protocol block, THEORY §8):

* :func:`hoeffding_test` -- the U-statistic ``S_hat`` against
  ``t = b^2 sqrt(2 ln(2/level) / floor(n/2))`` (Hoeffding's U-statistic inequality, valid for
  ``||X_i|| <= b``; powerless in practice: ``t`` ignores the variance and scales with ``b^2``).
* :func:`adaptive_test` -- **Choice** (ours): a test by betting with a predictable direction
  (Shafer 2021; Waudby-Smith and Ramdas 2023). The probe is cut into ``n_chunks`` equal
  chunks; for chunk ``c >= 2`` the direction ``w_c`` (the Hotelling direction
  ``diag(E m m^T)^{-1} G Sigma_phi^{-1}`` of the earlier chunks, normalised) and the bet
  ``lambda_c in [0, 1/(2 b_c)]`` (aGRAPA: ``mu/(sigma^2 + mu^2)`` from earlier chunks only)
  are fixed before the chunk is seen, and each sample multiplies the wealth by
  ``1 + lambda_c Z_i``, ``Z_i = <X_i, w_c>``. Under ``H0`` ``E[Z_i | past] = <G, w_c> = 0``, so
  the wealth is a non-negative martingale and Ville's inequality gives
  ``P(wealth ever >= 1/level) <= level``: reject iff ``log wealth >= ln(1/level)``. A
  finite-sample level for every ``n`` whenever ``b_c`` bounds ``|Z_i|`` -- exact with an a
  priori ``b`` (``||X_i|| <= b``); with no data-free bound (a general network) ``b_c`` is
  twice the largest ``|Z_i|`` of earlier chunks (``||X_i||`` before the first bet), a plug-in
  (``b_from_data``; exceedances are counted in ``b_violations``). The power follows the
  standard deviation of ``Z``, not ``b^2``, and every sample after the first chunk is used. Inverting the same wealth for
  ``H0(m): ||G|| <= m`` gives ``lower_bound``, a level-``(1 - level)`` lower confidence bound
  on ``||G||``.

Both report ``n_needed``: the probe size at which a site with ``||G||^2 = g`` (e.g. ``2 beta
Delta`` for a target gain ``Delta``, Theorem 1) would be detected when the statistic
grows at its expected rate (betting: direction aligned with ``G``, ``Var(Z)`` as measured,
growth ``lambda mu - lambda^2 (sigma^2 + mu^2) / 2`` per sample) -- a planning number, not a
guarantee.

References:
    G. Shafer, Testing by betting, JRSS-A 2021. I. Waudby-Smith, A. Ramdas, Estimating means
    of bounded random variables by betting, JRSS-B 2023 (arXiv 2010.09686).
"""
from __future__ import annotations

import dataclasses
import math

import torch

from numerics._numerics import psd_eig, sure_bound

__all__ = ["SiteAccumulator", "SiteTest", "adaptive_test", "hoeffding_test", "n_needed_adaptive",
           "n_needed_hoeffding", "n_needed_improvable", "projection_scores"]

F64 = torch.float64
_E_ROWS = 128   # rows of each batch part that estimate E[m m^T] when d > 128 (betting direction only)


class SiteAccumulator:
    """Running sums of one site over the probe, in order (``n_total`` samples, ``n_chunks`` equal chunks).

    Example:
        >>> acc = SiteAccumulator(d=2, r=1, n_total=4, n_chunks=2)
        >>> m, phi = torch.ones(4, 1, 2, dtype=F64), torch.ones(4, 1, 1, dtype=F64)
        >>> acc.update(m[:3], phi[:3]); acc.update(m[3:], phi[3:])
        >>> acc.n, acc.G.tolist(), [round(z, 6) for z in acc.z.tolist()]
        (4, [[1.0], [1.0]], [1.414214, 1.414214])
    """

    def __init__(self, d: int, r: int, n_total: int, n_chunks: int = 16, b: float | None = None,
                 direction: str = "hotelling", device: torch.device | str | None = None):
        self.d, self.r, self.n_total, self.b_prior = d, r, int(n_total), b
        self.rule = direction
        self.E_sum = torch.zeros(d, d, dtype=F64, device=device)   # sums on the model's device, in float64
        k = max(1, min(int(n_chunks), n_total))   # k equal chunks
        self.ends = sorted({math.ceil(n_total * (j + 1) / k) for j in range(k)})
        self.chunk = self.ends[0]
        self.n = 0
        self.G_sum = torch.zeros(d, r, dtype=F64, device=device)
        self.S_sum = torch.zeros(r, r, dtype=F64, device=device)
        self.m_sq = self.x_sq = self.x_max = self.ag_max = self.phi_max = 0.0
        self.m_bar_sq: float | None = None
        self.direction: torch.Tensor | None = None
        self.lam = self.b_bet = 0.0
        self._z: list[torch.Tensor] = []
        self._lams: list[torch.Tensor] = []
        self._z_max = 0.0
        self.b_violations = 0

    def update(self, m: torch.Tensor, phi: torch.Tensor) -> None:
        """Add the next samples: ``m (n, T, d)`` activation gradients, ``phi (n, T, r)`` features."""
        if m.dim() != 3 or phi.dim() != 3 or m.shape[:2] != phi.shape[:2]:
            raise ValueError(f"expected m (n, T, d) and phi (n, T, r) with the same n, T, "
                             f"got {tuple(m.shape)} and {tuple(phi.shape)}.")
        i = 0
        while i < m.shape[0]:   # split at chunk ends: the test does not depend on the batching
            end = next((e for e in self.ends if e > self.n), self.n + m.shape[0] - i)
            j = min(m.shape[0], i + end - self.n)
            self._update_part(m[i:j], phi[i:j])
            i = j

    @torch.no_grad()
    def _update_part(self, m, phi) -> None:
        n, T = m.shape[:2]
        X = _per_sample_X(m, phi)   # (n, d, r) when no larger than ~ the inputs, else None
        if self.direction is not None:
            self._bet(m, phi, X)
        flat_phi = phi.reshape(n * T, -1)
        self.G_sum += (X.sum(dim=0) if X is not None else _flat(m).T @ flat_phi).to(F64)
        self.S_sum += (flat_phi.T @ flat_phi).to(F64)
        # E only steers the bets (any predictable choice is valid): a subsample suffices for wide states
        self.E_sum += _token_gram(m, None if self.d <= _E_ROWS else _E_ROWS).to(F64)
        m_norm2 = m.pow(2).sum(dim=(1, 2)).to(F64)
        x_norm2 = (X.pow(2).sum(dim=(1, 2)) if X is not None else _x_sq_norms(m, phi)).to(F64)
        self.n += n
        self.m_sq += float(m_norm2.sum())
        self.x_sq += float(x_norm2.sum())
        self.ag_max = max(self.ag_max, float(m_norm2.max().sqrt()))
        self.x_max = max(self.x_max, float(x_norm2.max().clamp(min=0).sqrt()))
        self.phi_max = max(self.phi_max, float(phi.pow(2).sum(dim=(1, 2)).max().sqrt()))
        if self.n in self.ends and self.n < self.n_total:
            self._next_chunk()

    def _bet(self, m, phi, X=None) -> None:
        D = self.direction.to(m.dtype)
        z = ((X * D).sum(dim=(1, 2)) if X is not None else ((m @ D) * phi).sum(dim=(1, 2))).to(F64)
        self.b_violations += int((z.abs() > self.b_bet).sum())
        self._z.append(z)
        self._lams.append(torch.full_like(z, self.lam))
        self._z_max = max(self._z_max, float(z.abs().max()))

    def _next_chunk(self) -> None:
        """Fix the next chunk's direction, bound and bet from the samples seen so far (predictable)."""
        done = sum(e <= self.n for e in self.ends)   # chunks finished so far
        if self.direction is None or done & (done - 1) == 0:   # direction refreshed after 1, 2, 4, 8, ... chunks
            D = _bet_direction(self.G_sum, self.S_sum, self.E_sum, self.rule)
            norm = float(D.norm())
            self.direction = D / norm if norm > 0 else torch.zeros_like(D)
        if self.b_prior is not None:
            self.b_bet = self.b_prior
        else:   # plug-in: twice the largest |Z| (or, before any bet, ||X||) seen so far
            self.b_bet = 2.0 * (self._z_max if self._z else self.x_max)
        if self._z:   # aGRAPA from the betting scalars of earlier chunks
            z = self.z
            mu, second = float(z.mean()), float(z.pow(2).mean())
        else:        # first chunk: in-sample mean ||G_sum||/n and the bound E<X, w>^2 <= E||X||^2
            mu = float((self.G_sum * self.direction).sum()) / self.n
            second = self.x_sq / self.n
        cap = 1.0 / (2.0 * self.b_bet) if self.b_bet > 0 else 0.0
        self.lam = min(max(mu / second, 0.0), cap) if second > 0 else 0.0

    def add_m_bar(self, m_bar: torch.Tensor) -> None:
        """Accumulate ``||m_bar_i||^2`` (conditional gradients, for the realisability ratio)."""
        self.m_bar_sq = (self.m_bar_sq or 0.0) + float(m_bar.pow(2).sum().to(F64))

    def sigma_eig(self) -> tuple[torch.Tensor, torch.Tensor]:
        """:func:`~numerics._numerics.psd_eig` of :attr:`Sigma`, once per state of the sums (shared by the ``"all"``
        projection score and the natural direction ``G Sigma^+``)."""
        key = (self.n, id(self.S_sum), self.S_sum._version)   # recomputed when the sums change
        if getattr(self, "_eig", (None,))[0] != key:
            self._eig = (key, psd_eig(self.Sigma))
        return self._eig[1]

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
    def z(self) -> torch.Tensor:
        """The betting scalars ``Z_i`` so far, in probe order."""
        return torch.cat(self._z).cpu() if self._z else torch.zeros(0, dtype=F64)

    @property
    def lams(self) -> torch.Tensor:
        """The bet ``lambda`` applied to each ``Z_i``."""
        return torch.cat(self._lams).cpu() if self._lams else torch.zeros(0, dtype=F64)

    def log_wealth(self, m0: float = 0.0, z=None, lam=None) -> float:
        """``sum_i log(1 + lambda_i (Z_i - m0))``: the betting wealth against ``H0(m0): ||G|| <= m0``."""
        z = self.z if z is None else z
        lam = self.lams if lam is None else lam
        return float(torch.log((1 + lam * (z - m0)).clamp(min=1e-300)).sum()) if z.numel() else 0.0

    @property
    def z_var(self) -> float:
        """Sample variance of the betting scalars ``Z_i``."""
        z = self.z
        return float(z.var()) if z.numel() > 1 else math.nan


def _ridge_solve(A: torch.Tensor, B: torch.Tensor, rel: float = 1e-3) -> torch.Tensor:
    """``B (A + rel tr(A)/k I)^{-1}`` for a PSD ``k x k`` matrix ``A`` (a stable whitening)."""
    k = A.shape[0]
    ridge = rel * float(torch.trace(A)) / k
    if not ridge > 0:
        return torch.zeros_like(B)
    A32 = (A + ridge * torch.eye(k, dtype=A.dtype, device=A.device)).float()   # a direction needs no float64 solve
    return torch.linalg.solve(A32, B.float().T).T.to(B.dtype)


def _bet_direction(G_sum, S_sum, E_sum, rule: str) -> torch.Tensor:
    """``G`` (euclidean), ``G Sigma^-1`` (natural) or ``E^-1 G Sigma^-1`` (hotelling: the optimal
    ``Cov(X)^-1 G`` under the Kronecker approximation ``Cov(X) ~ E[m m^T] (x) Sigma_phi``),
    ridge-regularised."""
    if rule == "euclidean":
        return G_sum
    D = _ridge_solve(S_sum, G_sum)
    return _ridge_solve(E_sum, D.T).T if rule == "hotelling" else D


def _x_sq_norms(m: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    """``||X_i||_F^2`` with ``X_i = sum_t m_it phi_it^T``, never forming ``X_i`` unless cheaper."""
    n, T, d = m.shape
    r = phi.shape[2]
    if T == 1:
        return m.pow(2).sum(dim=(1, 2)) * phi.pow(2).sum(dim=(1, 2))
    if T * (d + r) <= d * r:   # Gram form: sum_{t,s} (m_t . m_s)(phi_t . phi_s)
        return ((m @ m.transpose(1, 2)) * (phi @ phi.transpose(1, 2))).sum(dim=(1, 2))
    return torch.einsum("ntd,ntr->ndr", m, phi).pow(2).sum(dim=(1, 2))


def _per_sample_X(m: torch.Tensor, phi: torch.Tensor) -> torch.Tensor | None:
    """``X_i = sum_t m_it phi_it^T`` ``(n, d, r)`` by one batched matmul over the positions, when
    ``T > 1`` and ``X`` is at most twice the size of ``m`` and ``phi`` (then ``sum_i X_i``, ``||X_i||``
    and the bets all come from it); else None. Channels-first states ``(n, C, P)`` (read as tokens
    through a transpose) are multiplied in place, without a copy."""
    n, T, d = m.shape
    r = phi.shape[2]
    if T == 1 or d * r > 2 * T * (d + r):
        return None
    return torch.bmm(m.transpose(1, 2), phi)


def _flat(m: torch.Tensor) -> torch.Tensor:
    return m.reshape(-1, m.shape[2])


def _token_gram(m: torch.Tensor, rows: int | None) -> torch.Tensor:
    """``sum_t m_t m_t^T`` over the first ``rows`` tokens (all when None), ``(d, d)``; a channels-first
    state is reduced per sample (``bmm``) instead of being copied into token rows."""
    n, T, d = m.shape
    if rows is not None:
        flat = _flat(m[: -(-rows // T)])[:rows]
        return flat.T @ flat
    A = m.transpose(1, 2)
    if not m.is_contiguous() and A.is_contiguous():
        return torch.bmm(A, m).sum(dim=0)
    flat = _flat(m)
    return flat.T @ flat


def projection_scores(G: torch.Tensor, Sigma: torch.Tensor, slices: dict, eig_all=None) -> dict:
    """``P_f = tr(G_f Sigma_f^+ G_f^T)`` for each family's columns ``f`` (THEORY §8), and ``"all"``
    (``eig_all``: a zero-argument callable giving :func:`~numerics._numerics.psd_eig` of ``Sigma``,
    e.g. :meth:`SiteAccumulator.sigma_eig`, so that its decomposition is shared with a later pass)."""
    out = {}
    for fam, cols in {**slices, "all": list(range(G.shape[1]))}.items():
        idx = torch.as_tensor(cols, dtype=torch.long, device=G.device)
        out[fam] = _pinv_quadratic(G[:, idx], Sigma[idx][:, idx], eig_all if fam == "all" else None)
    return out


def _pinv_quadratic(g: torch.Tensor, s: torch.Tensor, eig=None) -> float:
    """``tr(g s^+ g^T)`` with :func:`~numerics._numerics.psd_pinv`'s ``s^+`` (eigenvalues below ``1e-10 lambda_max``
    cut). By Cholesky when none can be cut -- ``s - 1e-9 tr(s) I`` positive definite, so every eigenvalue exceeds
    ``1e-9 tr(s) >= 10 x`` the cut and ``s^+ = s^-1`` -- else ``sum_j ||g u_j||^2 / lambda_j`` over the kept
    eigenpairs of ``s`` (``tr(g s^+ g^T)`` without forming ``s^+``; nonnegative terms: equal up to rounding).
    ``eig``: a zero-argument callable giving :func:`~numerics._numerics.psd_eig` of ``s``."""
    tr = float(torch.trace(s))
    if tr > 0 and math.isfinite(tr):
        eye = torch.eye(s.shape[0], dtype=s.dtype, device=s.device)
        if int(torch.linalg.cholesky_ex(s - 1e-9 * tr * eye)[1]) == 0:
            L, info = torch.linalg.cholesky_ex(s)
            if int(info) == 0:
                return float(torch.linalg.solve_triangular(L, g.T, upper=False).pow(2).sum())
    evecs, inv = psd_eig(s) if eig is None else eig()
    return float(((g @ evecs).pow(2) * inv).sum())


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
    b_violations: int | None = None    # adaptive: samples with |Z_i| above the bound used for the bet

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


def n_needed_adaptive(var: float, b: float, g: float, level: float, chunk: int = 0) -> int | None:
    """``chunk + ln(1/level) / rate`` with the constrained growth rate of the betting wealth.

    ``mu = sqrt(g)`` (direction aligned with ``G``), ``lambda = min(mu/(var + mu^2), 1/(2b))``,
    ``rate = lambda mu - lambda^2 (var + mu^2) / 2`` (second-order ``E log(1 + lambda Z)``).

    Example:
        >>> n_needed_adaptive(0.01, 1.0, 0.1, 0.05) < n_needed_hoeffding(1.0, 0.1, 0.05)
        True
    """
    if not g > 0 or not math.isfinite(g) or not math.isfinite(var) or not b > 0:
        return None
    mu = math.sqrt(g)
    lam = min(mu / (var + mu * mu), 1.0 / (2.0 * b))
    rate = lam * mu - lam * lam * (var + mu * mu) / 2.0
    return chunk + math.ceil(math.log(1.0 / level) / rate) if rate > 0 else None


def n_needed_improvable(log_wealth: float, n_bet: int, level: float, n_chunks: int) -> int | None:
    """Probe size at which the betting test (:func:`adaptive_test`, ``n_chunks`` chunks) calls the site improvable.

    Definition (**Choice**, the scan's own statistic): the betting wealth grows at its
    *observed* mean rate ``log W / n_bet`` per betting sample; a probe of ``n`` bets on
    ``n (1 - 1/n_chunks)`` samples (its first chunk fixes the first bet), so the wealth reaches
    ``ln(1/level)`` at ``n = ceil(ln(1/level) n_bet / (log W (1 - 1/n_chunks)))``. Unlike
    ``numerics.user_network._verdict.n_to_reject`` (None once the test has rejected) it is also given for
    a site that already rejects (then ``<=`` the probe size, up to the rounding of the chunks).
    None when the observed rate is not positive (no rejection in sight). A planning number, not a
    guarantee.

    Example:
        >>> n_needed_improvable(math.log(20.0) / 2, 1500, 0.05, 16)   # half the threshold after 1500 bets
        3200
    """
    if not n_bet or not log_wealth > 0 or not math.isfinite(log_wealth):
        return None
    k = max(int(n_chunks), 2)
    return math.ceil(math.log(1.0 / level) * n_bet / (log_wealth * (1.0 - 1.0 / k)) - 1e-9)


def hoeffding_test(acc: SiteAccumulator, level: float, b: float | None = None, target_sq: float | None = None
                   ) -> SiteTest:
    """Hoeffding U-statistic test (THEORY §8): reject iff ``S_hat > b^2 sqrt(2 ln(2/level)/floor(n/2))``."""
    bound, from_data = sure_bound(acc.x_max, b)
    t = bound**2 * math.sqrt(2 * math.log(2 / level) / (acc.n // 2))
    s_hat = acc.u_statistic
    return SiteTest("hoeffding", s_hat, t, bool(s_hat > t), n_needed_hoeffding(bound, target_sq or 0.0, level),
                    level, bound, from_data)


def _lower_bound(acc: SiteAccumulator, level: float) -> float:
    """``sup {m0 >= 0 : log wealth(m0) >= ln(1/level)}`` (0 when ``H0`` is not rejected), by bisection."""
    target, z, lam = math.log(1.0 / level), acc.z, acc.lams
    if acc.log_wealth(0.0, z, lam) < target:
        return 0.0
    lo, hi = 0.0, max(acc.b_bet, 1e-300)
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if acc.log_wealth(mid, z, lam) >= target else (lo, mid)
    return lo


def adaptive_test(acc: SiteAccumulator, level: float, b: float | None = None, target_sq: float | None = None
                  ) -> SiteTest:
    """Test by betting with a predictable direction (docstring of ``numerics.estimators._site_stats``): reject iff ``log wealth >= ln(1/level)``."""
    n_bet = sum(z.numel() for z in acc._z)
    if n_bet < 2:
        raise ValueError(f"betting samples == {n_bet}, must be >= 2 (probe too small for the chunks).")
    bound, from_data = (acc.b_bet, acc.b_prior is None)
    stat, t = acc.log_wealth(0.0), math.log(1.0 / level)
    n_need = n_needed_adaptive(acc.z_var, bound, target_sq or 0.0, level, acc.chunk)
    test = SiteTest("betting", stat, t, bool(stat >= t), n_need, level, bound, from_data,
                    lower_bound=_lower_bound(acc, level))
    return dataclasses.replace(test, b_violations=acc.b_violations)
