"""Torch side of trial insertions: an arm trained step by step, and ShortGPT's block influence.

* :class:`TrainingArm` -- one candidate network (a copy with a block inserted, or with an existing
  layer to tune) and the parameters it trains; :meth:`TrainingArm.advance` trains it up to a
  cumulative step count with one Adam state kept across calls (so "k steps" is the same run
  whether it is read at one horizon or several). Every arm of one seed draws its minibatches
  (with replacement) from the same generator seed, so the arms see the same samples in the same
  order (**Choice**: paired arms). The network trains in eval mode (batch-norm statistics frozen,
  dropout off), as :func:`depthcert.grow` does. While it trains, the network's other parameters are
  set ``requires_grad=False`` (restored after): the gradients of the arm's own parameters are the same,
  and backward stops below them.
* :func:`block_influence` -- ShortGPT's score (Men et al. 2024): ``1 - mean cos(input, output)`` of
  the module at a site, the cosine taken per token (the feature vector at each position of the
  site's layout), averaged over positions and samples.
"""
from __future__ import annotations

import math
from typing import Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from numerics.families import to_tokens
from numerics.sites import module_at

__all__ = ["TrainingArm", "block_influence"]


class TrainingArm:
    """A network and the parameters trained on the fit sample ``(x, y)``, step by step.

    Args:
        net: the arm's network (its own copy; trained in place).
        params: the parameters this arm trains (empty: an arm that never trains, cost 0).
        x, y: the fit sample (minibatches of ``batch_size`` drawn with replacement).
        loss: per-sample loss ``(output, y) -> (n,)``.
        lr: Adam's learning rate. seed: the minibatch generator's seed.

    Example:
        >>> net = nn.Linear(2, 1)
        >>> x, y = torch.randn(32, 2), torch.randn(32)
        >>> arm = TrainingArm(net, net.parameters(), x, y, lambda o, t: (o[:, 0] - t) ** 2, lr=0.1, batch_size=8, seed=0)
        >>> arm.advance(5), arm.steps, arm.n_params
        (5, 5, 3)
    """

    def __init__(self, net: nn.Module, params: Iterable[torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 loss: Callable, *, lr: float, batch_size: int, seed: int):
        self.net, self.x, self.y, self.loss = net, x, y, loss
        self.params = [p for p in params if p.requires_grad]
        self.n_params = int(sum(p.numel() for p in self.params))
        self.batch_size = int(min(batch_size, x.shape[0]))
        self.gen = torch.Generator().manual_seed(int(seed))
        self.opt = torch.optim.Adam(self.params, lr=float(lr)) if self.params else None
        self.steps = 0
        self.train_losses: list[float] = []

    def advance(self, to_steps: int) -> int:
        """Train until ``to_steps`` steps in all (no-op if already there); returns ``steps``.

        Raises:
            FloatingPointError: a non-finite training loss (names the step).
        """
        if self.opt is None:
            return self.steps
        was = {m: m.training for m in self.net.modules()}
        self.net.eval()
        mine = {id(p) for p in self.params}
        frozen = [p for p in self.net.parameters() if p.requires_grad and id(p) not in mine]
        for p in frozen:        # no gradient for what this arm does not train (the same steps, less backward)
            p.requires_grad_(False)
        try:
            while self.steps < to_steps:
                idx = torch.randint(0, self.x.shape[0], (self.batch_size,), generator=self.gen).to(self.x.device)
                value = self.loss(self.net(self.x[idx]), self.y[idx]).mean()
                if not math.isfinite(float(value.detach())):
                    raise FloatingPointError(f"training loss {float(value.detach())} at step {self.steps}, must be finite "
                                             "(lower lr).")
                self.opt.zero_grad(set_to_none=True)
                value.backward()
                self.opt.step()
                self.train_losses.append(float(value.detach()))
                self.steps += 1
        finally:
            for m, flag in was.items():
                m.training = flag
            for p in frozen:
                p.requires_grad_(True)
        return self.steps


def _first_tensor(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


@torch.no_grad()
def block_influence(model: nn.Module, sites: Sequence[str], x: torch.Tensor, layouts: Mapping[str, str | None],
                    batch_size: int = 256) -> dict[str, float]:
    """``{site: 1 - mean cosine(input, output)}`` of each site's module on ``x`` (ShortGPT's block
    influence; nan where the module changes the state's shape). ``layouts``: each site's state layout
    (the cosine is over one token's features). The model is run in eval mode and not changed.

    Example:
        >>> net = nn.Sequential(nn.Identity(), nn.Linear(3, 3))
        >>> with torch.no_grad():
        ...     _ = net[1].weight.copy_(-torch.eye(3)); _ = net[1].bias.zero_()
        >>> bi = block_influence(net, ["0", "1"], torch.randn(8, 3), {"0": "ND", "1": "ND"})
        >>> round(bi["0"], 6), round(bi["1"], 6)
        (0.0, 2.0)
    """
    sums = {s: 0.0 for s in sites}
    counts = {s: 0 for s in sites}
    bad: set = set()
    handles = []
    for s in sites:
        def hook(mod, args, kwargs, out, s=s):
            inp, o = _first_tensor(args, kwargs), out[0] if isinstance(out, tuple) else out
            if inp is None or not isinstance(o, torch.Tensor) or inp.shape != o.shape:
                bad.add(s)
                return
            a, b = to_tokens(inp.double(), layouts.get(s)), to_tokens(o.double(), layouts.get(s))
            cos = torch.nn.functional.cosine_similarity(a, b, dim=-1)
            sums[s] += float(cos.sum())
            counts[s] += cos.numel()
        handles.append(module_at(model, s).register_forward_hook(hook, with_kwargs=True))
    flags = {m: m.training for m in model.modules()}
    model.eval()
    try:
        for i in range(0, x.shape[0], batch_size):
            model(x[i:i + batch_size])
    finally:
        for h in handles:
            h.remove()
        for m, flag in flags.items():
            m.training = flag
    return {s: (math.nan if s in bad or not counts[s] else 1.0 - sums[s] / counts[s]) for s in sites}
