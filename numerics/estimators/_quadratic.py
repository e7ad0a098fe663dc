"""Exact risks and the exact supremum of ``|R - R_n|`` for a readout block at the top (THEORY §4).

With the block at the top and squared loss, ``f_V(x) = A (u + V phi) + c``; with
``a = A u + c - y`` the risk of every ``V`` is a quadratic determined by three moments,

``R(V) = E||a||^2 + 2 <A^T E[a phi^T], V>_F + tr(V^T A^T A V E[phi phi^T])``,

so ``R(V) - R_n(V) = c_0 + 2 <G, V> + tr(V^T A^T A V Delta)`` with the differences of the
population and sample moments. Its supremum over the capped class ``||V||_F <= nu_V`` is
a trust-region problem: with ``A^T A = U diag(alpha) U^T`` and ``Delta = W diag(sigma)
W^T``, ``V~ = U^T V W`` separates it into ``sum_ij alpha_i sigma_j V~_ij^2 + 2 G~_ij V~_ij``
(the eigenvalues of ``Delta ⊗ A^T A`` are the products), solved exactly by the secular
equation, hard case included (:func:`trust_region_max`).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

__all__ = ["MomentAccumulator", "ReadoutMoments", "risk_from_moments", "sup_deviation", "trust_region_max"]


@dataclasses.dataclass(frozen=True)
class ReadoutMoments:
    """Moments of a sample for the readout-at-top class (float64 numpy).

    Attributes:
        n: sample size.
        m0: ``mean ||a_i||^2`` (for population moments: ``E||A u + c - mu||^2 + Var(y | x)``).
        C: ``mean a_i phi_i^T``, shape ``(k, r)``.
        Sigma: ``mean phi_i phi_i^T``, shape ``(r, r)``.
    """

    n: int
    m0: float
    C: np.ndarray
    Sigma: np.ndarray


class MomentAccumulator:
    """Streams ``(a, phi)`` chunks into :class:`ReadoutMoments` (memory: ``O(k r + r^2)``)."""

    def __init__(self, k: int, r: int):
        self.n, self.m0 = 0, 0.0
        self.C, self.Sigma = np.zeros((k, r)), np.zeros((r, r))

    @torch.no_grad()
    def add(self, a: torch.Tensor, phi: torch.Tensor, m0_extra: float = 0.0) -> None:
        """Add a chunk: ``a (n, k)``, ``phi (n, r)``; ``m0_extra`` is added to ``||a_i||^2`` of each row."""
        if a.dim() != 2 or phi.dim() != 2 or a.shape[0] != phi.shape[0]:
            raise ValueError(f"expected a (n, k) and phi (n, r) with the same n, got {tuple(a.shape)} "
                             f"and {tuple(phi.shape)}.")
        self.n += a.shape[0]
        self.m0 += float(a.pow(2).sum()) + m0_extra * a.shape[0]
        self.C += (a.T @ phi).double().numpy()
        self.Sigma += (phi.T @ phi).double().numpy()

    def result(self) -> ReadoutMoments:
        if self.n == 0:
            raise ValueError("no rows were added, must add at least one chunk.")
        return ReadoutMoments(self.n, self.m0 / self.n, self.C / self.n, self.Sigma / self.n)


def _as_np(x) -> np.ndarray:
    return x.detach().double().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, dtype=np.float64)


def risk_from_moments(mom: ReadoutMoments, A, V) -> float:
    """``R(V) = m0 + 2 <A^T C, V> + tr(V^T A^T A V Sigma)`` (THEORY §4), ``A (k, d)``, ``V (d, r)``.

    Example:
        >>> mom = ReadoutMoments(1, 1.0, np.array([[0.5]]), np.array([[2.0]]))
        >>> risk_from_moments(mom, np.array([[1.0]]), np.array([[0.25]]))   # 1 + 2*0.125 + 0.125
        1.375
    """
    A, V = _as_np(A), _as_np(V)
    AV = A @ V
    return float(mom.m0 + 2.0 * np.sum((A.T @ mom.C) * V) + np.sum((AV @ mom.Sigma) * AV))


def trust_region_max(h: np.ndarray, g: np.ndarray, radius: float, *, rtol: float = 1e-12) -> tuple[float, np.ndarray]:
    """``max_{||x|| <= radius} sum_i h_i x_i^2 + 2 g_i x_i`` exactly (diagonal quadratic).

    Minimises ``q(x) = sum p_i x_i^2 + 2 b_i x_i`` with ``p = -h``, ``b = -g``: either an
    interior stationary point (``p >= 0``), or ``x = -b / (p + lambda)`` on the sphere with
    ``lambda > max(0, -p_min)`` the root of the secular equation ``||x(lambda)|| = radius``
    (solved in the nearly linear form ``1/||x(lambda)|| - 1/radius``), or -- the hard case,
    ``b`` orthogonal to the eigenspace of ``p_min`` -- ``lambda = -p_min`` plus a component
    along that eigenspace that reaches the sphere (Moré and Sorensen 1983).

    Args:
        h: ``(n,)`` eigenvalues of the quadratic form; g: ``(n,)`` linear coefficients in the
            same basis; radius: ``>= 0``.

    Returns:
        ``(value, x)``: the maximum and a maximiser (``||x|| <= radius``).

    Example:
        >>> value, x = trust_region_max(np.array([1.0, -2.0]), np.array([0.0, -1.0]), 1.0)  # hard case
        >>> round(value, 12), round(float(np.linalg.norm(x)), 12)
        (1.333333333333, 1.0)
    """
    p, b = -np.asarray(h, dtype=np.float64), -np.asarray(g, dtype=np.float64)
    if p.shape != b.shape or p.ndim != 1:
        raise ValueError(f"expected h (n,) and g (n,), got {p.shape} and {b.shape}.")
    if not (math.isfinite(radius) and radius >= 0):
        raise ValueError(f"radius == {radius!r}, must be a finite number >= 0.")
    x = _tr_min(p, b, float(radius), rtol)
    return float(-(np.sum(p * x * x) + 2 * np.sum(b * x))), x


def _tr_min(p: np.ndarray, b: np.ndarray, nu: float, rtol: float) -> np.ndarray:
    if nu == 0 or p.size == 0:
        return np.zeros_like(p)
    tiny = np.finfo(float).tiny
    tol_p = rtol * max(float(np.abs(p).max()), tiny)
    tol_b = rtol * max(float(np.linalg.norm(b)), tiny)
    p_min = float(p.min())
    if p_min >= -tol_p:                       # convex: an interior stationary point may exist
        null = p <= tol_p
        if np.all(np.abs(b[null]) <= tol_b):
            x = np.where(null, 0.0, -b / np.where(null, 1.0, p))
            if np.linalg.norm(x) <= nu:
                return x
    lam_lo = max(0.0, -p_min)
    low = p <= p_min + tol_p                  # the eigenspace of the smallest eigenvalue
    if np.all(np.abs(b[low]) <= tol_b):       # possibly the hard case
        x = np.zeros_like(p)
        x[~low] = -b[~low] / (p[~low] + lam_lo)
        rest = float(np.linalg.norm(x))
        if rest <= nu:
            x[np.flatnonzero(low)[0]] = math.sqrt(max(nu * nu - rest * rest, 0.0))
            return x
        b = np.where(low, 0.0, b)
    return _secular(p, b, nu, lam_lo)


def _secular(p: np.ndarray, b: np.ndarray, nu: float, lam_lo: float) -> np.ndarray:
    from scipy.optimize import brentq

    def x_of(lam: float) -> np.ndarray:      # -b / (p + lam); +-inf where b != 0 sits on a pole
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(b == 0, 0.0, -b / (p + lam))

    def gap(lam: float) -> float:            # 1/||x(lam)|| - 1/nu, increasing in lam
        norm = float(np.linalg.norm(x_of(lam)))
        return (0.0 if not math.isfinite(norm) else math.inf if norm == 0 else 1.0 / norm) - 1.0 / nu

    hi = max(lam_lo, float(np.linalg.norm(b)) / nu - float(p.min())) + 1.0
    while gap(hi) < 0:
        hi *= 2.0
    lam = brentq(gap, lam_lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    x = x_of(lam)
    norm = float(np.linalg.norm(x))
    return x * (nu / norm) if norm > 0 else x


def sup_deviation(pop: ReadoutMoments, sample: ReadoutMoments, A, nu_V: float) -> dict:
    """``sup_{||V||_F <= nu_V} |R(V) - R_n(V)|`` exactly (THEORY §4, the event ``E_S``/``E_T``).

    Args:
        pop: population moments (exact ``y``-expectation, large Monte-Carlo ``x``-sample).
        sample: moments of ``S`` (or ``T``).
        A: head weight ``(k, d)``; nu_V: the cap.

    Returns:
        dict with ``sup`` (the supremum of ``|R - R_n|``), ``upper`` (``sup (R - R_n)``),
        ``lower`` (``sup (R_n - R)``) and the maximiser ``V`` of the larger side.
    """
    A = _as_np(A)
    c0 = pop.m0 - sample.m0
    G = A.T @ (pop.C - sample.C)                       # (d, r)
    alpha, U = np.linalg.eigh(A.T @ A)
    sigma, W = np.linalg.eigh(pop.Sigma - sample.Sigma)
    h = np.outer(alpha, sigma).ravel()                 # eigenvalues of Delta ⊗ A^T A
    g = (U.T @ G @ W).ravel()
    up, x_up = trust_region_max(h, g, nu_V)
    down, x_down = trust_region_max(-h, -g, nu_V)
    upper, lower = c0 + up, -c0 + down
    x = x_up if upper >= lower else x_down
    V = U @ x.reshape(alpha.size, sigma.size) @ W.T
    return {"sup": max(upper, lower), "upper": upper, "lower": lower, "V": V}
