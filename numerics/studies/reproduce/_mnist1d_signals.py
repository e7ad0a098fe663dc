"""Per-site activation-gradient statistics of the MNIST-1D depth cells under each convention.

One backward pass of the summed per-sample loss gives every sample's activation gradient
``m_i = d loss(f(x_i), y_i) / d u_site`` (the network is in eval mode and every layer acts on
one sample at a time, so the samples do not interact). From the ``(n, C, L)`` tensor of a
site this module computes, per convention the seeds leave open:

* the covariance's off-diagonal mass ratio ``||offdiag(Sigma)||_F / ||Sigma||_F`` of
  ``per_channel`` (the channel vector ``m_i[:, p]`` over samples and positions, ``C x C``),
  ``summed`` (the position-summed ``sum_p m_i[:, p]`` over samples, ``C x C``) and
  ``state`` (the whole flattened ``m_i`` over samples, ``CL x CL``), each with a
  permutation null (every coordinate permuted independently over the rows, which keeps
  the marginals and removes every cross-coordinate dependence);
* ``AG_max`` = ``max_i ||m_i||`` (per-sample loss; the gradient of a batch mean over ``B``
  samples is ``m_i / B`` exactly here, so that convention is a division, done by the study);
* the unbiased U-statistic of ``||E m||^2`` with its jackknife standard error
  (:func:`u_statistic_sq`): the raw activation-gradient signal.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import torch

__all__ = ["AG_CONVENTIONS", "CELL_FORMAT", "COVARIANCE_CONVENTIONS", "activation_gradients", "ag_curves", "covariance_conventions",
           "offdiag_ratio", "permutation_null", "site_conventions", "site_value", "u_statistic_sq"]

#: The stored depth-cell format: 1 (the first registry: probe AG_max, per-channel covariance, the scan's G) and
#: 2 (adds the fields of :func:`site_conventions`). It is part of the cell's config, hence of its hash.
CELL_FORMAT = 2

#: The covariance conventions (module docstring).
COVARIANCE_CONVENTIONS = ("per_channel", "summed", "state")


def activation_gradients(net, sites: Sequence[str], x: torch.Tensor, y: torch.Tensor, loss: str,
                         batch_size: int = 512) -> dict[str, torch.Tensor]:
    """``{site: m (n, ...)}``: every sample's activation gradient of its own loss (one backward per batch)."""
    from numerics._numerics import per_sample_loss
    from numerics.sites import SiteProbe

    ms: dict = {s: [] for s in sites}
    with SiteProbe(net, sites) as probe:
        for i in range(0, x.shape[0], batch_size):
            probe.reset()
            with torch.enable_grad():
                total = per_sample_loss(net(x[i:i + batch_size]), y[i:i + batch_size], loss).sum()
                for s, g in probe.grads(total).items():
                    ms[s].append(g.detach())
    return {s: torch.cat(v) for s, v in ms.items()}


def _rows(m: torch.Tensor, convention: str) -> torch.Tensor:
    if m.dim() == 2 or convention == "state":
        return m.reshape(m.shape[0], -1)
    if convention == "summed":
        return m.sum(dim=-1)
    return m.movedim(1, -1).reshape(-1, m.shape[1])                 # per_channel: (n L, C)


def offdiag_ratio(rows: torch.Tensor) -> float:
    """``||offdiag(Sigma)||_F / ||Sigma||_F`` of the covariance of ``rows (n, d)`` (0 when Sigma is zero)."""
    sigma = torch.cov(rows.T.to(torch.float64)).reshape(rows.shape[1], rows.shape[1])
    fro = float(sigma.norm())
    return float((sigma - torch.diag(torch.diagonal(sigma))).norm()) / fro if fro > 0 else 0.0


