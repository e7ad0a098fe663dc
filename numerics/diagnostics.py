"""Assumption diagnostics and Paper B scores of one experiment, on an independent probe sample.

Everything here is measured on a fresh probe sample ``x`` (labels drawn from the task),
independent of ``S``, ``T`` and the population sample of the route quantities:

* (C1) finite-sample test of ``G != 0`` (THEORY §2, §8): the Hoeffding U-statistic test at
  the experiment's level, with a data-free bound ``b >= ||m_i|| ||phi_i||`` (the level then
  holds) and, for comparison, with ``b`` = the sample maximum (level only approximate);
* (A3) the activation-gradient covariance: spectral norm, trace, off-diagonal mass ratio;
* (A-norm) norms and the minimum pre-norm RMS at every normalisation;
* Paper B (THEORY §8): AG_max per candidate ``l = 0..D`` and overall (all from one
  backward pass), the cross-gradient and projection scores and the realisability ratio at
  the insertion point (with ``m_bar`` from the exact conditional expectation over ``y``);
* per site ``l = 0..D`` (``sites``): the first-order signal ``||G_l||`` of the readout
  family with the inserted block's features (``G_l = E[m_bar_l phi(z_l)^T]``, plug-in
  mean over the probe sample, its standard error and the unbiased U-statistic of
  ``||G_l||^2``) and the (A3) off-diagonal mass ratio of ``Cov(m_l)``. Appendix M's
  ``s(D) = max_l ||G_l||`` (THEORY §7) is read from these.
"""
from __future__ import annotations

import torch

__all__ = ["probe_diagnostics", "site_signals"]

#: Largest width whose (A3) covariance matrix at the insertion site is stored in full (heatmap).
MAX_STORED_COVARIANCE = 64
#: Largest number of entries of the per-site covariance matrices stored together.
MAX_STORED_SITE_ENTRIES = 20_000


def probe_diagnostics(net, expanded, task, n: int, seed: int, level: float, b: float | None = None) -> dict:
    """Diagnostics of the reference model ``net`` and the inserted block of ``expanded``.

    Args:
        net: the reference post-norm model (``f_old``).
        expanded: ``f_old`` with the zero-initialised block (its ``at`` and features).
        task: a teacher task with ``sample(n, seed)`` and ``soft_targets(x)``.
        n: probe sample size (``>= 2``).
        seed: seed of the probe sample.
        level: level of the (C1) test.
        b: a data-free bound on ``||m_i|| ||phi_i||`` (e.g. ``L_loss L_top rho_phi``: THEORY
            §1-§4); ``None`` reports only the approximate test.

    Returns:
        ``{"c1_test": {...}, "covariance": {...}, "norms": {...}, "paper_b": {...}}``.
    """
    from numerics.estimators import (activation_gradients, ag_max_per_candidate, c1_test,
                                     cross_gradient, cross_gradient_score, norm_diagnostics, projection_score,
                                     realisability_ratio)

    if n < 2:
        raise ValueError(f"n == {n}, must be >= 2 for the probe diagnostics.")
    at = expanded.at
    x, y = task.sample(n, seed)
    ms = activation_gradients(net, x, y, range(net.depth + 1), task.loss)   # one backward pass
    m_bars = activation_gradients(net, x, task.soft_targets(x), range(net.depth + 1), task.loss)
    m_bar = m_bars[at]
    with torch.no_grad():
        phi = expanded.block.features(net.bottom(x, at))
    tests = {"c1_test_approx": c1_test(ms[at], phi, level=level)}
    if b is not None:
        tests["c1_test"] = c1_test(ms[at], phi, level=level, b=b)
    ag = ag_max_per_candidate(ms)
    return {
        "n_probe": n,
        **{k: {"s_hat": r.s_hat, "threshold": r.threshold, "level": r.level, "signal_detected": r.signal_detected,
               "b": r.b, "b_from_data": r.b_from_data} for k, r in tests.items()},
        "covariance": _covariance_with_matrix(ms[at]),
        "sites": site_signals(net, expanded.block, x, ms, m_bars),
        "norms": norm_diagnostics(net, x),
        "paper_b": {
            "ag_max": ag["overall"], "ag_max_per_candidate": {str(k): v for k, v in ag["per_candidate"].items()},
            "cross_gradient_score": cross_gradient_score(cross_gradient(ms[at], phi)),
            "projection_score": projection_score(cross_gradient(m_bar, phi), phi),
            "realisability_ratio": realisability_ratio(m_bar, phi),
        },
    }


def _covariance_with_matrix(m: torch.Tensor) -> dict:
    from numerics.estimators import covariance_diagnostics

    out = covariance_diagnostics(m)
    if m.shape[1] <= MAX_STORED_COVARIANCE:
        out["matrix"] = torch.cov(m.T.to(torch.float64)).reshape(m.shape[1], m.shape[1]).tolist()
    return out


@torch.no_grad()
def site_signals(net, block, x: torch.Tensor, ms: dict, m_bars: dict) -> dict:
    """Per site ``l``: ``||G_l||`` with ``block``'s features, its standard error, ``||G_l||^2``
    as a U-statistic, and the off-diagonal ratio of ``Cov(m_l)`` (THEORY §2, §7, §8).

    ``G_l = (1/n) sum_i m_bar_i phi(z_l(x_i))^T`` (``m_bar``: exact ``y``-expectation, so
    only ``x`` is random); the standard error is that of a mean of the ``X_i = m_bar_i
    phi_i^T`` in Frobenius norm, ``sqrt((sum ||X_i||^2 - n ||G||^2) / (n (n-1)))``.

    Args:
        net: the reference model; block: a readout block (its frozen ``U0, b0``).
        x: probe inputs ``(n, ...)``; ms / m_bars: ``{l: (n, d)}`` activation gradients with
            sampled labels / with soft targets.

    Returns:
        dict of lists indexed by ``l = 0..D`` (``G_norm``, ``G_norm_stderr``,
        ``G_sq_ustat``, ``offdiag_ratio``) plus ``s_max`` (``max_l G_norm``) and ``argmax``;
        ``covariance`` (``Cov(m_l)`` per site) when ``(D+1) d^2`` is at most
        ``MAX_STORED_SITE_ENTRIES``.
    """
    from numerics.estimators import covariance_diagnostics, u_statistic_sq_norm

    _, states = net.forward_collect(x, range(net.depth + 1))
    out = {"G_norm": [], "G_norm_stderr": [], "G_sq_ustat": [], "offdiag_ratio": []}
    for l in range(net.depth + 1):
        m, phi = m_bars[l], block.features(states[l].detach())
        n = m.shape[0]
        G_sq = float((m.T @ phi).div(n).pow(2).sum())
        sq = float(torch.dot(m.pow(2).sum(1), phi.pow(2).sum(1)))
        out["G_norm"].append(G_sq ** 0.5)
        out["G_norm_stderr"].append(max(sq - n * G_sq, 0.0) ** 0.5 / (n * (n - 1)) ** 0.5)
        out["G_sq_ustat"].append(u_statistic_sq_norm(m, phi))
        out["offdiag_ratio"].append(covariance_diagnostics(ms[l])["offdiag_ratio"])
    out["argmax"] = max(range(net.depth + 1), key=lambda l: out["G_norm"][l])
    out["s_max"] = out["G_norm"][out["argmax"]]
    d = ms[0].shape[1]
    if (net.depth + 1) * d * d <= MAX_STORED_SITE_ENTRIES:
        out["covariance"] = [torch.cov(ms[l].T.to(torch.float64)).reshape(d, d).tolist() for l in range(net.depth + 1)]
    return out
