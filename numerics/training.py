"""Zero-state first-order training and the (C2) fallback rule (THEORY §2, §8).

* :func:`train` -- SGD, momentum SGD or Adam, all optimiser state initialised to 0
  (the *zero-state* protocol of THEORY §8), deterministic given ``seed``, optional
  Frobenius-norm caps enforced by projection after every step (the norm-capped class
  of THEORY §4), and a :class:`DivergenceError` naming the step on a non-finite loss.
* :func:`train_block_with_fallback` -- trains only the inserted block (the class
  ``H_new`` of THEORY §1) and enforces (C2): the returned model has
  ``R_S(f_new) <= R_S(f_jump)`` for every jumpboard given; if training ends worse on
  ``S`` than a jumpboard, the best jumpboard is returned and the report says so.

Losses (per sample, THEORY §1) come from :func:`numerics._numerics.per_sample_loss`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from numerics._numerics import LOSSES, per_sample_loss

OPTIMIZERS = ("sgd", "momentum", "adam")

__all__ = [
    "DivergenceError",
    "LOSSES",
    "OPTIMIZERS",
    "TrainResult",
    "check_optimiser_args",
    "empirical_risk",
    "project_to_caps",
    "train",
    "train_block_with_fallback",
]


class DivergenceError(FloatingPointError):
    """Training produced a non-finite loss; the message names the step and ``lr``."""

    def __init__(self, step: int, value: float, lr: float):
        self.step, self.value, self.lr = step, value, lr
        super().__init__(f"loss became {value} at step {step} (lr={lr:g}); lower lr or add caps.")


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train` (immutable).

    Attributes:
        losses: mini-batch loss before each step, shape ``(steps,)``.
        final_loss: full-sample empirical risk after training.
        params: trained values, name -> detached clone.
        projections: number of steps at which a cap was active.
    """

    losses: np.ndarray
    final_loss: float
    params: Mapping[str, torch.Tensor]
    optimizer: str
    lr: float
    steps: int
    batch_size: int
    seed: int
    projections: int


@torch.no_grad()
def empirical_risk(model: Callable, x: torch.Tensor, y: torch.Tensor, loss: str,
                   chunk: int = 1 << 16) -> float:
    """``R_n(f) = (1/n) sum_i l(f(x_i), y_i)`` on ``(x, y)``, evaluated in chunks."""
    total = 0.0
    for i in range(0, x.shape[0], chunk):
        total += float(per_sample_loss(model(x[i:i + chunk]), y[i:i + chunk], loss).sum())
    return total / x.shape[0]


def _as_named(params) -> dict[str, torch.Tensor]:
    if isinstance(params, Mapping):
        named = dict(params)
    else:
        named = {str(i): p for i, p in enumerate(params)}
    if not named:
        raise ValueError("params is empty, must hold at least one tensor to train.")
    return named


@torch.no_grad()
def project_to_caps(named: Mapping[str, torch.Tensor], caps: Mapping[str, float] | None) -> bool:
    """Project each capped tensor onto ``{||p||_F <= cap}``; True if any was rescaled."""
    active = False
    for name, cap in (caps or {}).items():
        norm = float(named[name].norm())
        if norm > cap:
            named[name].mul_(cap / norm)
            active = True
    return active


