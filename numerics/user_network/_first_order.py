"""``dc.first_order_check``: at a small step, does the realised gain match the first-order prediction?"""
from __future__ import annotations

import copy

import torch

from numerics.user_network._predicted import _attach, _check_level, _check_seeds, _gain, _jumpboard_gain, _seed_scan, merge_scan_kwargs

__all__ = ["first_order_check"]


def first_order_check(model, data, sites="blocks.*", taus=(0.05,), seeds=(0, 1, 2, 3, 4), *, family: str = "readout",
                      loss="cross_entropy", level: float = 0.05, scan_kwargs: dict | None = None):
    """The first-order check: at a small fraction ``tau`` of the jumpboard step, does the realised gain
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
    from numerics.distributed import refuse as refuse_distributed
    refuse_distributed("dc.first_order_check", "its realised gains are not reduced across ranks")
    import pandas as pd

    from numerics.user_network._loss import as_loss
    from numerics.user_network._saturation import check_model
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


