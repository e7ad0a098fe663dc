"""``dc.grow``: scan -> insert at the best site -> train, until saturated within ``eps`` (THEORY §3, §8).

Each step ``k`` scans the current network on its own part of ``probe``
(:func:`depthcert.saturation`); the stop rule is the verdict **"saturated"** (every site's upper
confidence bound on the first-order gain below ``eps``) or the block budget ``max_blocks``.
Otherwise a block is inserted at the scan's best site (:func:`depthcert.insert_block`; a copy):
the scan's suggestion (a jumpboard checked on its gain sample) when there is one, else a
function-preserving ``init="zero"`` block (column ``init``; a refused jumpboard is never
forced), and then trained for ``steps`` Adam steps on ``train``.

**Choice** (``trainable``, default ``"new"``): only the inserted blocks' parameters
(:func:`depthcert.new_parameters`) are trained; ``"all"``: every parameter. In both the network
is trained in **eval mode**: batch-norm layers keep the running statistics the user's model
came with (frozen, never updated) and dropout is off, so each step's scan sees the network
that was trained (per-sample gradients need eval-mode batch-norm anyway). Every original
parameter keeps its name (:func:`depthcert.insert_block`).

Sites: each step scans the sites the user named (``sites``, resolved once on the user's model),
not inside the blocks grow inserted -- a site's stream already includes them; with
``scan_inserted=True`` the inserted blocks are sites too.

**Choice** (ours): ``probe`` is cut into ``max_blocks + 1`` disjoint contiguous folds of
``n // (max_blocks + 1)`` samples, fold ``k`` for step ``k`` (columns ``probe_from``,
``probe_to``): the network scanned at step ``k`` was chosen by the folds of steps ``< k``, so
reusing one probe would leave the stop rule's level valid for the first step only; with a
fresh fold per step it holds at every step. An "undetermined" scan does not stop growth
(absence of evidence is not saturation); the caller's model is never changed; a model with
batch-norm in train mode is refused, as by :func:`depthcert.saturation`.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

from numerics.user_network._data import as_stream
from numerics.user_network._insert import insert_block
from numerics.user_network._loss import as_loss
from numerics.user_network._saturation import check_model, saturation
from numerics.user_network._verdict import DEFAULT_EPS
from numerics.distributed import refuse as refuse_distributed

__all__ = ["GrowthResult", "grow"]


@dataclasses.dataclass(frozen=True)
class GrowthResult:
    """The answer of :func:`depthcert.grow`: the grown model and one trajectory row per scan.

    Attributes
    ----------
    model : torch.nn.Module
        The grown copy (eval mode).
    trajectory : pandas.DataFrame
        ``step, blocks_added, verdict, best_site, predicted_gain, certified_gain, gain_ucb,
        immediate_gain, probe_loss, probe_from, probe_to, stop, inserted``; ``immediate_gain`` is the loss drop
        of the previous insertion on the first 4096 samples of ``train`` (before training); step
        ``k`` scanned the probe samples ``[probe_from, probe_to)`` (its own fold), and
        ``probe_loss`` is their mean loss; ``inserted``: ``"jumpboard"`` (the scan's
        checked suggestion) or ``"zero"`` (a Hugging Face decoder's real layer: ``"copy_zero"`` or ``"zero"``).
    stop : str
        Why growth stopped: ``"saturated"`` or ``"max_blocks"``.
    reports : list of SaturationReport
        The report of every step.
    notes : list of str
        Which sample fixed what.

    Notes
    -----
    **Not** :class:`numerics.studies.growth.GrowthResult`, the growth study's stored
    ``trajectory.json`` as a typed record (no network: a file's content); this one is the live answer
    of :func:`depthcert.grow`, holding the grown network itself.

    Examples
    --------
    ``dc.grow`` returns one (its page runs it on a network); the record itself:

        >>> import pandas as pd
        >>> from torch import nn
        >>> import depthcert as dc
        >>> g = dc.GrowthResult(model=nn.Identity(), trajectory=pd.DataFrame({"step": [0], "verdict": ["saturated"]}),
        ...                     stop="saturated", reports=[])
        >>> g.stop, list(g.trajectory["verdict"]), g.notes
        ('saturated', ['saturated'], [])
    """

    model: Any
    trajectory: Any
    stop: str
    reports: list
    notes: list = dataclasses.field(default_factory=list)


@torch.no_grad()
def _mean_loss(model, stream, loss) -> float:
    total = sum(float(loss(model(x), y).double().sum()) for x, y in stream)
    return total / len(stream)


TRAIN = ("new", "all")


def _train(model, stream, loss, steps: int, lr: float, train: str = "new") -> None:
    """``steps`` Adam steps in eval mode on the new blocks' (``"new"``) or every (``"all"``) parameter."""
    from numerics.user_network._attach import new_parameters

    params = list(new_parameters(model).values()) if train == "new" else list(model.parameters())
    params = [p for p in params if p.requires_grad]
    if steps == 0 or not params:
        return
    opt = torch.optim.Adam(params, lr=lr)
    model.eval()   # batch-norm statistics frozen, dropout off (docstring of numerics.user_network._growth)
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


def _row(k: int, rep, gain, probe_loss: float, fold: tuple[int, int], stop) -> dict:
    return {"step": k, "blocks_added": k, "verdict": rep.verdict, "best_site": rep.best_site, "inserted": None,
            "layout": rep.site(rep.best_site)["layout"], "predicted_gain": rep.predicted_gain,
            "certified_gain": rep.certified_gain, "gain_ucb": rep.gain_ucb, "immediate_gain": gain,
            "probe_loss": probe_loss, "probe_from": fold[0], "probe_to": fold[1], "stop": stop}


def _folds(probe_s, max_blocks: int) -> list[tuple[int, int]]:
    """``max_blocks + 1`` disjoint contiguous ``[a, b)`` folds of the probe (docstring of ``numerics.user_network._growth``)."""
    k = max_blocks + 1
    size = len(probe_s) // k
    if size < 8:
        raise ValueError(f"probe has {len(probe_s)} samples, must have >= {8 * k} (max_blocks + 1 == {k} disjoint "
                         "folds of >= 8, one per growth step).")
    return [(i * size, (i + 1) * size) for i in range(k)]


def _scan_fold(k: int, fold: tuple[int, int], n_folds: int, scan):
    """``scan()``; a sample-size error names the fold it was given (a user sees their probe's size, not the fold's)."""
    try:
        return scan()
    except ValueError as exc:
        if "samples" not in str(exc):
            raise
        raise ValueError(f"growth step {k} scans probe[{fold[0]}:{fold[1]}], its own fold of the probe (max_blocks + 1 "
                         f"== {n_folds} disjoint folds): {exc} Give more probe samples or a smaller max_blocks.") from None


def _insert(net, rep, family, layer_init: str = "copy_zero"):
    """``(grown copy, init)``: a real decoder layer at a Hugging Face decoder's layer site (``layer_init``),
    else the scan's checked jumpboard, else a zero-init block (never forced)."""
    from numerics.user_network._insert import real_layer
    from numerics.user_network._suggestion import RefusedInsertion
    from numerics.interop.hf_layers import is_layer_site

    if is_layer_site(net, rep.best_site):
        return real_layer(net, rep.best_site, layer_init), layer_init
    try:
        return insert_block(net, rep.best_site, family=family, init="jumpboard", scan=rep), "jumpboard"
    except RefusedInsertion:
        return insert_block(net, rep.best_site, family=family or "readout", init="zero", scan=rep), "zero"


def _check_grow(model, max_blocks, steps, trainable, layer_init="copy_zero") -> None:
    from numerics.user_network._insert import LAYER_INITS
    from numerics.sites import check_no_batchnorm

    check_model(model)
    check_no_batchnorm(model, "model")   # as dc.saturation: the copy's eval() must not hide it
    half = sorted({str(p.dtype) for p in model.parameters() if p.dtype == torch.float16})
    if half and isinstance(steps, int) and steps > 0:   # Adam's eps (1e-8) is 0 in float16: a new block's weights would turn NaN after one step
        raise ValueError(f"model's parameters are {half[0]}, must be float32 or float64 to grow (Adam's steps "
                         "underflow in float16 and the new blocks' weights become NaN); pass model.float().")
    if not (isinstance(max_blocks, int) and max_blocks >= 0):
        raise ValueError(f"max_blocks == {max_blocks!r}, must be an int >= 0.")
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"steps == {steps!r}, must be an int >= 0.")
    from plumbing.sizes import SECONDS_PER_STEP
    from plumbing.machine import check_work

    if steps:   # steps after each of max_blocks insertions: refused when it can never finish
        check_work("steps", steps, SECONDS_PER_STEP * max(max_blocks, 1),
                   f"Adam step (done after each of max_blocks = {max_blocks} insertions)")
    if trainable not in TRAIN:
        raise ValueError(f"trainable == {trainable!r}, must be one of {list(TRAIN)} (the new blocks' parameters, "
                         "or every parameter).")
    if layer_init not in LAYER_INITS:
        raise ValueError(f"layer_init == {layer_init!r}, must be one of {list(LAYER_INITS)}.")


def _sites(net, sites, probe_s, scan_inserted: bool):
    """The user's sites resolved once on the user's model (plus the inserted blocks' when asked).

    A Hugging Face decoder grown by real layers (:mod:`numerics.interop.hf_layers`): the names
    follow the model's renumbering (:func:`_shifted`), so a site stays the same stream -- after
    the layers inserted there; ``scan_inserted``: the user's pattern resolved on the grown model."""
    from numerics.user_network._attach import unit_sites
    from numerics.user_network._outputs import resolve_named_sites
    from numerics.interop.hf_layers import supported

    x = probe_s.take(2)[0]
    names = resolve_named_sites(net, sites, x)
    if supported(net):
        return (lambda m: resolve_named_sites(m, sites, x)) if scan_inserted else (lambda m: _shifted(m, names))
    return (lambda m: names + [u for u in unit_sites(m) if u not in names]) if scan_inserted else (lambda m: names)


def _shifted(model, names: list[str]) -> list[str]:
    """``names`` of the user's model renamed as ``model``'s real inserted layers renumbered them: a layer
    site ``k`` is ``k`` plus the number of layers inserted at or below it (the stream after them)."""
    from numerics.interop.hf_layers import INSERTED, layer_list_path

    added, path = sorted(getattr(model, INSERTED, [])), layer_list_path(model)
    out = []
    for name in names:
        head, _, k = name.rpartition(".")
        if head != path or not k.isdigit():
            out.append(name)
            continue
        j = int(k)
        for a in added:   # inserted layer a sits right after the (already shifted) layer a - 1
            if a <= j + 1:
                j += 1
        out.append(f"{path}.{j}")
    return out


def grow(model, train, probe, loss="cross_entropy", max_blocks: int = 3, level: float = 0.05, *,
         eps: float = DEFAULT_EPS, sites="blocks.*", layout=None, family: str | None = None, steps: int = 200,
         lr: float = 1e-3, seed: int = 0, batch_size: int = 256, trainable: str = "new", scan_inserted: bool = False,
         output=None, layer_init: str = "copy_zero", **scan_kw) -> GrowthResult:
    """Grow ``model`` by at most ``max_blocks`` blocks: scan, insert at the best site, train; repeat.

    Each step scans the current network on its own fold of ``probe`` (:func:`depthcert.saturation`)
    and stops when the verdict is ``"saturated"`` or the budget is spent; otherwise it inserts the
    scan's checked suggestion at the best site (:func:`depthcert.insert_block`; a function-preserving
    ``init="zero"`` block when the scan suggests nothing: a refused jumpboard is never forced) and trains
    it for ``steps`` Adam steps on ``train`` (``trainable``). ``probe`` is cut into ``max_blocks + 1`` disjoint folds, one
    per step, so that the stop rule's level holds at every step (**Choice**). An "undetermined" scan
    does not stop growth.

    **Not** :func:`numerics.studies.growth.grow`, the growth study (a config in, a resumable
    ``trajectory.json`` out, on the project's generated tasks and reference networks, with its own stop
    rules ``certified_gain_below_2eps_M`` and ``max_depth``); this one grows the caller's network on the
    samples it is given and returns it.

    Parameters
    ----------
    model : torch.nn.Module
        Any network (never changed; batch-norm only in eval mode).
    train : data
        Data for training after each insertion (any kind :func:`depthcert.saturation` takes).
    probe : data
        Data for the scans, independent of ``train`` (at least ``8 (max_blocks + 1)`` samples).
    loss : str or callable, default "cross_entropy"
        As in :func:`depthcert.saturation`.
    max_blocks : int, default 3
        The block budget (>= 0).
    level : float, default 0.05
        The level of each step's verdict.
    eps : float, keyword-only, default DEFAULT_EPS (1e-3)
        The tolerance of "saturated within eps".
    sites, layout, output : keyword-only
        As in :func:`depthcert.saturation` (default ``"blocks.*"``, None, None).
    family : str or None, keyword-only, default None
        The inserted blocks' family (None: each scan's suggestion); a residual block family of
        :data:`bounds.families.RESIDUAL_FAMILIES` stands for its tangent space's scanned family, as in
        :func:`depthcert.insert_block`.
    steps : int, keyword-only, default 200
        Adam steps after each insertion (>= 0).
    lr : float, keyword-only, default 1e-3
        Adam's step size.
    seed : int, keyword-only, default 0
        Step ``k`` scans with seed ``seed + k``.
    batch_size : int, keyword-only, default 256
        Samples per batch.
    trainable : {"new", "all"}, keyword-only, default "new"
        Train only the inserted blocks (:func:`depthcert.new_parameters`) or every parameter; in eval
        mode either way (batch-norm statistics frozen, dropout off).
    scan_inserted : bool, keyword-only, default False
        Also scan at the blocks grow inserted (default: only the user's ``sites``).
    layer_init : {"copy_zero", "zero"}, keyword-only, default "copy_zero"
        A Hugging Face decoder (``llama``, ``mistral``, ``qwen2``, ``gpt2``, ``gpt_neox``) whose best
        site is a decoder layer grows by *real layers* (:func:`depthcert.insert_block`'s Notes): a copy
        of that layer (``"copy_zero"``, LLaMA-Pro's) or a fresh one (``"zero"``), output projections zero;
        the answer's ``model`` is then of the model's own class (``save_pretrained`` writes it) and the
        user's site names follow its renumbering.
    **scan_kw
        More keywords for :func:`depthcert.saturation` (``curvature_n``, ``width``, ...).

    Returns
    -------
    GrowthResult
        The grown copy (``model``), one ``trajectory`` row per scan, the ``stop`` reason and every
        step's report.

    Raises
    ------
    TypeError, ValueError
        Bad arguments (named with the allowed values); batch-norm in train mode.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
        >>> def draw(n, seed):                      # one independent sample per role
        ...     g = torch.Generator().manual_seed(seed)
        ...     x = torch.randn(n, 3, generator=g, dtype=torch.float64)
        ...     return x, (x[:, 0] > 0).long()
        >>> g = dc.grow(net, train=draw(512, seed=1), probe=draw(512, seed=2), sites=["1"], max_blocks=1,
        ...             steps=5, curvature_n=64)
        >>> g.stop in ("saturated", "max_blocks"), len(g.trajectory) <= 2, g.model is net
        (True, True, False)
    """
    refuse_distributed("dc.grow", "its training steps and the held-out loss of each insertion are not reduced across ranks")
    _check_grow(model, max_blocks, steps, trainable, layer_init)
    loss_fn, net = as_loss(loss, output), copy.deepcopy(model).eval()
    train_s, probe_s = as_stream(train, "train", net, batch_size), as_stream(probe, "probe", net, batch_size)
    folds, site_list = _folds(probe_s, max_blocks), _sites(net, sites, probe_s, scan_inserted)
    rows, reports, gain = [], [], None
    for k, (a, b) in enumerate(folds):
        fold = probe_s.part(a, b)   # step k's own probe
        rep = _scan_fold(k, (a, b), len(folds), lambda: saturation(
            net, fold, loss, site_list(net), layout, level, seed + k, eps=eps, batch_size=batch_size, output=output,
            **scan_kw))
        reports.append(rep)
        stop = "saturated" if rep.saturated else ("max_blocks" if k >= max_blocks else None)
        rows.append(_row(k, rep, gain, _mean_loss(net, fold, loss_fn), (a, b), stop))
        if stop:
            break
        held = train_s.part(0, min(len(train_s), 4096))   # independent of the probe that fixed V
        before = _mean_loss(net, held, loss_fn)
        net, rows[-1]["inserted"] = _insert(net, rep, family, layer_init)
        gain = before - _mean_loss(net, held, loss_fn)
        _train(net, train_s, loss_fn, steps, lr, trainable)
    import pandas as pd
    notes = [f"each step scans its own fold of probe ({len(folds)} disjoint folds of {folds[0][1]} samples, "
             "probe_from/probe_to): the stop rule's level holds at every step",
             f"trained after each insertion: {'the inserted blocks only' if trainable == 'new' else 'every parameter'}, "
             "in eval mode (batch-norm statistics frozen)"]
    return GrowthResult(net, pd.DataFrame(rows), stop, reports, notes)
