"""Smoothness ``beta`` along the jumpboard segment, jumpboards and risk margins (THEORY §2-§3, §6).

``g(V) = R(f_V)`` is estimated by the mean loss on a (large) sample. The curvature along
``G^ = G/||G||`` at ``V = -t G`` is the second derivative of ``s -> g(-t G + s G^)`` at 0
(double backward through ``f_top``; only ``f_top`` is re-evaluated, ``u`` and ``phi(u)``
are computed once). For the ``full`` family the direction lies in ``V`` only (the gradient
in ``U, b`` vanishes at ``V = 0``, THEORY §1).
"""
from __future__ import annotations

import dataclasses

import torch

from numerics._numerics import per_sample_loss
from plumbing.validation import check_number

_CHUNK = 8192


@dataclasses.dataclass(frozen=True)
class BetaEstimate:
    """Result of :func:`smoothness_beta_report` (a grid estimate, not a certificate).

    Attributes:
        beta: self-consistent value: ``beta >= max curvature on the grid of [0, 1/beta]``.
        curvature_at_zero: ``G^T H(0) G^``.
        max_curvature: largest curvature seen on the final segment's grid.
        iterations: number of segment refinements.
        self_consistent: whether the iteration converged within ``max_iter``.
    """

    beta: float
    curvature_at_zero: float
    max_curvature: float
    iterations: int
    self_consistent: bool


def _direction_curvature(expanded, x, y, G, loss, chunk: int = _CHUNK):
    with torch.no_grad():
        u = torch.cat([expanded.base.bottom(x[i:i + chunk], expanded.at) for i in range(0, len(x), chunk)])
        phi = expanded.block.features(u)
    g_hat = G / G.norm()

    def chunk_curvature(t: float, sl: slice) -> float:
        s = torch.zeros((), dtype=u.dtype, requires_grad=True)
        V = -t * G + s * g_hat
        z = u[sl] + (phi[sl] @ V.T).reshape(u[sl].shape)
        if expanded.post_norm is not None:
            z = expanded.post_norm(z)
        value = per_sample_loss(expanded.base.top(z, expanded.at), y[sl], loss).sum()
        (d1,) = torch.autograd.grad(value, s, create_graph=True)
        (d2,) = torch.autograd.grad(d1, s)
        return float(d2)

    def curvature(t: float) -> float:
        """``d^2/ds^2 g(-t G + s G^)`` at ``s = 0``; the mean is accumulated over chunks."""
        n = u.shape[0]
        return sum(chunk_curvature(t, slice(i, i + chunk)) for i in range(0, n, chunk)) / n

    return curvature


def smoothness_beta_report(expanded, x: torch.Tensor, y: torch.Tensor, G: torch.Tensor,
                           loss: str = "cross_entropy", *, n_grid: int = 9, max_iter: int = 20,
                           rtol: float = 1e-3, beta_floor: float = 1e-8) -> BetaEstimate:
    """``beta`` with ``G^T ∇²g(-tG) G^ <= beta`` for ``t`` on a grid of ``[0, 1/beta]`` (THEORY §2).

    Iteration: ``beta_0 = max(curvature(0), beta_floor)``; ``beta_{k+1}`` = max curvature
    on ``n_grid`` equispaced points of ``[0, 1/beta_k]``; stop when it does not exceed
    ``beta_k (1 + rtol)``. Since the segment shrinks as ``beta`` grows, one step usually
    suffices. This is an *estimate on a grid*: curvature between grid points is not seen.

    Args:
        expanded: an :class:`~numerics.insertion.ExpandedModel`.
        x, y: the sample defining ``g`` (a large independent sample for ``R``).
        G: ``(d, r)`` direction (the cross-gradient); must be non-zero.

    Raises:
        ValueError: ``G`` has the wrong shape or is zero; bad ``n_grid``; ``beta_floor`` not a finite number > 0.
    """
    if tuple(G.shape) != tuple(expanded.block.V.shape):
        raise ValueError(f"expected G of shape {tuple(expanded.block.V.shape)}, got {tuple(G.shape)}.")
    if not float(G.detach().norm()) > 0:
        raise ValueError("||G|| == 0, must be > 0 (condition C1).")
    if not isinstance(n_grid, int) or n_grid < 2:
        raise ValueError(f"n_grid == {n_grid!r}, must be an int >= 2.")
    check_number("beta_floor", beta_floor)   # beta divides the segment 1 / beta: 0 with curvature(0) <= 0 divided by zero
    curvature = _direction_curvature(expanded, x, y, G.detach(), loss)
    c0 = curvature(0.0)
    beta, seen = max(c0, beta_floor), c0
    for k in range(1, max_iter + 1):
        seen = max(curvature(i / ((n_grid - 1) * beta)) for i in range(n_grid))
        if seen <= beta * (1 + rtol):
            # never report less than the largest curvature seen on the grid
            return BetaEstimate(max(beta, seen), c0, seen, k, True)
        beta = seen
    return BetaEstimate(beta, c0, seen, max_iter, False)


