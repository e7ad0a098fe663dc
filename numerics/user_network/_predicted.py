"""``dc.predicted_vs_observed``: is the scan right about where and how much a block helps, on the user's
network? (THEORY §3, §8; the rank tests: :mod:`numerics.user_network._calibration`; the first-order check:
:mod:`numerics.user_network._first_order`).

Which sample fixes what, per seed (every role disjoint from the others within a seed; in the
vocabulary of :mod:`numerics.roles`, ``scan`` is the probe and signal sample, ``train`` is ``S``,
``heldout`` is ``T``):

* **scan** -- :func:`depthcert.saturation` on it: every site's scores (``predicted_gain``,
  ``P_linear``, ``P_affine``, the family's ``P_<family>``, ``AG_max``) and, from its curvature part,
  each site's jumpboard ``V`` and ``beta_f`` (the block :func:`depthcert.insert_block` would insert);
  ShortGPT's ``block_influence`` is measured on the scan sample too; ``random`` is drawn from the seed;
* **train** -- the minibatches of the ``k`` Adam steps of every arm (the inserted block, and the
  control arm "tune the existing layer at the site"), the same minibatches for every arm;
* **heldout** -- the realised gains: the mean per-sample loss drop against the unchanged model.

**Choice** (data): ``data`` is either a factory ``data(seed, role) -> (x, y)`` (``role`` in
:data:`ROLES`; each call an independent draw: the seeds then redraw every role), or one pool
``(x, y)`` that each seed permutes and cuts into the disjoint roles in the proportions of
:data:`POOL_FRACTIONS` (within a seed the roles are disjoint; across seeds the pool's samples recur,
so seed-to-seed spread understates a fresh population's: the factory is the honest form).
"""
from __future__ import annotations

import copy
import math

import numpy as np
import torch

from numerics.user_network._data import as_stream

__all__ = ["GAIN_SCORES", "POOL_FRACTIONS", "ROLES", "SCORES", "merge_scan_kwargs", "predicted_vs_observed", "role_samples"]

#: the roles of a seed's samples (docstring of ``numerics.user_network._predicted``).
ROLES = ("scan", "train", "heldout")
#: **Choice**: how a pool is cut per seed (after a seeded permutation).
POOL_FRACTIONS = {"scan": 0.5, "train": 0.25, "heldout": 0.25}
#: the scores compared with the realised gains (``P_<family>`` is added for the family inserted).
SCORES = ("predicted_gain", "jumpboard_gain", "P_linear", "P_affine", "AG_max", "block_influence", "random")
#: the scores in loss units (a calibration slope is computed for these).
GAIN_SCORES = ("predicted_gain", "jumpboard_gain")


def _positive_int(name: str, v, least: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
        raise ValueError(f"{name} == {v!r}, must be an int >= {least}.")
    return int(v)


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0.0 < float(level) < 1.0:
        raise ValueError(f"level == {level!r}, must be in (0, 1).")
    return float(level)


def _check_seeds(seeds) -> list[int]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds == {seeds!r}, must be a non-empty sequence of distinct ints >= 0.")
    s = list(seeds)
    if not s or len(set(s)) != len(s) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                                                 for v in s):
        raise ValueError(f"seeds == {seeds!r}, must be a non-empty sequence of distinct ints >= 0.")
    return [int(v) for v in s]


def _check_horizons(horizons) -> list[int]:
    if isinstance(horizons, (str, bytes)) or not hasattr(horizons, "__iter__"):
        raise ValueError(f"horizons == {horizons!r}, must be a non-empty sequence of distinct ints >= 0 (training steps).")
    h = list(horizons)
    if not h or len(set(h)) != len(h) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0
                                                 for v in h):
        raise ValueError(f"horizons == {horizons!r}, must be a non-empty sequence of distinct ints >= 0 (training steps).")
    return sorted(int(v) for v in h)


def _check_lr(lr) -> float:
    if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not (0.0 < float(lr) < math.inf):
        raise ValueError(f"lr == {lr!r}, must be a finite float > 0.")
    return float(lr)


