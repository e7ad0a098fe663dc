"""``dc.predicted_vs_observed``, ``dc.calibration``, ``dc.first_order_check``: is the scan right about
where and how much a block helps, on the user's network? (issue 35; THEORY §3, §8).

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

from depthcert.api._data import as_stream
from depthcert.api._docstring import doc

__all__ = ["GAIN_SCORES", "POOL_FRACTIONS", "ROLES", "SCORES", "calibration", "first_order_check", "plot_calibration",
           "predicted_vs_observed"]

#: the roles of a seed's samples (docstring of ``depthcert.api._predicted``).
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
    """``{role: (x, y)}`` of one seed (docstring of ``depthcert.api._predicted``: a factory or a pool)."""
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
    from depthcert.api._gain import per_sample_losses
    from depthcert.api._insert import family_block
    from depthcert.api._saturation import saturation

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
    from depthcert.api._attach import attach_unit

    net = copy.deepcopy(model)
    attach_unit(net, site, copy.deepcopy(block))
    return net.eval()


def _gain(net, heldout, old, loss_fn) -> tuple[float, float]:
    from depthcert.api._gain import per_sample_losses

    D = old - per_sample_losses(net, heldout[0], heldout[1], loss_fn)
    return float(D.mean()), float(D.std(unbiased=True)) if D.numel() > 1 else math.nan


def _jumpboard_gain(block, beta) -> float:
    """Theorem 1's gain of the inserted jumpboard on the scan's step sample: ``beta_f ||V||^2 / 2``
    (``V = -(slope / beta_f) G_f / ||G_f||``, so ``slope^2 / (2 beta_f)``); 0 without descent."""
    return 0.0 if beta is None else float(beta) * float(block.V.detach().double().norm()) ** 2 / 2.0


def _seed_rows(model, sc, seed, family, horizons, loss_fn, lr, batch_size, level) -> list[dict]:
    from depthcert.api._attach import new_parameters
    from depthcert.api._verdict import t_interval
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


_DOC_PVO = """
The scan's predictions beside the gains then realised, per site, horizon and seed.

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


@doc(_DOC_PVO)
def predicted_vs_observed(model, data, sites="blocks.*", horizons=(0, 1, 10, 100), seeds=(0, 1, 2), *,
                          family: str = "readout", loss="cross_entropy", lr: float = 1e-3, batch_size: int = 64,
                          level: float = 0.05, layout=None, width: int = 16, curvature_n: int = 1024, output=None,
                          scan_batch_size: int = 256, scan_kwargs: dict | None = None):
    import pandas as pd

    from depthcert.api._loss import as_loss
    from depthcert.api._saturation import check_model
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


def _seed_rows_only(df):
    if "kind" in df.columns:
        df = df[df["kind"] == "seed"]
    return df


