"""Interop with GroMo (PyPI ``gromo``, growth of layers/blocks from first-order statistics), optional.

GroMo keeps, for an empty growing block (``hidden_features = 0``, the zero function),
``tensor_m_prev = (1/n) sum_i phi_i m_i^T`` and ``tensor_s_growth = (1/n) sum_i phi_i phi_i^T``
with ``phi = (u, 1)`` (``(u)`` without bias) -- THEORY §8's ``G^T`` and ``Sigma_phi`` of the
affine (linear) family at the block's input -- when the statistics are accumulated with a
*summed* loss (``compute_statistics`` insists on ``reduction="sum"``). Its first-order
improvement with every singular value kept is ``||S^{-1/2} N||_F^2 = tr(G Sigma^{-1} G^T)``,
our projection score ``P``. This module turns those statistics into our scores
(:func:`scores_from_gromo`), reads GroMo's own number (:func:`gromo_first_order_improvement`),
and runs our test, curvature and gain bounds at the block's site of a GroMo model
(:func:`certify_gromo_block`): what GroMo does not have (a stop rule, a test at a stated
level, curvature, a certified gain).

It sits with the studies because :func:`certify_gromo_block` runs the saturation study's
scan. Needs ``pip install depthcert[gromo]``; importing this module without GroMo is fine,
the functions raise :class:`~plumbing.validation.InputError` naming the extra.
"""
from __future__ import annotations

from typing import Mapping

import torch

from plumbing.validation import InputError

__all__ = ["certify_gromo_block", "gromo_first_order_improvement", "scores_from_gromo"]


def _require_gromo():
    try:
        import gromo  # noqa: F401
    except ImportError:   # pragma: no cover - optional extra
        raise InputError("gromo", "installed (pip install 'depthcert[gromo]')", "missing") from None


def scores_from_gromo(block) -> dict:
    """Our scores from the statistics a GroMo ``GrowingBlock`` accumulated (THEORY §8).

    Args:
        block: a GroMo ``LinearGrowingBlock`` after ``init_computation``, forward/backward of a
            summed loss and ``update_computation``.

    Returns:
        a dict ``{"G": (d, r), "Sigma_phi": (r, r), "P": tr(G Sigma^+ G^T), "G_sq": ||G||_F^2,``
        ``"family": "affine" | "linear", "n": samples}`` (float64 tensors/floats).
    """
    from numerics._numerics import psd_pinv

    _require_gromo()
    second = block.second_layer
    G = second.tensor_m_prev().detach().to(torch.float64).T
    Sigma = second.tensor_s_growth().detach().to(torch.float64)
    return {"G": G, "Sigma_phi": Sigma, "P": float(torch.trace(G @ psd_pinv(Sigma) @ G.T)),
            "G_sq": float(G.pow(2).sum()), "family": "affine" if block.first_layer.use_bias else "linear",
            "n": int(second.tensor_m_prev.samples)}


def gromo_first_order_improvement(block, numerical_threshold: float = 1e-15) -> float:
    """GroMo's own first-order improvement (TINY, every singular value kept, float64)."""
    _require_gromo()
    block.compute_optimal_updates(numerical_threshold=numerical_threshold, statistical_threshold=0.0,
                                  dtype=torch.float64)
    return float(block.first_order_improvement)


def certify_gromo_block(model, block_path: str, x: torch.Tensor, y: torch.Tensor, loss: str, *,
                        level: float = 0.05, sat: Mapping | None = None, seed: int = 0) -> dict:
    """Our saturation record at a GroMo block's site: scores, both tests, curvature, gain bounds.

    The empty GroMo block is the zero function, so its output is the residual stream at its
    input: the site is the block's module path (``block_path``). ``sat`` overrides the
    ``[saturation]`` defaults (families default to ``linear`` and ``affine``: GroMo's).

    Returns:
        the site record of :func:`numerics.studies.saturation.scan_model` plus the model verdict.
    """
    from numerics.seeding import Streams
    from numerics.studies.saturation import DEFAULT_CONFIG, scan_model
    from numerics.workloads import Workload

    _require_gromo()
    cfg = {**DEFAULT_CONFIG["saturation"], "families": ["linear", "affine"], "level": level,
           "probe_n": x.shape[0], "beta_n": min(1024, x.shape[0]), **dict(sat or {}), "sites": [block_path]}
    w = Workload("gromo", loss, (x, y), (x, y), (x, y), (x, y), 0, tuple(x.shape[1:]))
    res = scan_model(model, w, cfg, Streams(seed, seed))
    return {**res["sites"][0], "model": res["model"]}
