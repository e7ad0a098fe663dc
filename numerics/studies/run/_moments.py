"""The exact class of the run study (THEORY §4): risks of a readout block at the top as quadratics in ``V``.

With a ``readout`` block at the top, squared loss and a plain linear head, ``R_n(V)`` is a
quadratic in ``V`` whose coefficients are the sample's moments
(:class:`numerics.estimators.MomentAccumulator`): one pass over a sample gives the risk of
every ``V``, and the suprema of the deviations over the capped class are exact. Used by the
readout family's selection (:mod:`._family`) and by stage 4 (:mod:`._draw`). Its own module,
below both, so that neither imports the other for it (no circle).
"""
from __future__ import annotations

import torch

from bounds.families import RESIDUAL_FAMILIES

__all__ = ["add_moments", "is_exact_class", "moment_acc", "risk", "sample_moments"]


def is_exact_class(fixed) -> bool:
    """Readout block at the top, squared loss, plain linear head: risks are quadratics in ``V``
    (THEORY §4, exact supremum), so ``E_S``/``E_T`` can be checked as suprema over the class."""
    ex = fixed.expanded
    fam = RESIDUAL_FAMILIES.get(ex.block.family)      # frozen features: the risk is a quadratic in V alone
    return (fixed.at == fixed.net.depth and fam is not None and not fam.trains_features and ex.post_norm is None
            and fixed.loss == "squared" and type(fixed.net).__name__ == "PostNormResMLP")


def moment_acc(fixed):
    """An empty moment accumulator for ``fixed``'s head and block width."""
    from numerics.estimators import MomentAccumulator

    A = fixed.net.head.weight
    return MomentAccumulator(A.shape[0], fixed.expanded.block.r)


@torch.no_grad()
def add_moments(fixed, acc, u: torch.Tensor, target: torch.Tensor, m0_extra: float = 0.0) -> None:
    """Add the states ``u (n, d)`` and their targets to ``acc``."""
    head = fixed.net.head
    a = head(u) - target.reshape(u.shape[0], -1)
    acc.add(a, fixed.expanded.block.features(u), m0_extra)


def sample_moments(fixed, u: torch.Tensor, y: torch.Tensor, chunk: int = 1 << 16):
    """The moments of one sample of states ``u (n, d)`` and labels ``y`` (in chunks)."""
    acc = moment_acc(fixed)
    for i in range(0, u.shape[0], chunk):
        add_moments(fixed, acc, u[i:i + chunk], y[i:i + chunk])
    return acc.result()


def risk(fixed, moments, V: torch.Tensor) -> float:
    """``R_n(V)`` from a sample's moments (:func:`numerics.estimators.risk_from_moments`)."""
    from numerics.estimators import risk_from_moments

    return risk_from_moments(moments, fixed.net.head.weight, V)
