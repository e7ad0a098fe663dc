"""``dc.trial_insertion``: a measured answer to "would one more block help, where, and is a new block worth it
at all?" -- by training candidates briefly and choosing on a sample that the final interval never saw.

Arms (each a copy of the user's model; the model itself is never changed):

* ``block@<site>`` -- a block of ``family`` inserted at each candidate site
  (:func:`depthcert.insert_block`; ``init="zero"``: the network starts as the model's function), only
  the new block's parameters trained;
* ``tune@<site>`` -- no new block; the existing module at the site of the leading block arm after
  the first rung ("the best of them") trained instead (LLaMA-Pro's question: are new blocks needed?);
* ``no change`` -- the model as it is (gain 0, no training).

Successive halving (**Choice**: ``eta``, default 3): every live arm trains up to the rung's cumulative
step count (:func:`numerics.trial.halving_rungs`) with Adam on the **fit** sample (the same minibatches
for every arm), its mean per-sample loss drop against the model is measured on the **select** sample,
and the best ``ceil(n / eta)`` go on; the tune arm joins after the first rung, trained to it (with
``tune_survives=True`` it keeps one of those places at every elimination). At the
last rung the arm with the largest select gain is **chosen** (``no change`` when none is above 0).

Which sample fixed what: ``fit`` (a part of ``train``): the scan that builds the blocks' features (and
the jumpboard with ``init="jumpboard"``) and every training step; ``select`` (the rest of ``train``, or
``select=``): every elimination and the choice; ``heldout`` (disjoint, used once at the end): the chosen
arm's gain with its Student-t interval (valid without a selection correction: the choice did not look
at it), and, when the chosen arm is not a block, the best block arm's too (so "is a new block worth it"
has its own held-out interval; the two hold jointly at ``1 - 2 level``).

The interval is Student t over the held-out per-sample gains: asymptotic. Measured on the planted
problem of ``tests/api/_planted.py`` (50 draws, nominal 95 %; ``OMP_NUM_THREADS=1 python
benchmarks/bench_trial_coverage.py`` -> ``docs/trial-coverage/coverage.json``, whose numbers a test
checks here): it covered the true gain (a 40 000-sample estimate) in 46 of 50 draws with light-tailed
per-sample gains at 400 held-out samples, but in 43 of 50 at 400 and 44 of 50 at 1500 when the gains
were heavily skewed (the target ``x_2 x_3``): with heavy-tailed losses give ``heldout`` thousands of
samples, or read the interval as approximate.

Cost: with ``n`` trained arms and rungs ``r_0 < ... < r_{R-1} = steps``, every arm trains ``r_0``
steps, the ``ceil(n / eta)`` survivors up to ``r_1``, and so on (``total_steps``, ``cost_ratio`` in units
of ``steps``); e.g. 7 arms with ``eta = 3`` cost ``7/3 + 3 * 2/3 = 4.33`` blocks' training, with
``eta = 5`` ``7/5 + 2 * 4/5 = 3.0``.
"""
from __future__ import annotations

import copy
import math
import numbers

from numerics.user_network._trial_result import NO_CHANGE, TrialResult

__all__ = ["TrialResult", "trial_insertion"]

#: **Choice**: the share of ``train`` kept apart as the select sample when ``select`` is None (its last samples).
SELECT_FRACTION = 0.25


def _split_train(train, select, model, batch_size: int):
    from numerics.user_network._predicted import _materialise

    x, y = _materialise(train, "train", model, batch_size)
    if select is not None:
        return (x, y), _materialise(select, "select", model, batch_size), "select (given)"
    n = x.shape[0]
    k = int(math.ceil(n * SELECT_FRACTION))
    if n - k < 8 or k < 8:
        raise ValueError(f"train has {n} samples, must have >= 32 when select is None (its last "
                         f"{SELECT_FRACTION:.0%} is the select sample, >= 8 each).")
    return (x[:n - k], y[:n - k]), (x[n - k:], y[n - k:]), f"select: the last {k} samples of train"


def _check(steps, eta, init, lr, batch_size, level, seed, tune_survives=False, prefer_earlier=None):
    from numerics.user_network._predicted import _check_level, _check_lr, _positive_int

    _positive_int("steps", steps), _positive_int("batch_size", batch_size)
    if isinstance(eta, bool) or not isinstance(eta, int) or eta < 2:
        raise ValueError(f"eta == {eta!r}, must be an int >= 2 (the halving factor).")
    if init not in ("zero", "jumpboard"):
        raise ValueError(f"init == {init!r}, must be one of ['zero', 'jumpboard'].")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed == {seed!r}, must be an int >= 0.")
    if not isinstance(tune_survives, bool):
        raise ValueError(f"tune_survives == {tune_survives!r}, must be True or False.")
    if prefer_earlier is not None and (isinstance(prefer_earlier, bool) or not isinstance(prefer_earlier, numbers.Real)
                                       or not 0 < prefer_earlier <= 1):
        raise ValueError(f"prefer_earlier == {prefer_earlier!r}, must be None or a number in (0, 1].")
    return _check_lr(lr), _check_level(level)