_DOC_CAL = """
Per horizon and score: does the score rank the sites as the realised gains do, and is it calibrated?

Over the sites (the units; with a ``network`` column, the sites of every network, pooled): the
per-site means over seeds of each score and of ``target``, Spearman's rho with its permutation
p-values -- exact (every permutation) when there are at most ``max_exact`` (8! = 40320: up to 8
sites), else ``n_mc`` random permutations, stated in ``exact`` and ``n_permutations``; pooled
networks are permuted within each network and the statistic is the mean of their rhos. At the
first horizon (0: the jumpboard as inserted), for the scores in loss units (``GAIN_SCORES``), the
calibration slope of realised on predicted (OLS over the site means, Student-t interval with
``n - 2`` degrees of freedom; 1 is calibrated) and the mean of the per-seed slopes with its t
interval over seeds.

Parameters
----------
df : pandas.DataFrame
    The table of :func:`depthcert.predicted_vs_observed` (its ``kind == "seed"`` rows are used), or
    any table with ``site``, ``horizon``, ``seed``, the score columns and ``target``.
scores : sequence of str or None, default None
    The score columns (None: ``df.attrs["scores"]``, else those of ``SCORES`` present).
target : str, default "realised_gain"
    The realised column (``"tune_gain"``: the control arm).
level : float, default 0.05
    The slope intervals are two-sided at ``1 - level``; ``predicts`` is ``p_one_sided <= level``.
n_mc : int, default 9999
    Monte Carlo permutations beyond ``max_exact``.
max_exact : int, default 40320
    The largest number of permutations enumerated exactly.
seed : int, default 0
    Seed of the Monte Carlo permutations.

Returns
-------
pandas.DataFrame
    One row per horizon x score: ``rho``, ``p_one_sided`` (the ranking predicts: positive
    association), ``p_two_sided``, ``exact``, ``n_permutations``, ``n_units``, ``n_seeds``,
    ``predicts``, ``note`` (why a rho is undefined: a constant score), ``rho_seeds`` (mean per-seed rho) with ``rho_seeds_lo``/``rho_seeds_hi``, and at
    horizon 0 for gain scores ``slope``, ``intercept``, ``slope_lo``, ``slope_hi``, ``slope_seeds``,
    ``slope_seeds_lo``, ``slope_seeds_hi``.

Raises
------
ValueError
    A missing column, fewer than 3 sites, or a bad level, n_mc or max_exact (named).

Examples
--------
    >>> import pandas as pd
    >>> import depthcert as dc
    >>> df = pd.DataFrame({"seed": [0] * 4, "site": list("abcd"), "horizon": [0] * 4,
    ...                    "predicted_gain": [1.0, 2.0, 3.0, 4.0], "realised_gain": [2.0, 4.0, 6.0, 8.0]})
    >>> c = dc.calibration(df, scores=["predicted_gain"])
    >>> float(c["rho"][0]), float(c["p_one_sided"][0]) == 1 / 24, bool(c["exact"][0]), round(float(c["slope"][0]), 6)
    (1.0, True, True, 2.0)
"""


@doc(_DOC_CAL)
def calibration(df, scores=None, target: str = "realised_gain", level: float = 0.05, *, n_mc: int = 9999,
                max_exact: int = 40320, seed: int = 0):
    import pandas as pd

    from numerics.trial import calibration_slope, mean_interval, rank_test, spearman

    level = _check_level(level)
    n_mc, max_exact = _positive_int("n_mc", n_mc), _positive_int("max_exact", max_exact)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df is a {type(df).__name__}, must be the pandas.DataFrame of dc.predicted_vs_observed.")
    rows = _seed_rows_only(df)
    if scores is None:
        scores = df.attrs.get("scores") or [s for s in SCORES if s in df.columns]
    scores = [scores] if isinstance(scores, str) else list(scores)
    need = ["site", "horizon", target, *scores]
    missing = [c for c in need if c not in rows.columns]
    if missing:
        raise ValueError(f"df lacks the columns {missing}, must have {need} (the table of dc.predicted_vs_observed).")
    units = ["network", "site"] if "network" in rows.columns else ["site"]
    if "seed" not in rows.columns:
        rows = rows.assign(seed=0)
    first = min(rows["horizon"])
    out = []
    for h, g in rows.groupby("horizon", sort=True):
        means = g.groupby(units, sort=False)[[target, *scores]].mean(numeric_only=False).reset_index()
        for score in scores:
            m = means[units + [score, target]].astype({score: float, target: float}).dropna()
            if len(m) < 3:
                raise ValueError(f"df has {len(m)} sites with a finite {score!r} and {target!r} at horizon {h}, "
                                 "must have >= 3 (a rank test over sites).")
            strata = m["network"].to_numpy() if "network" in units else None
            rt = rank_test(m[score].to_numpy(), m[target].to_numpy(), strata, max_exact=max_exact, n_mc=n_mc, seed=seed)
            per_seed = []
            slopes = []
            for _, gs in g.groupby("seed"):
                v = gs[[score, target]].astype(float).dropna()
                if len(v) >= 3:
                    per_seed.append(spearman(v[score], v[target]))
                    if score in GAIN_SCORES and h == first:
                        slopes.append(calibration_slope(v[score], v[target], level)["slope"])
            rs, rlo, rhi = mean_interval(per_seed, level)
            row = {"horizon": h, "score": score, "target": target, **{k: rt[k] for k in
                   ("rho", "p_one_sided", "p_two_sided", "exact", "n_permutations", "n_units", "n_strata")},
                   "n_seeds": int(g["seed"].nunique()), "predicts": bool(rt["p_one_sided"] <= level),
                   "note": rt.get("note", ""),
                   "rho_seeds": rs, "rho_seeds_lo": rlo, "rho_seeds_hi": rhi, "level": level}
            if score in GAIN_SCORES and h == first:
                cs = calibration_slope(m[score].to_numpy(), m[target].to_numpy(), level)
                ss, slo, shi = mean_interval(slopes, level)
                row.update(slope=cs["slope"], intercept=cs["intercept"], slope_lo=cs["slope_lo"], slope_hi=cs["slope_hi"],
                           slope_seeds=ss, slope_seeds_lo=slo, slope_seeds_hi=shi)
            out.append(row)
    cols = ["horizon", "score", "target", "rho", "p_one_sided", "p_two_sided", "exact", "n_permutations", "n_units",
            "n_strata", "n_seeds", "predicts", "note", "rho_seeds", "rho_seeds_lo", "rho_seeds_hi", "level", "slope", "intercept",
            "slope_lo", "slope_hi", "slope_seeds", "slope_seeds_lo", "slope_seeds_hi"]
    return pd.DataFrame(out, columns=cols)