def _materialise(d, arg: str, model, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    stream = as_stream(d, arg, model, batch_size)
    return stream.take(len(stream))


def role_samples(data, seed: int, model, batch_size: int = 256) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """``{role: (x, y)}`` of one seed (docstring of ``numerics.user_network._predicted``: a factory or a pool)."""
    if callable(data):
        return {role: _materialise(data(seed, role), f"data({seed}, {role!r})", model, batch_size) for role in ROLES}
    x, y = _materialise(data, "data", model, batch_size)
    n = x.shape[0]
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(int(seed))).to(x.device)
    cuts = np.cumsum([0] + [int(n * POOL_FRACTIONS[r]) for r in ROLES])
    out = {r: (x[perm[a:b]], y[perm[a:b]]) for r, a, b in zip(ROLES, cuts[:-1], cuts[1:])}
    small = {r: v[0].shape[0] for r, v in out.items() if v[0].shape[0] < 8}
    if small:
        raise ValueError(f"data has {n} samples, must have enough for every role (>= 8 each, cut {POOL_FRACTIONS}); "
                         f"got {small}.")
    return out


def _seed_scan(model, data, seed, sites, family, loss_fn, scan_kw) -> dict:
    """One seed: the role samples, the scan on ``scan``, every site's jumpboard block and ``beta_f``,
    and the unchanged model's held-out losses."""
    from numerics.user_network._gain import per_sample_losses
    from numerics.user_network._insert import family_block
    from numerics.user_network._saturation import saturation

    batch_size = scan_kw.get("batch_size", 256)
    samples = role_samples(data, seed, model, batch_size)
    rep = saturation(model, samples["scan"], sites=sites, seed=seed, families=[family], **scan_kw)
    jump = {}
    for rec in rep.sites:
        net = copy.deepcopy(model)   # exactly dc.insert_block(model, site, family, "jumpboard", rep, force=True)
        block, beta = family_block(net, rec["site"], family, "jumpboard", rep)
        jump[rec["site"]] = (block, beta)
    hx, hy = samples["heldout"]
    return {"samples": samples, "rep": rep, "jump": jump, "old": per_sample_losses(model, hx, hy, loss_fn)}


def _attach(model, site, block):
    from numerics.user_network._attach import attach_unit

    net = copy.deepcopy(model)
    attach_unit(net, site, copy.deepcopy(block))
    return net.eval()


def _gain(net, heldout, old, loss_fn) -> tuple[float, float]:
    from numerics.user_network._gain import per_sample_losses

    D = old - per_sample_losses(net, heldout[0], heldout[1], loss_fn)
    return float(D.mean()), float(D.std(unbiased=True)) if D.numel() > 1 else math.nan


def _jumpboard_gain(block, beta) -> float:
    """Theorem 1's gain of the inserted jumpboard on the scan's step sample: ``beta_f ||V||^2 / 2``
    (``V = -(slope / beta_f) G_f / ||G_f||``, so ``slope^2 / (2 beta_f)``); 0 without descent."""
    return 0.0 if beta is None else float(beta) * float(block.V.detach().double().norm()) ** 2 / 2.0


def _seed_rows(model, sc, seed, family, horizons, loss_fn, lr, batch_size, level) -> list[dict]:
    from numerics.user_network._attach import new_parameters
    from numerics.user_network._verdict import t_interval
    from numerics.sites import module_at
    from numerics.trial import TrainingArm, block_influence

    rep, samples, old = sc["rep"], sc["samples"], sc["old"]
    names = [r["site"] for r in rep.sites]
    infl = block_influence(model, names, samples["scan"][0], {r["site"]: r["layout"] for r in rep.sites}, batch_size)
    rand = np.random.default_rng([int(seed), 0x5EED]).random(len(names))   # the random score, fixed by the seed
    tx, ty = samples["train"]
    n_h = int(samples["heldout"][0].shape[0])
    rows = []
    for k, rec in enumerate(rep.sites):
        site = rec["site"]
        block, beta = sc["jump"][site]
        net = _attach(model, site, block)
        arm = TrainingArm(net, new_parameters(net).values(), tx, ty, loss_fn, lr=lr, batch_size=batch_size, seed=seed)
        tuned = copy.deepcopy(model)
        ctrl = TrainingArm(tuned, module_at(tuned, site).parameters(), tx, ty, loss_fn, lr=lr, batch_size=batch_size, seed=seed)
        base = {"seed": seed, "site": site, "family": family, "predicted_gain": rec["predicted_gain"],
                "jumpboard_gain": _jumpboard_gain(block, beta), "P_linear": rec.get("P_linear"),
                "P_affine": rec.get("P_affine"), f"P_{family}": rec.get(f"P_{family}"), "AG_max": rec["AG_max"],
                "block_influence": infl[site], "random": float(rand[k]), "n_heldout": n_h, "n_train": int(tx.shape[0]),
                "n_scan": int(samples["scan"][0].shape[0]), "block_params": arm.n_params, "tune_params": ctrl.n_params}
        for h in horizons:
            arm.advance(h), ctrl.advance(h)
            g, sd = _gain(net, samples["heldout"], old, loss_fn)
            tg, tsd = (0.0, 0.0) if h == 0 or not ctrl.n_params else _gain(tuned, samples["heldout"], old, loss_fn)
            lo, hi = t_interval(g, sd, n_h, level) if n_h >= 2 and math.isfinite(sd) else (math.nan, math.nan)
            rows.append({**base, "horizon": h, "realised_gain": g, "realised_sd": sd, "realised_lo": lo, "realised_hi": hi,
                         "tune_gain": tg, "tune_sd": tsd, "kind": "seed"})
    return rows


