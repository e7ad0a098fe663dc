"""Readout blocks of many draws trained as one batched computation (THEORY §1, §4).

Every draw of a validity study (and the single draw of a run) inserts the *same* frozen
block features into the *same* frozen ``f_old``; only ``V`` and the training sample
differ. So the blocks of ``B`` draws are one stacked parameter ``V: (B, d, r)``: the
mini-batches of all draws go through ``phi`` and ``f_top`` as one batch of ``B * bs``
rows (batched matmuls, ``torch.bmm``), the summed loss gives each ``V_b`` its own
gradient in one backward pass (draws do not interact), and the optimiser (SGD, momentum,
Adam: element-wise, zero initial state as in :func:`numerics.training.train`) and the
Frobenius-cap projection act per draw. With ``B = 1`` this is plain projected training.

Each draw's mini-batch indices come from its own generator (``seeds[b]``), drawn up front
as one ``(steps, bs)`` tensor, so a draw trains identically whichever draws share its
batch (up to floating-point summation order).
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import torch

from numerics._numerics import per_sample_loss
from numerics.training import DivergenceError, check_optimiser_args

__all__ = ["BlockTrainResult", "candidate_losses", "candidate_outputs", "sample_risks", "train_readout_blocks"]

#: Rows of ``f_top`` evaluated at once by :func:`sample_risks` (bounded memory).
_ROWS_PER_PASS = 1 << 20


@dataclasses.dataclass(frozen=True)
class BlockTrainResult:
    """Outcome of :func:`train_readout_blocks` (immutable).

    Attributes:
        V: trained blocks, ``(B, d, r)``.
        losses: mini-batch loss of each draw before each step, ``(B, steps)``.
        projections: per draw, the number of steps at which the cap was active, ``(B,)``.
    """

    V: torch.Tensor
    losses: np.ndarray
    projections: np.ndarray
    optimizer: str
    lr: float
    steps: int
    batch_size: int


def _top(expanded, z: torch.Tensor) -> torch.Tensor:
    if expanded.post_norm is not None:
        z = expanded.post_norm(z)
    return expanded.base.top(z, expanded.at)


def candidate_outputs(expanded, u: torch.Tensor, Vs: torch.Tensor) -> torch.Tensor:
    """Outputs ``f_top(u + V phi(u))`` for every draw and candidate ``V``.

    Args:
        expanded: the expanded model (frozen base, block features, insertion point).
        u: states ``(B, n, *state)``.
        Vs: candidate blocks ``(B, C, d, r)``.

    Returns:
        ``(B * C * n, n_out)`` outputs, ordered draw, candidate, sample.
    """
    B, n, state = u.shape[0], u.shape[1], u.shape[2:]
    C = Vs.shape[1]
    flat = u.reshape(B, n, -1)
    phi = expanded.block.features(flat.reshape(B * n, -1)).reshape(B, n, -1)
    h = torch.einsum("bnr,bcdr->bcnd", phi, Vs)
    return _top(expanded, (flat[:, None] + h).reshape(B * C * n, *state))


def candidate_losses(expanded, u: torch.Tensor, y: torch.Tensor, Vs: torch.Tensor, loss: str) -> torch.Tensor:
    """Per-sample losses ``(B, C, n)`` of :func:`candidate_outputs` against ``y`` (``(B, n)`` or ``(B, n, k)``)."""
    B, n, C = u.shape[0], u.shape[1], Vs.shape[1]
    target = y[:, None].expand(B, C, *y.shape[1:]).reshape(B * C * n, *y.shape[2:])
    return per_sample_loss(candidate_outputs(expanded, u, Vs), target, loss).reshape(B, C, n)


@torch.no_grad()
def sample_risks(expanded, u: torch.Tensor, y: torch.Tensor, Vs: torch.Tensor, loss: str) -> torch.Tensor:
    """Empirical risks ``(B, C)`` of every candidate on every draw's sample, in chunks."""
    B, n, C = u.shape[0], u.shape[1], Vs.shape[1]
    chunk = max(1, _ROWS_PER_PASS // (B * C))
    total = torch.zeros(B, C, dtype=torch.float64)
    for i in range(0, n, chunk):
        total += candidate_losses(expanded, u[:, i:i + chunk], y[:, i:i + chunk], Vs, loss).sum(dim=2)
    return total / n


def _optimizer(name: str, V: torch.Tensor, lr: float) -> torch.optim.Optimizer:
    # fresh optimiser: all state at 0 (THEORY §8); element-wise, so draws stay independent
    if name == "sgd":
        return torch.optim.SGD([V], lr=lr)
    if name == "momentum":
        return torch.optim.SGD([V], lr=lr, momentum=0.9)
    return torch.optim.Adam([V], lr=lr)


@torch.no_grad()
def _project(V: torch.Tensor, caps: torch.Tensor) -> torch.Tensor:
    """Project each ``V_b`` onto ``||V_b||_F <= caps_b``; return which draws were rescaled."""
    norms = V.reshape(V.shape[0], -1).norm(dim=1)
    active = norms > caps
    V.mul_(torch.where(active, caps / norms.clamp(min=torch.finfo(V.dtype).tiny), torch.ones_like(norms))[:, None, None])
    return active


def _check(optimizer, lr, steps, batch_size, u, y, seeds, caps) -> None:
    check_optimiser_args(optimizer, lr, steps, batch_size, full_batch=False)
    if u.shape[:2] != y.shape[:2] or len(seeds) != u.shape[0] or caps.shape != (u.shape[0],):
        raise ValueError(f"expected u (B, M, ...), y (B, M, ...), B seeds and B caps, got {tuple(u.shape)}, "
                         f"{tuple(y.shape)}, {len(seeds)} seeds and caps of shape {tuple(caps.shape)}.")


def train_readout_blocks(expanded, u: torch.Tensor, y: torch.Tensor, *, loss: str, caps, seeds: Sequence[int],
                         optimizer: str = "sgd", lr: float = 0.1, steps: int = 100, batch_size: int = 256,
                         V0: torch.Tensor | None = None) -> BlockTrainResult:
    """Projected zero-state training of ``B`` readout blocks at once (docstring of ``numerics.block_training``).

    Minimises each draw's ``R_S(V_b) = (1/M) sum_i l(f_top(u_bi + V_b phi(u_bi)), y_bi)``
    over ``||V_b||_F <= caps_b``, mini-batches of ``batch_size`` drawn with replacement
    (full batch when ``batch_size >= M``), the cap projected after every step.

    Args:
        expanded: :class:`~numerics.insertion.ExpandedModel` with a ``readout`` or
            ``linear`` block (its own ``V`` is not used).
        u: training states ``(B, M, *state)`` at ``expanded.at``; y: targets ``(B, M, ...)``.
        caps: a float or ``B`` floats; seeds: ``B`` mini-batch seeds.
        V0: initial blocks ``(B, d, r)`` (default 0: the function-preserving start).

    Returns:
        :class:`BlockTrainResult`.

    Raises:
        DivergenceError: a draw's loss became non-finite (names the step).
        ValueError: bad argument (names it, the allowed range and the value).
    """
    B, M = u.shape[0], u.shape[1]
    caps_t = torch.as_tensor(np.broadcast_to(np.asarray(caps, dtype=np.float64), (B,)).copy(), dtype=u.dtype)
    _check(optimizer, lr, steps, batch_size, u, y, seeds, caps_t)
    d, r = expanded.block.V.shape
    V = torch.zeros(B, d, r, dtype=u.dtype) if V0 is None else V0.detach().clone().to(u.dtype)
    V.requires_grad_(True)
    _project(V.data, caps_t)
    opt = _optimizer(optimizer, V, float(lr))
    bs = min(batch_size, M)
    idx = None if bs >= M else torch.stack(
        [torch.randint(M, (steps, bs), generator=torch.Generator().manual_seed(int(s))) for s in seeds])
    rows = torch.arange(B)[:, None]
    losses, projections = np.empty((B, steps)), np.zeros(B, dtype=np.int64)
    for step in range(steps):
        ub, yb = (u, y) if idx is None else (u[rows, idx[:, step]], y[rows, idx[:, step]])
        per = candidate_losses(expanded, ub, yb, V[:, None], loss)[:, 0].mean(dim=1)   # (B,)
        if not bool(torch.isfinite(per).all()):
            bad = int(torch.nonzero(~torch.isfinite(per))[0])
            raise DivergenceError(step, float(per[bad].detach()), float(lr))
        losses[:, step] = per.detach().numpy()
        opt.zero_grad(set_to_none=True)
        per.sum().backward()
        opt.step()
        projections += _project(V.data, caps_t).numpy()
    return BlockTrainResult(V.detach(), losses, projections, optimizer, float(lr), int(steps), bs)
