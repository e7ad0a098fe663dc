"""A network the project never saw: a 2-D post-norm residual CNN on scikit-learn's digits (issue 26).

Written as a user would write it (no ``site_names``, no project import): a stem convolution
to ``c`` channels, ``depth`` blocks ``x = norm(x + conv2(relu(conv1(x))))`` (``GroupNorm(4, c)``
or ``BatchNorm2d(c)``, used in eval mode), global average pooling and a linear head; inputs are
the 8x8 images with pixel values ``k / 16`` (quantised: many rows share most of their bytes).

:func:`trained` trains one in memory (Adam, full batches, about 10 s of one CPU thread) and
caches it per process only (nothing is written to disk). The splits of the 1797 digits are
fixed: ``train`` (1000), ``probe`` (400, for scans and role samples) and ``test`` (397).
"""
from __future__ import annotations

import functools

import torch
from torch import nn

from tests.zoo.nets import ResNet2d

__all__ = ["DigitsResNet", "digits", "metrics", "trained"]


class DigitsResNet(ResNet2d):
    """The zoo's 2-D post-norm ResNet (:class:`tests.zoo.nets.ResNet2d`: stem ``1 -> c``, ``depth`` blocks
    ``x = norm(x + conv2(relu(conv1(x))))``, global average pool, linear head, 10 classes); ``norm``:
    ``"group"`` (GroupNorm(4, c)) or ``"batch"`` (BatchNorm, used in eval mode)."""

    def __init__(self, c: int = 24, depth: int = 3, norm: str = "group"):
        super().__init__("gn" if norm == "group" else "bn", c, depth)


def digits(dtype=torch.float32) -> dict:
    """``{"train", "probe", "test"}``: ``(x (n, 1, 8, 8) with values k/16, y (n,) int64)`` in a fixed shuffled order."""
    from sklearn.datasets import load_digits

    d = load_digits()
    order = torch.randperm(len(d.target), generator=torch.Generator().manual_seed(0))
    x = (torch.as_tensor(d.images, dtype=torch.float64) / 16.0).to(dtype)[order][:, None]
    y = torch.as_tensor(d.target, dtype=torch.long)[order]
    return {"train": (x[:1000], y[:1000]), "probe": (x[1000:1400], y[1000:1400]), "test": (x[1400:], y[1400:])}


def _fit(net: nn.Module, x, y, steps: int, lr: float, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    net.train()
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (200,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
        opt.step()
        sched.step()
    net.eval()


@functools.lru_cache(maxsize=4)
def _trained(norm: str, steps: int, seed: int, dtype_name: str):
    torch.manual_seed(seed)
    dtype = getattr(torch, dtype_name)
    net = DigitsResNet(norm=norm).to(dtype)
    data = digits(dtype)
    with torch.enable_grad():
        _fit(net, *data["train"], steps, 3e-3, seed)
    return net, data


def trained(norm: str = "group", steps: int = 600, seed: int = 0, dtype=torch.float32):
    """``(model in eval mode, data splits)``; the model is a fresh copy each call (the trained one is cached per process)."""
    import copy

    net, data = _trained(norm, steps, seed, str(dtype).removeprefix("torch."))
    return copy.deepcopy(net), data


@torch.no_grad()
def metrics(net: nn.Module, xy) -> tuple[float, float]:
    """``(mean cross-entropy, accuracy)`` of ``net`` on ``xy``."""
    x, y = xy
    out = net(x)
    return float(nn.functional.cross_entropy(out.double(), y)), float((out.argmax(1) == y).double().mean())