def check_optimiser_args(optimizer, lr, steps, batch_size, *, full_batch: bool = True) -> None:
    """The optimiser arguments every trainer takes (:func:`train`, the batched block training).

    Raises:
        ValueError: naming the argument, the allowed values and the value (``batch_size=None``,
            full batch, is allowed when ``full_batch``).
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer == {optimizer!r}, must be one of {list(OPTIMIZERS)}.")
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr == {lr!r}, must be a finite number > 0.")
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"steps == {steps!r}, must be an integer >= 0.")
    if (batch_size is not None or not full_batch) and not (isinstance(batch_size, int) and batch_size >= 1):
        raise ValueError(f"batch_size == {batch_size!r}, must be {'None or ' if full_batch else ''}an integer >= 1.")


def _check_train_args(named, caps, optimizer, lr, steps, loss, x, y, batch_size):
    check_optimiser_args(optimizer, lr, steps, batch_size)
    if loss not in LOSSES:
        raise ValueError(f"loss == {loss!r}, must be one of {list(LOSSES)}.")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"expected x (n, ...) and y (n, ...) with the same n, got {tuple(x.shape)} "
                         f"and {tuple(y.shape)}")
    for name, cap in (caps or {}).items():
        if name not in named:
            raise ValueError(f"caps key == {name!r}, must be one of {sorted(named)}.")
        if not (math.isfinite(cap) and cap >= 0):
            raise ValueError(f"caps[{name!r}] == {cap!r}, must be a finite number >= 0.")


def _make_optimizer(name: str, params: list[torch.Tensor], lr: float) -> torch.optim.Optimizer:
    # Fresh optimiser = all state (momentum buffers, Adam moments) at 0 (THEORY §8).
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    return torch.optim.Adam(params, lr=lr)


def _step(forward, xb, yb, loss: str, tensors: list, opt, step: int, lr) -> float:
    """One optimiser step on the batch ``(xb, yb)``; its mean loss (before the step)."""
    value = per_sample_loss(forward(xb), yb, loss).mean()
    if not torch.isfinite(value):
        raise DivergenceError(step, value.item(), float(lr))
    grads = torch.autograd.grad(value, tensors)
    for p, g in zip(tensors, grads):
        p.grad = g
    opt.step()
    return value.item()


def train(model: Callable, params, x: torch.Tensor, y: torch.Tensor, *, optimizer: str = "adam",
          lr: float = 1e-2, steps: int = 100, batch_size: int | None = None, seed: int = 0,
          loss: str = "squared", caps: Mapping[str, float] | None = None, compile: bool = False) -> TrainResult:
    """Minimise ``R_S(f) = (1/M) sum_i l(f(x_i), y_i)`` over ``params`` only.

    Mini-batches are drawn with a ``torch.Generator`` seeded by ``seed``, so two calls
    with the same arguments give identical tensors. Parameters not in ``params`` are
    never updated (their gradients are not even computed).

    Args:
        model: callable ``x (n, ...) -> outputs (n, k)``.
        params: tensors to train (``requires_grad``), a sequence or a name -> tensor map.
        x, y: training sample, ``(M, ...)`` and ``(M,)`` / ``(M, k)``.
        optimizer: ``"sgd"``, ``"momentum"`` (0.9) or ``"adam"``; zero initial state.
        batch_size: ``None`` (or ``>= M``) for full batch.
        caps: name -> Frobenius cap ``nu``; projected after each step (THEORY §4).
        compile: run the forward/backward through ``torch.compile`` (inductor fuses the
            normalisations' elementwise work: ~0.66 vs ~0.5 of matmul throughput for a
            w = 256 post-norm MLP step on 2 cores, see ``benchmarks/bench_numerics.py``;
            costs ~30 s of compilation, so it pays off for long runs only).

    Returns:
        :class:`TrainResult`.

    Raises:
        DivergenceError: the loss became nan/inf (names the step).
        ValueError: bad argument (names it, the allowed range and the value).
    """
    named = _as_named(params)
    _check_train_args(named, caps, optimizer, lr, steps, loss, x, y, batch_size)
    tensors = list(named.values())
    project_to_caps(named, caps)
    opt = _make_optimizer(optimizer, tensors, float(lr))
    n = x.shape[0]
    bs = n if batch_size is None or batch_size >= n else int(batch_size)
    gen = torch.Generator().manual_seed(int(seed))
    losses, projections = np.empty(steps), 0
    forward = torch.compile(model) if compile else model
    for step in range(steps):
        idx = torch.randint(n, (bs,), generator=gen) if bs < n else slice(None)
        losses[step] = _step(forward, x[idx], y[idx], loss, tensors, opt, step, lr)
        projections += project_to_caps(named, caps)
    final = empirical_risk(model, x, y, loss)
    if not math.isfinite(final):
        raise DivergenceError(steps, final, float(lr))
    return TrainResult(losses, final, {k: v.detach().clone() for k, v in named.items()}, optimizer,
                       float(lr), int(steps), bs, int(seed), projections)


def train_block_with_fallback(expanded: nn.Module, jumpboards: nn.Module | Sequence[nn.Module],
                              S: tuple[torch.Tensor, torch.Tensor], *, loss: str = "squared",
                              caps: Mapping[str, float] | None = None, **train_kw):
    """Train the inserted block on ``S`` and enforce (C2): ``R_S(f_new) <= R_S(f_jump)``.

    Only ``expanded.block_parameters()`` are trained (the class of THEORY §1). After
    training, ``f_new`` is the candidate with the smallest ``R_S`` among the trained model
    and the ``jumpboards``; so ``Delta_ERM = R_S(f_jump) - R_S(f_new) >= 0`` for each.

    Args:
        expanded: model with ``block_parameters()`` (a mapping or iterable of tensors),
            trained in place.
        jumpboards: one model or several (e.g. ``f~_S`` and ``f~_pop``), evaluated only.
        S: ``(x (M, ...), y (M,))``.
        caps: name -> Frobenius cap on the block parameters (names as in
            ``block_parameters()``, or ``"0", "1", ...`` for an iterable).
        **train_kw: forwarded to :func:`train`.

    Returns:
        ``(model, info)``: the selected model and a dict with ``R_S_trained``,
        ``R_S_jumpboards`` (list), ``returned`` (``"trained"`` or ``"jumpboard_<i>"``),
        ``jumpboard_returned`` (bool), ``delta_erm`` (list, one per jumpboard), and the
        :class:`TrainResult` under ``train``.
    """
    boards = [jumpboards] if isinstance(jumpboards, nn.Module) else list(jumpboards)
    if not boards:
        raise ValueError("jumpboards is empty, must hold at least one model.")
    x, y = S
    params = expanded.block_parameters()
    result = train(expanded, params, x, y, loss=loss, caps=caps, **train_kw)
    r_trained = result.final_loss
    r_boards = [empirical_risk(b, x, y, loss) for b in boards]
    best = int(np.argmin(r_boards))
    jump_wins = r_boards[best] < r_trained
    chosen = boards[best] if jump_wins else expanded
    r_new = min(r_trained, r_boards[best])
    info = {
        "R_S_trained": r_trained,
        "R_S_jumpboards": r_boards,
        "R_S_new": r_new,
        "returned": f"jumpboard_{best}" if jump_wins else "trained",
        "jumpboard_returned": bool(jump_wins),
        "delta_erm": [rb - r_new for rb in r_boards],
        "train": result,
    }
    return chosen, info