def _aggregate(df, level: float, scores) -> list[dict]:
    """Per site x horizon: the means over seeds, and the t interval over seeds of the realised gain, of the
    tuned layer's gain and of their paired difference (``block_minus_tune``)."""
    from numerics.trial import mean_interval

    out = []
    for (site, h), g in df.groupby(["site", "horizon"], sort=False):
        row = {"seed": pd_na(), "site": site, "horizon": h, "family": g["family"].iloc[0], "kind": "mean",
               "n_seeds": int(len(g))}
        for c in scores:
            row[c] = float(np.nanmean(g[c].astype(float))) if g[c].notna().any() else math.nan
        for col, key in (("realised_gain", "realised"), ("tune_gain", "tune")):
            m, lo, hi = mean_interval(g[col], level)
            row.update({col: m, f"{key}_lo": lo, f"{key}_hi": hi})
        m, lo, hi = mean_interval(g["realised_gain"] - g["tune_gain"], level)
        row.update(block_minus_tune=m, block_minus_tune_lo=lo, block_minus_tune_hi=hi)
        out.append(row)
    return out


def pd_na():
    import pandas as pd

    return pd.NA


def _scan_kwargs(loss, layout, width, batch_size, curvature_n, output, scan_kwargs) -> dict:
    """The keywords of the scan: this function's own, plus ``scan_kwargs`` (which must not repeat them)."""
    kw = {"loss": loss, "layout": layout, "width": width, "batch_size": batch_size, "curvature_n": curvature_n,
          "output": output}
    return merge_scan_kwargs(kw, scan_kwargs)


def merge_scan_kwargs(base: dict, scan_kwargs) -> dict:
    """``base`` plus ``scan_kwargs``; ValueError when ``scan_kwargs`` is not a dict or repeats a key of ``base``
    or one that the caller sets itself (model, data, sites, seed, families)."""
    if scan_kwargs is not None and not isinstance(scan_kwargs, dict):
        raise ValueError(f"scan_kwargs == {scan_kwargs!r}, must be None or a dict of dc.saturation keywords.")
    extra = dict(scan_kwargs or {})
    clash = sorted(set(extra) & ({"model", "data", "sites", "seed", "families"} | set(base)))
    if clash:
        raise ValueError(f"scan_kwargs has {clash}, must not repeat an argument of this function or the model, data, "
                         "sites, seed and families it sets itself.")
    return {**base, **extra}


