"""``dc.grow``: scan -> insert at the best site -> train, until saturated within ``eps`` (THEORY §3, §8).

Each step scans a copy of the current network on ``probe`` (:func:`depthcert.saturation`);
the stop rule is the verdict **"saturated"** (every site's upper confidence bound on the
first-order gain below ``eps``) or the block budget ``max_blocks``. Otherwise the jumpboard
block of the scan's best site is inserted (:func:`depthcert.insert_block`; a copy) and every
parameter is trained for ``steps`` Adam steps on ``train``. **Choice** (ours): an
"undetermined" scan does not stop growth (absence of evidence is not saturation); the
caller's model is never changed.
"""
from __future__ import annotations

import copy
import dataclasses
import itertools
from typing import Any

import torch

from depthcert.api._data import as_stream
from depthcert.api._insert import insert_block
from depthcert.api._loss import as_loss
from depthcert.api._saturation import check_model, saturation
from depthcert.api._verdict import DEFAULT_EPS

__all__ = ["GrowthResult", "grow"]


@dataclasses.dataclass(frozen=True)
class GrowthResult:
    """The grown model and one trajectory row per scan.

    Attributes:
        model: the grown copy (eval mode).
        trajectory: ``pandas.DataFrame`` with ``step, blocks_added, verdict, best_site,
            predicted_gain, certified_gain, gain_ucb, immediate_gain, probe_loss, stop``;
            ``immediate_gain`` is the loss drop of the previous insertion on the first 4096
            samples of ``train`` (before training).
        stop: why growth stopped (``"saturated"`` or ``"max_blocks"``).
        reports: the :class:`SaturationReport` of every step.
    """

    model: Any
    trajectory: Any
    stop: str
    reports: list


@torch.no_grad()
def _mean_loss(model, stream, loss) -> float:
    total = sum(float(loss(model(x), y).double().sum()) for x, y in stream)
    return total / len(stream)


def _train(model, stream, loss, steps: int, lr: float) -> None:
    if steps == 0:
        return
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
    model.train()
    done = 0
    while done < steps:              # pass after pass over the stream: nothing is kept between batches
        for x, y in stream:
            opt.zero_grad()
            loss(model(x), y).mean().backward()
            opt.step()
            done += 1
            if done == steps:
                break
    model.eval()


def grow(model, train, probe, loss="cross_entropy", max_blocks: int = 3, level: float = 0.05, *,
         eps: float = DEFAULT_EPS, sites="blocks.*", layout=None, family: str = "readout", steps: int = 200,
         lr: float = 1e-3, seed: int = 0, batch_size: int = 256, **scan_kw) -> GrowthResult:
    """Grow ``model`` by at most ``max_blocks`` blocks (module docstring).

    Args:
        model: any ``nn.Module`` (never changed).
        train: data for training after each insertion (any accepted kind of data).
        probe: data for the scans (independent of ``train``; its first part is the curvature sample).
        loss, level, eps, sites, layout: as in :func:`depthcert.saturation`.
        max_blocks: the block budget (>= 0).
        family: the inserted blocks' family. steps, lr: Adam steps and step size after each insertion.
        scan_kw: more keywords for :func:`depthcert.saturation`.

    Returns:
        A :class:`GrowthResult`.

    Raises:
        TypeError, ValueError: bad arguments (named).
    """
    check_model(model)
    if not (isinstance(max_blocks, int) and max_blocks >= 0):
        raise ValueError(f"max_blocks == {max_blocks!r}, must be an int >= 0.")
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"steps == {steps!r}, must be an int >= 0.")
    loss_fn, net = as_loss(loss), copy.deepcopy(model).eval()
    train_s, probe_s = as_stream(train, "train", net, batch_size), as_stream(probe, "probe", net, batch_size)
    rows, reports, gain = [], [], None
    for k in itertools.count():
        rep = saturation(net, probe_s, loss, sites, layout, level, seed + k, eps=eps, batch_size=batch_size,
                         **scan_kw)
        reports.append(rep)
        stop = "saturated" if rep.saturated else ("max_blocks" if k >= max_blocks else None)
        rows.append({"step": k, "blocks_added": k, "verdict": rep.verdict, "best_site": rep.best_site,
                     "layout": rep.site(rep.best_site)["layout"],
                     "predicted_gain": rep.predicted_gain, "certified_gain": rep.certified_gain,
                     "gain_ucb": rep.gain_ucb, "immediate_gain": gain,
                     "probe_loss": _mean_loss(net, probe_s, loss_fn), "stop": stop})
        if stop:
            break
        held = train_s.part(0, min(len(train_s), 4096))   # independent of the probe that fixed V
        before = _mean_loss(net, held, loss_fn)
        net = insert_block(net, rep.best_site, family=family, init="jumpboard", scan=rep)
        gain = before - _mean_loss(net, held, loss_fn)
        _train(net, train_s, loss_fn, steps, lr)
    import pandas as pd

    return GrowthResult(net, pd.DataFrame(rows), stop, reports)