def smoothness_beta(expanded, x: torch.Tensor, y: torch.Tensor, G: torch.Tensor,
                    loss: str = "cross_entropy", **kw) -> float:
    """``beta`` of :func:`smoothness_beta_report` (THEORY §2, A-smooth), as a float.

    Example:
        >>> from numerics.models import PostNormResMLP
        >>> from numerics.insertion import insert_block
        >>> net = PostNormResMLP(3, 8, 1, 3)
        >>> new = insert_block(net, at=1, width=4)
        >>> x, y = torch.randn(32, 3, dtype=torch.float64), torch.randint(0, 3, (32,))
        >>> smoothness_beta(new, x, y, torch.ones(8, 4, dtype=torch.float64)) > 0
        True
    """
    return smoothness_beta_report(expanded, x, y, G, loss, **kw).beta


def jumpboard(expanded, G: torch.Tensor, beta: float):
    """Jumpboard ``f~ = f_{V = -G/beta}`` (THEORY §3; ``G`` or ``G_S`` for ``f~_pop`` / ``f~_S``).

    Raises:
        ValueError: ``beta <= 0`` or ``G`` of the wrong shape.
    """
    if not beta > 0:
        raise ValueError(f"beta == {beta!r}, must be > 0.")
    return expanded.with_V(-G / beta)


@torch.no_grad()
def mean_loss(model, x: torch.Tensor, y: torch.Tensor, loss: str = "cross_entropy") -> float:
    """``(1/n) sum_i l(f(x_i), y_i)``: ``R_S``, ``L_test`` or a Monte-Carlo ``R`` (THEORY notation)."""
    total = sum(float(per_sample_loss(model(x[i:i + _CHUNK]), y[i:i + _CHUNK], loss).sum())
                for i in range(0, x.shape[0], _CHUNK))
    return total / x.shape[0]


def delta_r(old, jump, x_pop: torch.Tensor, y_pop: torch.Tensor, loss: str = "cross_entropy") -> float:
    """``Delta_R = R(f_old) - R(f~_pop)`` on a population sample (THEORY §3)."""
    return mean_loss(old, x_pop, y_pop, loss) - mean_loss(jump, x_pop, y_pop, loss)


def delta_r_lower_bound(G: torch.Tensor, beta: float) -> float:
    """Theorem 1: ``Delta_R >= ||G||^2 / (2 beta)`` (THEORY §3), read from ``bounds``."""
    from bounds import jumpboard_lower_bound

    if not beta > 0:
        raise ValueError(f"beta == {beta!r}, must be > 0.")
    return float(jumpboard_lower_bound(float(G.detach().pow(2).sum()), beta))


def delta_erm(jump, new, x_S: torch.Tensor, y_S: torch.Tensor, loss: str = "cross_entropy") -> float:
    """``Delta_ERM = R_S(f_jump) - R_S(f_new)`` (THEORY §2, C2; ``>= 0`` under C2)."""
    return mean_loss(jump, x_S, y_S, loss) - mean_loss(new, x_S, y_S, loss)


def delta_test_r(old, jump_S, x_T: torch.Tensor, y_T: torch.Tensor, loss: str = "cross_entropy") -> float:
    """``Delta_test^R = L_test(f_old) - L_test(f~_S)`` (THEORY §6)."""
    return mean_loss(old, x_T, y_T, loss) - mean_loss(jump_S, x_T, y_T, loss)