def _gains(model, net, sample, old, loss_fn):
    from numerics.user_network._gain import per_sample_losses

    return old - per_sample_losses(net, sample[0], sample[1], loss_fn)


def _interval(D, level):
    from numerics.user_network._verdict import t_interval

    m, sd, n = float(D.mean()), float(D.std(unbiased=True)), int(D.numel())
    lo, hi = t_interval(m, sd, n, level) if n >= 2 and math.isfinite(sd) else (math.nan, math.nan)
    return m, lo, hi


def _answer(chosen, kind, site, lo, hi, m, best_block) -> str:
    iv = f"{m:.4g} [{lo:.4g}, {hi:.4g}]"
    if kind == "block":
        if lo > 0:
            return f"where: {site}; a new block is worth it: its held-out gain is {iv} (above 0)"
        return f"where: {site} (the best arm on the select sample), but a new block is not shown to help: its held-out gain {iv} reaches 0"
    bb = "" if best_block is None else (f"; the best block ({best_block['arm']}) gains {best_block['gain']:.4g} "
                                        f"[{best_block['gain_lo']:.4g}, {best_block['gain_hi']:.4g}] held out")
    if kind == "tune":
        return f"a new block is not worth it: tuning the existing layer at {site} did better on the select sample, held-out gain {iv}{bb}"
    return f"a new block is not worth it: no arm gained on the select sample (no change chosen){bb}"


def _arms(model, rep, init, family, fit, loss_fn, lr, batch_size, seed):
    from numerics.user_network._attach import new_parameters
    from numerics.user_network._insert import insert_block
    from numerics.trial import TrainingArm

    out = {}
    for rec in rep.sites:
        s = rec["site"]
        net = insert_block(model, s, family, init=init, scan=rep, force=True)
        arm = TrainingArm(net, new_parameters(net).values(), fit[0], fit[1], loss_fn, lr=lr, batch_size=batch_size, seed=seed)
        out[f"block@{s}"] = {"arm": f"block@{s}", "kind": "block", "site": s, "train": arm, "select_gains": [],
                             "eliminated_at": None, "scan_predicted_gain": rec["predicted_gain"]}
    return out


def _tune_arm(model, site, fit, loss_fn, lr, batch_size, seed):
    from numerics.sites import module_at
    from numerics.trial import TrainingArm

    net = copy.deepcopy(model)
    arm = TrainingArm(net, module_at(net, site).parameters(), fit[0], fit[1], loss_fn, lr=lr, batch_size=batch_size, seed=seed)
    return {"arm": f"tune@{site}", "kind": "tune", "site": site, "train": arm, "select_gains": [], "eliminated_at": None,
            "scan_predicted_gain": None}   # the scan predicts a new block's gain, not a tuned layer's


def _blocks_kept(blocks: list, places: int, order: dict, prefer_earlier: float | None) -> list:
    """The ``places`` block arms an elimination keeps, from ``blocks`` sorted by decreasing select gain. Without
    ``prefer_earlier`` the first ``places``; with a ratio ``r``, each place in turn goes to the block earliest in
    ``order`` (the order of the resolved sites) among those left whose select gain is at least ``r`` times the best
    gain left (the best itself when that gain is not above 0); ``places`` may be 0."""
    if prefer_earlier is None:
        return blocks[:places]
    left, kept = list(blocks), []
    while left and len(kept) < places:
        top = left[0]["select_gains"][-1]
        near = [a for a in left if a["select_gains"][-1] >= prefer_earlier * top] if top > 0 else [left[0]]
        pick = min(near, key=lambda a: order[a["arm"]])
        kept.append(pick)
        left.remove(pick)
    return kept


