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
  the insertion point (with ``m_bar`` from the exact conditional expectation over ``y``).
"""
from __future__ import annotations

import torch

__all__ = ["probe_diagnostics"]


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
    from numerics.estimators import (activation_gradients, ag_max_per_candidate, c1_test, covariance_diagnostics,
                                     cross_gradient, cross_gradient_score, norm_diagnostics, projection_score,
                                     realisability_ratio)

    if n < 2:
        raise ValueError(f"n == {n}, must be >= 2 for the probe diagnostics.")
    at = expanded.at
    x, y = task.sample(n, seed)
    ms = activation_gradients(net, x, y, range(net.depth + 1), task.loss)   # one backward pass
    m_bar = activation_gradients(net, x, task.soft_targets(x), at, task.loss)[at]
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
        "covariance": covariance_diagnostics(ms[at]),
        "norms": norm_diagnostics(net, x),
        "paper_b": {
            "ag_max": ag["overall"], "ag_max_per_candidate": {str(k): v for k, v in ag["per_candidate"].items()},
            "cross_gradient_score": cross_gradient_score(cross_gradient(ms[at], phi)),
            "projection_score": projection_score(cross_gradient(m_bar, phi), phi),
            "realisability_ratio": realisability_ratio(m_bar, phi),
        },
    }