_DOC_FOC = """
The first-order check: at a small fraction ``tau`` of the jumpboard step, does the realised gain
match the first-order prediction?

Per seed (roles as :func:`depthcert.predicted_vs_observed`) and site, the jumpboard ``V`` of
``family`` (as :func:`depthcert.insert_block` inserts it) is scaled by ``tau`` and its held-out gain
measured; the prediction along that step is Theorem 1's quadratic model ``g(tau) = G_J (2 tau -
tau^2)`` with ``G_J = beta_f ||V||^2 / 2`` (``jumpboard_gain``), whose first-order term
``2 tau G_J = tau * slope * ||V||`` dominates for small ``tau``. Paper B's claim is first order: the
ratio realised / predicted tends to 1. Over seeds, the per-seed ratio's mean with its Student-t
interval (:func:`numerics.trial.ratio_check`); ``flagged`` when the interval excludes 1.

Parameters
----------
model : torch.nn.Module
    The network (never changed).
data : callable or data
    As :func:`depthcert.predicted_vs_observed` (the ``train`` role is not used).
sites : str, list of str or None, default "blocks.*"
    As :func:`depthcert.saturation`.
taus : sequence of float, default (0.05,)
    Fractions of the jumpboard step, each in (0, 1].
seeds : sequence of int, default (0, 1, 2, 3, 4)
    Distinct seeds >= 0 (at least 2 for an interval).
family : str, default "readout"
    The family of the block.
loss : str or callable, default "cross_entropy"
    As :func:`depthcert.saturation`.
level : float, default 0.05
    The interval is two-sided at ``1 - level``.
scan_kwargs : dict or None
    Further keywords for :func:`depthcert.saturation` (``width``, ``curvature_n``, ...).

Returns
-------
pandas.DataFrame
    Rows ``kind == "seed"`` (``seed, site, tau, predicted, realised, jumpboard_gain``) and one row
    ``kind == "check"`` per site x tau: ``ratio``, ``ratio_lo``, ``ratio_hi``, ``flagged``, ``n_seeds``,
    ``n_dropped`` (seeds without descent, ``predicted <= 0``).

Raises
------
TypeError, ValueError
    A bad model, data, site, family, tau, seed or level (named with the allowed values).

Examples
--------
    >>> import torch
    >>> from torch import nn
    >>> import depthcert as dc
    >>> _ = torch.manual_seed(0)
    >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    >>> def draw(seed, role):
    ...     g = torch.Generator().manual_seed(1000 * seed + ("scan", "train", "heldout").index(role))
    ...     x = torch.randn(512, 3, generator=g)
    ...     return x, (x[:, 0] * x[:, 1] > 0).long()
    >>> chk = dc.first_order_check(net, draw, sites=["1"], seeds=(0, 1, 2))
    >>> row = chk[chk["kind"] == "check"].iloc[0]
    >>> row["site"], bool(row["flagged"]) == (not row["ratio_lo"] <= 1 <= row["ratio_hi"])
    ('1', True)
"""