def _halving(model, arms, rungs, eta, sel, old_sel, loss_fn, make_tune, tune_survives: bool = False,
             prefer_earlier: float | None = None):
    """Run the rungs; returns the live arms after the last (each with its select gains). ``tune_survives``: at every
    elimination the tune arm keeps one of the ``ceil(n / eta)`` places whatever its select gain, the blocks the
    rest (at least one). ``prefer_earlier``: the blocks' places by :func:`_blocks_kept` (the tune arm still joins at
    the site of the block with the largest select gain after the first rung)."""
    order = {name: i for i, name in enumerate(arms)}
    live = list(arms.values())
    for k, rung in enumerate(rungs):
        for a in live:
            a["train"].advance(rung)
            a["select_gains"].append(float(_gains(model, a["train"].net, sel, old_sel, loss_fn).mean()))
        if k == 0:
            lead = max((a for a in live if a["kind"] == "block"), key=lambda a: a["select_gains"][-1])
            tune = make_tune(lead["site"])
            arms[tune["arm"]] = tune
            tune["train"].advance(rung)
            tune["select_gains"].append(float(_gains(model, tune["train"].net, sel, old_sel, loss_fn).mean()))
            live.append(tune)
        if k < len(rungs) - 1:
            live.sort(key=lambda a: -a["select_gains"][-1])
            keep = max(1, math.ceil(len(live) / eta))
            if prefer_earlier is None:
                kept = live[:keep] if not tune_survives else (
                    [a for a in live if a["kind"] == "tune"] + [a for a in live if a["kind"] != "tune"][:max(1, keep - 1)])
            else:
                kept = _kept_preferring_earlier(live, keep, order, prefer_earlier, tune_survives)
            for a in live:
                if all(a is not b for b in kept):
                    a["eliminated_at"] = rung
            live = kept
    return live


def _kept_preferring_earlier(live: list, keep: int, order: dict, prefer_earlier: float, tune_survives: bool) -> list:
    """An elimination's survivors with ``prefer_earlier`` (``live`` sorted by decreasing select gain): the tune arm
    keeps its place as without it (always with ``tune_survives``, else when it is among the first ``keep``), the
    blocks fill the rest (at least one) by :func:`_blocks_kept`; ``no change`` is not an arm here."""
    tune = [a for a in live if a["kind"] == "tune"]
    tune = tune if tune_survives else [a for a in live[:keep] if a["kind"] == "tune"]
    blocks = [a for a in live if a["kind"] != "tune"]
    return tune + _blocks_kept(blocks, max(1, keep - 1) if tune_survives else keep - len(tune), order, prefer_earlier)


def _best_block(model, arms, held, old_held, loss_fn, level) -> dict:
    """The block arm that went furthest (then by its last select gain), with its held-out gain and interval."""
    bb = max((a for a in arms.values() if a["kind"] == "block"), key=lambda a: (len(a["select_gains"]), a["select_gains"][-1]))
    bm, blo, bhi = _interval(_gains(model, bb["train"].net, held, old_held, loss_fn), level)
    return {"arm": bb["arm"], "site": bb["site"], "gain": bm, "gain_lo": blo, "gain_hi": bhi, "steps_trained": bb["train"].steps}


def _records(arms, rungs) -> list[dict]:
    """One plain record per arm (its cost), ``no change`` last."""
    out = [{"arm": a["arm"], "kind": a["kind"], "site": a["site"], "steps_trained": a["train"].steps,
            "n_params": a["train"].n_params, "eliminated_at": a["eliminated_at"], "select_gains": a["select_gains"],
            "scan_predicted_gain": a["scan_predicted_gain"]} for a in arms.values()]
    return out + [{"arm": NO_CHANGE, "kind": "none", "site": None, "steps_trained": 0, "n_params": 0, "eliminated_at": None,
                   "select_gains": [0.0] * len(rungs), "scan_predicted_gain": None}]


def _roles(fit, sel, held, sel_note, init) -> dict:
    return {"fit": {"n": int(fit[0].shape[0]), "fixed": "the scan (blocks' features" + (", jumpboard V" if init == "jumpboard" else "")
                    + ") and every training step (same minibatches for every arm)"},
            "select": {"n": int(sel[0].shape[0]), "fixed": f"every elimination and the choice ({sel_note})"},
            "heldout": {"n": int(held[0].shape[0]), "fixed": "the chosen arm's gain and interval (and the best block's "
                        "when the chosen arm is not a block); read once, after the choice"}}


def _check_heldout_apart(model, fit, sel, held) -> None:
    """Refuse a ``heldout`` that shares a row with the samples that chose (its interval needs no selection correction
    only if it played no part in choosing)."""
    import numpy as np

    from numerics.user_network._data import as_stream
    from numerics.user_network._roles import row_hashes, shared_rows

    h = as_stream(held, "heldout", model)
    hh = row_hashes(h)
    for name, part in (("train", fit), ("select", sel)):
        s = as_stream(part, name, model)
        ia, ib = shared_rows(s, h, row_hashes(s), hh)
        if ia.size:
            raise ValueError(f"heldout shares {np.unique(ib).size} identical (x, y) rows with {name} (e.g. {name}[{int(ia[0])}] == "
                             f"heldout[{int(ib[0])}], compared exactly), must be a sample disjoint from the samples that "
                             "choose the arm: its interval is valid only if it played no part in choosing.")