def permutation_null(rows: torch.Tensor, seed: int = 0) -> float:
    """:func:`offdiag_ratio` after permuting every column of ``rows`` independently (one draw, fixed seed)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    idx = torch.argsort(torch.rand(rows.shape, generator=g), dim=0).to(rows.device)
    return offdiag_ratio(torch.gather(rows, 0, idx))


def covariance_conventions(m: torch.Tensor, seed: int = 0) -> dict:
    """``{convention: ratio, convention + "_null": permutation-null ratio}`` for one site's ``m``."""
    out = {}
    for conv in COVARIANCE_CONVENTIONS:
        rows = _rows(m, conv)
        out[conv], out[conv + "_null"] = offdiag_ratio(rows), permutation_null(rows, seed)
    return out


def u_statistic_sq(X: torch.Tensor) -> tuple[float, float]:
    """``(U, se)``: the unbiased U-statistic of ``||E X||^2`` from the rows of ``X (n, ...)`` and its jackknife
    standard error.

    ``U = (||S||^2 - Q) / (n (n-1))`` with ``S = sum_i X_i``, ``Q = sum_i ||X_i||^2``; the
    leave-one-out values ``U_(-i) = (||S - X_i||^2 - Q + ||X_i||^2) / ((n-1)(n-2))`` in closed
    form (one matrix-vector product), ``se^2 = (n-1)/n sum_i (U_(-i) - mean)^2``.

    Raises:
        ValueError: fewer than 3 rows.
    """
    X = X.reshape(X.shape[0], -1).to(torch.float64)
    n = X.shape[0]
    if n < 3:
        raise ValueError(f"n == {n}, must be >= 3 for the jackknife.")
    S, sq = X.sum(0), X.pow(2).sum(1)
    Q, S2 = float(sq.sum()), float(S @ S)
    U = (S2 - Q) / (n * (n - 1))
    loo = (S2 - 2 * (X @ S) + sq - Q + sq) / ((n - 1) * (n - 2))
    se = math.sqrt(float((n - 1) / n * (loo - loo.mean()).pow(2).sum()))
    return U, se


def site_conventions(probe: Mapping[str, torch.Tensor], train: Mapping[str, torch.Tensor]) -> dict:
    """Per site (lists in ``probe``'s order): the covariance conventions with their nulls (probe sample),
    ``AG_max_train`` (the training sample), ``m_sq_ustat`` and ``m_sq_ustat_se`` (probe)."""
    out: dict = {}
    for k, (s, m) in enumerate(probe.items()):
        rec = covariance_conventions(m, seed=k)
        rec["AG_max_train"] = float(train[s].reshape(train[s].shape[0], -1).norm(dim=1).max())
        rec["m_sq_ustat"], rec["m_sq_ustat_se"] = u_statistic_sq(m)
        for key, v in rec.items():
            out.setdefault(key, []).append(v)
    return out


#: ``(name, per-site field, site)``: the sample set x the site; ``AG_max`` is the probe's (held out).
AG_CONVENTIONS = tuple((f"{sample}, {site}", key, site)
                       for sample, key in (("training sample", "AG_max_train"), ("held-out probe", "AG_max"))
                       for site in ("top site", "stem", "max over sites"))


def site_value(sites: dict, key: str, site: str) -> float:
    v = sites[key]
    return float(v[-1] if site == "top site" else v[0] if site == "stem" else max(v))


def ag_curves(cells, key: str, site: str):
    """``(depths, log AG_max (seeds x depths), test loss (seeds x depths))`` for one convention (D >= 1, complete
    seeds)."""
    D = sorted({c["config"]["model"]["depth"] for c in cells})
    by: dict = {}
    for c in cells:
        by.setdefault(c["config"]["seed"], {})[c["config"]["model"]["depth"]] = c
    seeds = [s for s in sorted(by) if len(by[s]) == len(D)]
    if len(seeds) < 2 or len(D) < 4:
        raise ValueError(f"AG_max vs depth needs >= 2 complete seeds and >= 4 depths, got {len(seeds)} and {len(D)}")
    log_ag = np.log([[site_value(by[s][d]["diagnostics"]["sites"], key, site) for d in D] for s in seeds])
    return np.asarray(D, float), log_ag, np.array([[by[s][d]["L_test"] for d in D] for s in seeds])