@doc(_DOC_FOC)
def first_order_check(model, data, sites="blocks.*", taus=(0.05,), seeds=(0, 1, 2, 3, 4), *, family: str = "readout",
                      loss="cross_entropy", level: float = 0.05, scan_kwargs: dict | None = None):
    import pandas as pd

    from depthcert.api._loss import as_loss
    from depthcert.api._saturation import check_model
    from numerics.families import PROTOCOL_FAMILIES
    from numerics.trial import ratio_check

    check_model(model)
    ss, level = _check_seeds(seeds), _check_level(level)
    if isinstance(taus, (str, bytes)) or not hasattr(taus, "__iter__") or not list(taus) or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and 0.0 < float(t) <= 1.0 for t in taus):
        raise ValueError(f"taus == {taus!r}, must be a non-empty sequence of floats in (0, 1].")
    if family not in PROTOCOL_FAMILIES:
        raise ValueError(f"family == {family!r}, must be one of {list(PROTOCOL_FAMILIES)}.")
    kw = merge_scan_kwargs({"loss": loss}, scan_kwargs)
    loss_fn = as_loss(loss, kw.get("output"))
    rows = []
    for seed in ss:
        sc = _seed_scan(model, data, seed, sites, family, loss_fn, kw)
        for site, (block, beta) in sc["jump"].items():
            gj = _jumpboard_gain(block, beta)
            for tau in taus:
                scaled = copy.deepcopy(block)
                with torch.no_grad():
                    scaled.V.mul_(float(tau))
                g, sd = _gain(_attach(model, site, scaled), sc["samples"]["heldout"], sc["old"], loss_fn)
                rows.append({"kind": "seed", "seed": seed, "site": site, "tau": float(tau), "jumpboard_gain": gj,
                             "predicted": gj * (2 * tau - tau * tau), "realised": g, "realised_sd": sd})
    df = pd.DataFrame(rows)
    checks = []
    for (site, tau), g in df.groupby(["site", "tau"], sort=False):
        r = ratio_check(g["realised"], g["predicted"], level)
        checks.append({"kind": "check", "site": site, "tau": tau, **{k: v for k, v in r.items() if k != "ratios"}})
    out = pd.concat([df, pd.DataFrame(checks)], ignore_index=True)
    out["seed"] = out["seed"].astype("Int64")
    out.attrs.update(level=level, family=family, roles={"scan": "the jumpboard's V and beta_f (the prediction)",
                                                        "heldout": "the realised gain at tau V"})
    return out


_DOC_PLOT = """
The figure of predicted against observed: one panel per horizon (a score's site means against the
realised gains, intervals over seeds, the identity line) and one of rho against horizon per score.

Parameters
----------
df : pandas.DataFrame
    The table of :func:`depthcert.predicted_vs_observed`.
calib : pandas.DataFrame or None, default None
    Its :func:`depthcert.calibration` (None: computed).
score : str, default "predicted_gain"
    The score on the x axis of the per-horizon panels.

Returns
-------
matplotlib.figure.Figure
    ``len(horizons) + 1`` axes (the caller saves or closes it).

Raises
------
ValueError
    ``score`` is not a column of ``df`` (named).

Examples
--------
    >>> import pandas as pd
    >>> import depthcert as dc
    >>> df = pd.DataFrame({"seed": [0] * 4 + [1] * 4, "site": list("abcd") * 2, "horizon": [0] * 8,
    ...                    "predicted_gain": [1, 2, 3, 4, 1.1, 2.1, 2.9, 4.2], "realised_gain": [1, 2, 4, 3, 1, 2.5, 3, 4]})
    >>> fig = dc.plot_calibration(df)
    >>> len(fig.axes), fig.axes[0].get_xlabel()
    (2, 'predicted_gain')
"""


@doc(_DOC_PLOT)
def plot_calibration(df, calib=None, score: str = "predicted_gain"):
    from numerics.trial._plots import calibration_figure

    if score not in df.columns:
        raise ValueError(f"score == {score!r}, must be a column of df (e.g. {[s for s in SCORES if s in df.columns]}).")
    if calib is None:
        calib = calibration(df, scores=[s for s in (df.attrs.get("scores") or SCORES) if s in df.columns])
    return calibration_figure(df, calib, score)