def predicted_vs_observed(model, data, sites="blocks.*", horizons=(0, 1, 10, 100), seeds=(0, 1, 2), *,
                          family: str = "readout", loss="cross_entropy", lr: float = 1e-3, batch_size: int = 64,
                          level: float = 0.05, layout=None, width: int = 16, curvature_n: int = 1024, output=None,
                          scan_batch_size: int = 256, scan_kwargs: dict | None = None):
    """The scan's predictions beside the gains then realised, per site, horizon and seed.

    For every seed (each one redraws the data of every role, module docstring): scan the model
    (:func:`depthcert.saturation`), insert the jumpboard of ``family`` at every site as
    :func:`depthcert.insert_block` would, and measure its held-out gain at horizon 0 (as inserted) and
    after ``k`` Adam steps of the inserted block on the train sample, for each ``k`` in ``horizons``; the
    control arm tunes the existing layer at the site for the same steps on the same minibatches.

    Parameters
    ----------
    model : torch.nn.Module
        The network (never changed; every arm trains a copy).
    data : callable or data
        ``data(seed, role) -> (x, y)`` for ``role`` in ``("scan", "train", "heldout")`` (each call an
        independent draw), or one pool (any data ``dc.saturation`` accepts) cut per seed into those roles
        (``POOL_FRACTIONS``: 1/2, 1/4, 1/4 after a seeded permutation).
    sites : str, list of str or None, default "blocks.*"
        As :func:`depthcert.saturation`.
    horizons : sequence of int, default (0, 1, 10, 100)
        Training steps at which the realised gains are read (one run per arm, read at each).
    seeds : sequence of int, default (0, 1, 2)
        Distinct seeds >= 0: each fixes a data draw, the scan's features, the minibatches and ``random``.
    family : str, default "readout"
        The family of the inserted block (its own score ``P_<family>`` is a column).
    loss : str or callable, default "cross_entropy"
        As :func:`depthcert.saturation`.
    lr : float, default 1e-3
        Adam's learning rate for every arm.
    batch_size : int, default 64
        Training minibatch size (the scan's passes use ``scan_batch_size``).
    level : float, default 0.05
        The intervals are two-sided at ``1 - level``.
    layout, width, curvature_n, output : optional
        Passed to :func:`depthcert.saturation` (``width`` 16, ``curvature_n`` 1024 by default).
    scan_batch_size : int, default 256
        Samples per pass of the scan and of the held-out evaluation.
    scan_kwargs : dict or None
        Further keywords for :func:`depthcert.saturation` (e.g. ``{"n_chunks": 8}``).

    Returns
    -------
    pandas.DataFrame
        One row per seed x site x horizon (``kind == "seed"``) and one per site x horizon (``kind ==
        "mean"``, ``seed`` missing): the scores (``SCORES`` and ``P_<family>``; ``jumpboard_gain`` is
        Theorem 1's gain ``beta_f ||V||^2 / 2`` of the very block inserted), ``realised_gain`` (with
        ``realised_lo``/``realised_hi``: within a seed the t interval over held-out samples, in a mean row
        the t interval over seeds), ``tune_gain`` (``tune_lo``/``tune_hi``), ``block_minus_tune`` (paired over
        seeds), the sample sizes and parameter counts. ``df.attrs``: ``scores``, ``roles``, ``level``.

    Raises
    ------
    TypeError, ValueError
        A bad model, data, site, family, horizon, seed, lr or level, each named with the allowed values.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 2))
        >>> def draw(seed, role):                   # an independent sample per seed and role
        ...     g = torch.Generator().manual_seed(1000 * seed + ("scan", "train", "heldout").index(role))
        ...     x = torch.randn(256, 3, generator=g)
        ...     return x, (x[:, 0] * x[:, 1] > 0).long()
        >>> df = dc.predicted_vs_observed(net, draw, sites=["1", "3"], horizons=(0, 5), seeds=(0, 1), lr=1e-2)
        >>> sorted(set(df["kind"])), len(df[df["kind"] == "seed"]), len(df[df["kind"] == "mean"])
        (['mean', 'seed'], 8, 4)
        >>> {"predicted_gain", "P_affine", "P_readout", "AG_max", "block_influence", "random", "tune_gain"} <= set(df)
        True
    """
    from numerics.distributed import refuse as refuse_distributed
    refuse_distributed("dc.predicted_vs_observed", "its trained arms and held-out gains are not reduced across ranks")
    import pandas as pd

    from numerics.user_network._loss import as_loss
    from numerics.user_network._saturation import check_model
    from numerics.families import PROTOCOL_FAMILIES

    check_model(model)
    hs, ss, level, lr = _check_horizons(horizons), _check_seeds(seeds), _check_level(level), _check_lr(lr)
    batch_size = _positive_int("batch_size", batch_size)
    if family not in PROTOCOL_FAMILIES:
        raise ValueError(f"family == {family!r}, must be one of {list(PROTOCOL_FAMILIES)}.")
    loss_fn = as_loss(loss, output)
    kw = _scan_kwargs(loss, layout, width, _positive_int("scan_batch_size", scan_batch_size), curvature_n, output,
                      scan_kwargs)
    rows = []
    for seed in ss:
        sc = _seed_scan(model, data, seed, sites, family, loss_fn, kw)
        rows += _seed_rows(model, sc, seed, family, hs, loss_fn, lr, batch_size, level)
    scores = list(dict.fromkeys([*SCORES, f"P_{family}"]))
    df = pd.DataFrame(rows)
    df = pd.concat([df, pd.DataFrame(_aggregate(df, level, scores))], ignore_index=True)
    df["seed"] = df["seed"].astype("Int64")
    df.attrs.update(scores=scores, level=level, family=family, horizons=hs, seeds=ss,
                    roles={"scan": "the scores, the jumpboard's V and beta_f, block_influence",
                           "train": "the minibatches of every arm's Adam steps (the same for every arm of a seed)",
                           "heldout": "the realised gains (mean per-sample loss drop against the unchanged model)",
                           "seed": "the random score, the scan's features, the minibatches, the data draw"})
    return df
