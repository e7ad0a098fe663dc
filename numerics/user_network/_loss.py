"""Losses of the public API: a name or a user's callable returning per-sample losses (THEORY §1, §10).

* ``"cross_entropy"`` -- integer labels ``(n,)`` or probability rows ``(n, C)``; float labels
  of shape ``(n,)`` (class indices stored as floats), integer labels of another shape (e.g.
  ``(n, 2)``), a label outside ``[0, C)`` for a head of ``C`` logits and probability rows with a
  negative entry are refused with a clear error;
* ``"squared"`` -- ``||f(x) - y||^2`` per sample; **Choice**: integer labels ``(n,)`` with
  ``C > 1`` outputs are one-hot encoded (``y -> e_y``), so ``"squared"`` works on a
  classification data set as it is;
* a callable ``loss(output, y) -> (n,)`` -- called as is; a scalar (a mean) is refused, since
  per-sample losses are what the gradients of every site are made of.

Every loss value must be finite: a NaN or an inf (a user's loss, or an overflow) is refused with
the sample's index (:func:`check_per_sample`), never averaged into a NaN statistic.

Every loss is applied to the logits picked by ``output=`` (:mod:`numerics.user_network._outputs`) from a
model returning a tuple or a dict.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from numerics._numerics import per_sample_loss
from plumbing.validation import InputError

__all__ = ["LOSS_NAMES", "as_loss", "check_per_sample"]

LOSS_NAMES = ("cross_entropy", "squared")


def _squared(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if not y.is_floating_point() and out.dim() == 2 and out.shape[1] > 1 and y.dim() == 1:
        y = F.one_hot(y.long(), out.shape[1]).to(out.dtype)
    return per_sample_loss(out, y.to(out.dtype), "squared")


def _cross_entropy(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if y.is_floating_point() and tuple(y.shape) != tuple(out.shape):
        raise InputError("y", "integer class labels (e.g. y.long()) or probability rows of the logits' shape "
                         f"{tuple(out.shape)} for loss='cross_entropy'", f"float labels of shape {tuple(y.shape)}")
    if y.is_floating_point():
        negative = y < 0
        if bool(negative.any()):
            i = int(negative.reshape(y.shape[0], -1).any(dim=1).nonzero()[0, 0])
            raise InputError("y", "probability rows with entries >= 0 for loss='cross_entropy'",
                             f"a row with {float(y[i][negative[i]].reshape(-1)[0])} (sample {i} of a batch of {y.shape[0]})")
        return per_sample_loss(out, y, "cross_entropy")
    if out.dim() < 2 or tuple(y.shape) != tuple(out.shape[:-1]):
        raise InputError("y", f"integer class labels of shape {tuple(out.shape[:-1])} for logits of shape "
                         f"{tuple(out.shape)} (loss='cross_entropy')", f"integer labels of shape {tuple(y.shape)}")
    C = out.shape[-1]
    outside = ((y < 0) | (y >= C)) & (y != -100)      # -100: torch's ignore_index, kept as torch reads it
    if bool(outside.any()):
        i = int(outside.reshape(y.shape[0], -1).any(dim=1).nonzero()[0, 0])
        raise InputError("y", f"class indices in [0, {C - 1}] for a head of {C} logit{'s' if C > 1 else ''} "
                         "(loss='cross_entropy')", f"{int(y[i][outside[i]].reshape(-1)[0])} (sample {i} of a batch of {y.shape[0]})")
    return per_sample_loss(out, y, "cross_entropy")


def as_loss(loss, output=None) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The per-sample loss ``(model output, y) -> (n,)`` for a name or a callable, on the logits
    that ``output`` picks (None: the output itself, refused if it is a tuple or a dict).

    Raises:
        ValueError: an unknown name or a bad ``output``. TypeError: neither a name nor a callable.
    """
    from numerics.user_network._outputs import check_output_arg, with_output

    check_output_arg(output)
    if isinstance(loss, str):
        if loss not in LOSS_NAMES:
            raise ValueError(f"loss == {loss!r}, must be one of {list(LOSS_NAMES)} or a callable.")
        return with_output(_cross_entropy if loss == "cross_entropy" else _squared, output)
    if not callable(loss):
        raise TypeError(f"loss == {loss!r}, must be one of {list(LOSS_NAMES)} or a callable (output, y) -> (n,).")
    return with_output(loss, output)


def check_per_sample(values, n: int, loss, first: int | None = None) -> torch.Tensor:
    """``values`` if it is a finite tensor of shape ``(n,)`` (``first``: the index of its first sample, for errors).

    Raises:
        ValueError: names the loss and the shape it returned, or the first sample whose loss is NaN or inf.
    """
    shape = tuple(values.shape) if isinstance(values, torch.Tensor) else type(values).__name__
    name = getattr(loss, '__name__', loss)
    if shape != (n,):
        raise ValueError(f"loss {name!r} returned shape {shape} on a batch of {n}, "
                         f"must return per-sample losses of shape ({n},) (use reduction='none').")
    finite = torch.isfinite(values.detach())
    if not bool(finite.all()):
        i = int((~finite).nonzero()[0, 0])
        at = f"sample {first + i}" if first is not None else f"sample {i} of a batch of {n}"
        raise ValueError(f"loss {name!r} returned {float(values.detach()[i])} at {at}, must be finite "
                         "(a NaN or inf loss is refused, never averaged into the scan's statistics).")
    return values
