"""Paper B's first-order saturation scores and the U-statistic tests (THEORY §8, §2 C1)."""
from __future__ import annotations

import dataclasses
import math

import torch

from numerics._numerics import check_probability, psd_pinv, sure_bound
from numerics.estimators._gradients import _check_pair, cross_gradient, u_statistic_sq_norm


def projection_score(G: torch.Tensor, phi: torch.Tensor) -> float:
    """``P_l = tr(G Sigma_phi^+ G^T)``, ``Sigma_phi = phi^T phi / n`` (THEORY §8).

    Args:
        G: ``(d, r)`` cross-gradient; phi: ``(n, r)`` features.

    Example:
        >>> projection_score(torch.eye(2, dtype=torch.float64), torch.eye(2, dtype=torch.float64))
        4.0
    """
    if G.dim() != 2 or phi.dim() != 2 or G.shape[1] != phi.shape[1]:
        raise ValueError(f"expected G (d, r) and phi (n, r) with the same r, "
                         f"got {tuple(G.shape)} and {tuple(phi.shape)}.")
    sigma = phi.T @ phi / phi.shape[0]
    return float(torch.trace(G @ psd_pinv(sigma) @ G.T))


def cross_gradient_score(G: torch.Tensor) -> float:
    """``||G_l||_F^2`` (THEORY §8)."""
    return float(G.pow(2).sum())


def ag_max(m: torch.Tensor) -> float:
    """``AG_max = max_i ||m_i||`` over probe samples (THEORY §8); ``m: (n, d)``.

    Example:
        >>> ag_max(torch.tensor([[3.0, 4.0], [0.0, 1.0]]))
        5.0
    """
    return float(m.reshape(m.shape[0], -1).norm(dim=1).max())


def ag_max_per_candidate(ms: dict) -> dict:
    """``{"per_candidate": {l: AG_max(m_l)}, "overall": max_l AG_max(m_l)}`` (THEORY §8)."""
    per = {l: ag_max(m) for l, m in ms.items()}
    return {"per_candidate": per, "overall": max(per.values())}


def realisability_ratio(m_bar: torch.Tensor, phi: torch.Tensor) -> float:
    """``P_l / E||m_bar_l||^2`` with ``G = E[m_bar phi^T]`` (THEORY §8), in ``[0, 1]`` on a sample.

    On a sample, ``P = (1/n) ||Pi_phi m_bar||^2`` with ``Pi_phi`` the projection onto the
    column space of ``phi``, so the ratio is 1 iff ``m_bar`` is realised by a readout.

    Args:
        m_bar: ``(n, d)`` conditional activation gradients (``activation_gradients`` with
            soft targets); phi: ``(n, r)``.
    """
    _check_pair(m_bar, phi)
    denom = float(m_bar.pow(2).sum(dim=1).mean())
    return projection_score(cross_gradient(m_bar, phi), phi) / denom if denom > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class SaturationTest:
    """U-statistic test of ``H0: ||G||_F = 0`` (saturation) at a stated level (THEORY §8).

    ``P(|S_hat - ||G||^2| >= t) <= 2 exp(-floor(n/2) t^2 / (2 b^4)) = level`` gives
    ``t = b^2 sqrt(2 ln(2/level) / floor(n/2))``; ``signal_detected`` (reject H0, i.e. C1
    holds) iff ``S_hat > t``. ``saturated`` means H0 was *not rejected*, not proven.
    """

    s_hat: float
    threshold: float
    level: float
    n: int
    b: float
    b_from_data: bool
    signal_detected: bool

    @property
    def saturated(self) -> bool:
        return not self.signal_detected

    @property
    def interval(self) -> tuple[float, float]:
        """``[S_hat - t, S_hat + t]``, a ``1 - level`` interval for ``||G||^2``."""
        return (self.s_hat - self.threshold, self.s_hat + self.threshold)


def saturation_test(m: torch.Tensor, phi: torch.Tensor, b: float | None, level: float) -> SaturationTest:
    """Hoeffding U-statistic test of saturation ``G = 0`` at ``level`` (THEORY §8).

    Args:
        m: ``(n, d)``; phi: ``(n, r)``, an independent probe sample.
        b: a priori bound ``||X_i||_F = ||m_i|| ||phi_i|| <= b``; None uses the sample
            maximum (then the level is only approximate: ``b_from_data`` is True).
        level: test level in ``(0, 1)``.

    Raises:
        ValueError: bad level, ``n < 2``, or a sample with ``||X_i||_F > b``.
    """
    check_probability("level", level)
    s_hat = u_statistic_sq_norm(m, phi)
    x_norms = m.norm(dim=1) * phi.norm(dim=1)
    bound, _ = sure_bound(float(x_norms.max()), b, "max_i ||m_i|| ||phi_i||")
    n = m.shape[0]
    t = bound**2 * math.sqrt(2 * math.log(2 / level) / (n // 2))
    return SaturationTest(s_hat, t, level, n, bound, b is None, s_hat > t)


def c1_test(m: torch.Tensor, phi: torch.Tensor, *, level: float, b: float | None = None) -> SaturationTest:
    """(C1) ``G != 0`` by a finite-sample test (THEORY §2): holds at ``level`` iff ``signal_detected``."""
    return saturation_test(m, phi, b, level)