def _notes(rungs, eta, tune_survives, prefer_earlier, level, best_block, rep) -> list[str]:
    return [f"successive halving: rungs {rungs} (cumulative steps), eta = {eta}; the tune arm joined after rung "
            f"{rungs[0]} at the leading block's site" + ("; it kept a place at every elimination (tune_survives)" if
            tune_survives else "") + ("" if prefer_earlier is None else f"; the blocks' places went to the earliest "
            f"site among the blocks with >= {prefer_earlier:g} x the best select gain left (prefer_earlier)"),
            f"intervals: Student t over held-out samples at level {level:g}"
            + ("; with best_block, two intervals, jointly at 1 - 2 level" if best_block else ""),
            f"scan on the fit sample ranks {rep.best_site} first by {rep.ranked_by} (not used by the choice)"]


def trial_insertion(model, train, heldout, sites="blocks.*", steps: int = 100, *, select=None, family: str = "readout",
                    init: str = "zero", eta: int = 3, loss="cross_entropy", lr: float = 1e-3, batch_size: int = 64,
                    level: float = 0.05, seed: int = 0, layout=None, width: int = 16, output=None,
                    scan_kwargs: dict | None = None, tune_survives: bool = False,
                    prefer_earlier: float | None = None) -> TrialResult:
    """A measured answer to "where would one more block help, and is a new block worth it at all?".

    Trains the candidates briefly (successive halving over training steps), chooses on a sample of
    ``train`` kept apart from training (``select``), and reports the chosen arm's gain with an interval
    on ``heldout``, which played no part in choosing (module docstring of ``numerics.user_network._trial``).
    Arms: a block at each candidate site, "tune the existing layer" at the best of them, "no change".

    Parameters
    ----------
    model : torch.nn.Module
        The network (never changed; every arm is a copy).
    train : data
        The training data (any data ``dc.saturation`` accepts): its first part trains every arm (fit),
        its last ``SELECT_FRACTION`` (1/4) chooses, unless ``select`` is given.
    heldout : data
        Disjoint from ``train`` and ``select``: the chosen arm's gain and interval (read once).
    sites : str, list of str or None, default "blocks.*"
        The candidate sites, as :func:`depthcert.saturation`.
    steps : int, default 100
        The training steps of a surviving arm (the last rung).
    select : data or None, default None
        The select sample (None: the last quarter of ``train``).
    family : str, default "readout"
        The inserted blocks' family.
    init : {"zero", "jumpboard"}, default "zero"
        The blocks' start (:func:`depthcert.insert_block`; the jumpboard from the scan on the fit sample).
    eta : int, default 3
        The halving factor (each rung keeps ``ceil(n / eta)`` arms).
    loss : str or callable, default "cross_entropy"
        As :func:`depthcert.saturation`.
    lr : float, default 1e-3
        Adam's learning rate (every arm).
    batch_size : int, default 64
        Training minibatch size.
    level : float, default 0.05
        The held-out intervals are two-sided at ``1 - level``.
    seed : int, default 0
        The blocks' features and the minibatches.
    layout, width, output : optional
        As :func:`depthcert.saturation`.
    scan_kwargs : dict or None
        Further keywords for the scan on the fit sample (e.g. ``{"curvature_n": 64}``).
    tune_survives : bool, default False
        Keep the tune arm to the last rung: at every elimination it holds one of the ``ceil(n / eta)``
        places whatever its select gain, the blocks compete for the rest (at least one). The cost is the
        same as without it whenever an elimination keeps at least two arms, which with the rungs of
        :func:`numerics.trial.halving_rungs` every one does (e.g. 7 arms, ``eta = 5``: 3.0 blocks' training).
        Use it when tuning a trained layer first costs loss and then gains (measured on MiniLM-L6: after a
        fifth of the steps the tuned layer's select gain was below 0 in every seed, so the halving always
        eliminated it; ``docs/trial-minilm/``).
    prefer_earlier : float or None, default None
        **Choice**, off by default; a ratio in (0, 1]. At every elimination each place of a block goes to the block earliest in the
        order of the sites as resolved (a list: its order; a pattern: the modules' registration order, which
        for ``encoder.layer.*``-style stacks is the order of the forward pass) among those whose select gain is at least
        ``prefer_earlier`` times the best select gain left (None: the best; 1: the best, earlier on a tie). The
        tune arm still joins at the site of the block with the largest select gain. The cost is unchanged. Use
        it when blocks early in the network gain slowly at first and most by the horizon (as measured on
        MiniLM-L6, ``docs/trial-minilm/``).

    Returns
    -------
    TrialResult
        ``chosen``, ``site``, ``gain`` with ``gain_lo``/``gain_hi``, ``block_worth_it``, ``answer``, every
        arm's cost (``table()``), ``total_steps``, ``cost_ratio``, ``roles`` (which sample fixed what),
        ``model`` (the chosen arm's network).

    Raises
    ------
    TypeError, ValueError
        A bad model, data, site, family, init, steps, eta, lr, batch_size, level or seed (named).

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
        >>> def draw(n, seed):
        ...     g = torch.Generator().manual_seed(seed)
        ...     x = torch.randn(n, 3, generator=g)
        ...     return x, (x[:, 0] * x[:, 1] > 0).long()
        >>> r = dc.trial_insertion(net, draw(512, 1), draw(512, 2), sites=["1", "3"], steps=20, lr=1e-2)
        >>> r.chosen_kind in ("block", "tune", "none"), r.total_steps == int(r.table()["steps_trained"].sum())
        (True, True)
        >>> sorted(r.roles)
        ['fit', 'heldout', 'select']
    """
    from numerics.distributed import refuse as refuse_distributed
    refuse_distributed("dc.trial_insertion", "its arms are trained, chosen and measured on each rank's own data, not reduced across ranks")
    from numerics.user_network._gain import per_sample_losses
    from numerics.user_network._loss import as_loss
    from numerics.user_network._predicted import _materialise, merge_scan_kwargs
    from numerics.user_network._saturation import check_model, saturation
    from numerics.families import PROTOCOL_FAMILIES
    from numerics.trial import halving_rungs

    check_model(model)
    lr, level = _check(steps, eta, init, lr, batch_size, level, seed, tune_survives, prefer_earlier)
    if family not in PROTOCOL_FAMILIES:
        raise ValueError(f"family == {family!r}, must be one of {list(PROTOCOL_FAMILIES)}.")
    loss_fn = as_loss(loss, output)
    kw = merge_scan_kwargs({"loss": loss, "layout": layout, "width": width, "output": output}, scan_kwargs)
    fit, sel, sel_note = _split_train(train, select, model, kw.get("batch_size", 256))
    held = _materialise(heldout, "heldout", model, kw.get("batch_size", 256))
    _check_heldout_apart(model, fit, sel, held)
    rep = saturation(model, fit, sites=sites, seed=seed, families=[family], **kw)
    arms = _arms(model, rep, init, family, fit, loss_fn, lr, batch_size, seed)
    rungs = halving_rungs(len(arms) + 1, int(steps), eta)
    old_sel = per_sample_losses(model, sel[0], sel[1], loss_fn)
    live = _halving(model, arms, rungs, eta, sel, old_sel, loss_fn,
                    lambda s: _tune_arm(model, s, fit, loss_fn, lr, batch_size, seed), tune_survives, prefer_earlier)
    best = max(live, key=lambda a: a["select_gains"][-1])
    chosen = best if best["select_gains"][-1] > 0 else None
    old_held = per_sample_losses(model, held[0], held[1], loss_fn)
    if chosen is None:
        name, kind, site, m, lo, hi, net = NO_CHANGE, "none", None, 0.0, 0.0, 0.0, None
    else:
        name, kind, site, net = chosen["arm"], chosen["kind"], chosen["site"], chosen["train"].net
        m, lo, hi = _interval(_gains(model, net, held, old_held, loss_fn), level)
    best_block = None if kind == "block" else _best_block(model, arms, held, old_held, loss_fn, level)
    records = _records(arms, rungs)
    total = int(sum(r["steps_trained"] for r in records))
    roles = _roles(fit, sel, held, sel_note, init)
    notes = _notes(rungs, eta, tune_survives, prefer_earlier, level, best_block, rep)
    return TrialResult(chosen=name, chosen_kind=kind, site=site, gain=m, gain_lo=lo, gain_hi=hi,
                       block_worth_it=bool(kind == "block" and lo > 0), answer=_answer(name, kind, site, lo, hi, m, best_block),
                       best_block=best_block, arms=records, rungs=rungs, total_steps=total, cost_ratio=total / int(steps),
                       level=level, roles=roles, scan_best_site=rep.best_site, notes=notes, model=net)
