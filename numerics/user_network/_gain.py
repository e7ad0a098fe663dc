"""The immediate gain of the suggested insertion, with a confidence interval (THEORY §3, §8, §10).

Which sample fixes what (every one disjoint from the others):

* the **probe** fixes the site (``best_site``) and the cross-gradient ``G_f`` of each family;
* the **step sample** (the first half of the curvature sample) fixes ``beta_f`` and the
  jumpboard step ``V = -(slope / beta_f) G_f / ||G_f||`` (:func:`depthcert.insert_block`);
* (:mod:`numerics.user_network._suggestion`) the step sample also chooses the one candidate suggested
  (``rep.suggestion``), which the gain sample then checks;
* the **gain sample** (the second half of the curvature sample, **Choice**: halves) measures
  the per-sample gains ``D_i = l_i(f) - l_i(f + h_V)`` of exactly the block that
  ``dc.insert_block(model, best_site, family, init="jumpboard", scan=rep)`` inserts; their
  mean and standard deviation give the Student-``t`` interval of
  :func:`numerics.user_network._verdict.t_interval` (each family's interval at ``level``).
"""
from __future__ import annotations

import copy
import math

import torch
from torch import nn

from numerics.user_network._attach import attach_unit
from numerics.user_network._insert import jumpboard_block
from numerics.user_network._loss import check_per_sample
from numerics.user_network._scan import eval_mode
from numerics.user_network._verdict import t_interval

__all__ = ["insertion_record", "per_sample_gains", "per_sample_losses", "split_curvature"]


def split_curvature(curv) -> tuple[tuple, tuple | None]:
    """``(step sample, gain sample)``: the first ``n - n // 2`` and the last ``n // 2`` samples
    of the curvature sample (the gain sample None when ``n // 2 < 2``)."""
    x, y = curv
    n = x.shape[0]
    k = n - n // 2
    if n // 2 < 2:
        return (x, y), None
    return (x[:k], y[:k]), (x[k:], y[k:])


@torch.no_grad()
def per_sample_gains(old: nn.Module, new: nn.Module, x: torch.Tensor, y: torch.Tensor, loss,
                     batch_size: int = 256, old_losses: torch.Tensor | None = None) -> torch.Tensor:
    """``D_i = l_i(old) - l_i(new)``, shape ``(n,)``, float64 (both models in eval mode);
    ``old_losses``: ``l_i(old)`` if already measured (:func:`per_sample_losses`)."""
    if old_losses is None:
        old_losses = per_sample_losses(old, x, y, loss, batch_size)
    return old_losses - per_sample_losses(new, x, y, loss, batch_size)


@torch.no_grad()
def per_sample_losses(net: nn.Module, x: torch.Tensor, y: torch.Tensor, loss, batch_size: int = 256) -> torch.Tensor:
    """``l_i(net)``, shape ``(n,)``, float64 (in eval mode)."""
    out = []
    with eval_mode(net):
        for i in range(0, x.shape[0], batch_size):
            xb, yb = x[i:i + batch_size], y[i:i + batch_size]
            out.append(check_per_sample(loss(net(xb), yb), xb.shape[0], loss).double())
    return torch.cat(out)


def _family_gain(model, site, proto, G, family, seed, step, gain, loss, level, shared) -> dict:
    """One family's jumpboard: ``beta_f`` and ``V`` on the step sample (on ``model``, before the copy),
    its per-sample gains on the gain sample in the copy with the block attached. ``shared``: the
    recording of ``model`` before the site and ``model``'s gain-sample losses, measured once."""
    info: dict = {}
    block, beta = jumpboard_block(model, site, proto, G, family, "jumpboard", seed, step, loss, shared["replay"], info,
                                  shared["known"])
    net = copy.deepcopy(model)
    attach_unit(net, site, block)
    D = per_sample_gains(model, net, gain[0], gain[1], loss, old_losses=shared["old_gain"])
    n = int(D.numel())
    mean, sd = float(D.mean()), float(D.std(unbiased=True))
    lo, hi = t_interval(mean, sd, n, level) if math.isfinite(sd) else (-math.inf, math.inf)
    in_sample = info.get("gain_step")   # chooses the candidate: measured at the step on the step sample
    if in_sample is None:
        in_sample = float(per_sample_gains(model, net, step[0], step[1], loss).mean())
    return {"gain": mean, "sd": sd, "lo": lo, "hi": hi, "beta": beta, "V_norm": float(block.V.detach().norm()),
            "gain_step": in_sample, "_V": block.V.detach().clone()}


def insertion_record(model, site: str, proto, G, families, seed: int, step, gain, loss, level: float,
                     known=None, replay=None) -> dict | None:
    """The suggested insertion at ``site``: per family, the jumpboard block's immediate gain on the
    gain sample (``gain``: mean, ``sd``, ``lo``/``hi``: the level-``(1 - level)`` interval of the
    population gain); None when there is no gain sample.

    Args:
        proto: the site's scanned :class:`~numerics.families.ProtocolBlock`; ``G``: its ``(d, r)``
            cross-gradient on the probe. step, gain: ``(x, y)`` samples (docstring of ``numerics.user_network._gain``).
        replay: a :class:`numerics._replay.SiteReplay` of ``(model, site)`` on ``step`` to reuse (or None).
        known: ``(R(0), G_x)``: the step sample's mean loss by the path of every ``R(tau)``
            (:func:`numerics.estimators.site_loss`) and the site's cross-gradient on it (or None).

    Each family's record holds ``_V``, the checked block's ``V`` (``dc.saturation`` moves it to the report).
    """
    if gain is None:
        return None
    fams = [f for f in families if f in proto.slices]
    from numerics._replay import SiteReplay

    replay = replay if replay is not None else SiteReplay(model, site)   # (model, site, step) recorded once
    shared = {"replay": replay, "old_gain": per_sample_losses(model, gain[0], gain[1], loss) if fams else None,
              "known": known}
    return {"site": site, "init": "jumpboard", "level": level, "n_gain": int(gain[0].shape[0]),
            "n_step": int(step[0].shape[0]),
            "source": "probe: site and G_f; step sample (first half of the curvature sample): beta_f and V; "
                      "gain sample (its second half, disjoint): the per-sample gains and the t interval",
            "families": {f: _family_gain(model, site, proto, G, f, seed, step, gain, loss, level, shared)
                         for f in fams}}
