"""Per-sample activation gradients ``m_i``, cross-gradient ``G`` and its U-statistic (THEORY §1, §8).

Because no operation couples samples (no batch-norm), the gradient of the *summed* loss
with respect to a state ``z_l`` of shape ``(n, d)`` has row ``i`` equal to
``m_i = d l(f(x_i), y_i) / d z_l``: one backward pass gives every ``m_i`` at every
requested insertion point.
"""
from __future__ import annotations


import numbers

import torch

from numerics._numerics import per_sample_loss
from numerics.insertion import ExpandedModel
from numerics.models import check_per_sample


def activation_gradients(model, x: torch.Tensor, y: torch.Tensor, at, loss: str = "cross_entropy"
                         ) -> dict[int, torch.Tensor]:
    """``m_i = d l(f_top(u_i), y_i) / d u`` at each insertion point, from ONE backward pass (THEORY §1).

    With soft targets (CE: probability rows ``(n, C)``; squared: the conditional mean), the
    loss is the conditional expectation over ``y`` and the rows are ``m_bar(u_i)`` (§8).

    Args:
        model: a post-norm model (any ``at`` in ``0..D``), or an :class:`ExpandedModel`
            (``at`` must be its own insertion point; gradient at its current ``theta``).
        x: inputs ``(n, ...)``; y: targets ``(n,)`` or ``(n, C)``.
        at: an int or an iterable of ints.
        loss: ``"cross_entropy"`` or ``"squared"``.

    Returns:
        ``{l: m_l}`` with ``m_l`` detached, shape ``(n, d)`` (states flattened).

    Raises:
        ValueError: batch-norm model, or a point the model does not have.

    Example:
        >>> from numerics.models import PostNormResMLP
        >>> net = PostNormResMLP(3, 8, 2, 4)
        >>> x, y = torch.randn(5, 3, dtype=torch.float64), torch.tensor([0, 1, 2, 3, 0])
        >>> m = activation_gradients(net, x, y, at=[0, 2])
        >>> sorted(m), tuple(m[2].shape)
        ([0, 2], (5, 8))
    """
    check_per_sample(model)
    points = [int(at)] if isinstance(at, numbers.Integral) else sorted({int(p) for p in at})
    if isinstance(model, ExpandedModel):
        if points != [model.at]:
            raise ValueError(f"at == {at!r}, must be the expanded model's insertion point {model.at}.")
        return {model.at: activation_gradients_on_states(model, model.base.bottom(x, model.at), y, loss)}
    logits, states = model.forward_collect(x, points)
    total = per_sample_loss(logits, y, loss).sum()
    grads = torch.autograd.grad(total, [states[p] for p in points])
    return {p: g.detach().reshape(g.shape[0], -1) for p, g in zip(points, grads)}


def activation_gradients_on_states(expanded: ExpandedModel, u: torch.Tensor, y: torch.Tensor,
                                   loss: str = "cross_entropy") -> torch.Tensor:
    """``m_i = d l(f_top(u_i + h(u_i)), y_i) / d u`` from precomputed states ``u = f_bot(x)`` (THEORY §1).

    One backward pass of the summed loss; ``f_bot`` is frozen, so callers that already
    hold ``u`` (e.g. for the whole training sample) need not run the bottom again.

    Args:
        expanded: an :class:`~numerics.insertion.ExpandedModel` (gradient at its ``theta``).
        u: states ``(n, d)`` at ``expanded.at``; y: targets as for :func:`activation_gradients`.

    Returns:
        ``m`` detached, shape ``(n, d)``.
    """
    check_per_sample(expanded)
    u = u.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(per_sample_loss(expanded.top_from_u(u), y, loss).sum(), [u])
    return g.detach().reshape(g.shape[0], -1)


def _check_pair(m: torch.Tensor, phi: torch.Tensor) -> None:
    if m.dim() != 2 or phi.dim() != 2 or m.shape[0] != phi.shape[0]:
        raise ValueError(f"expected m (n, d) and phi (n, r) with the same n, "
                         f"got {tuple(m.shape)} and {tuple(phi.shape)}.")


def cross_gradient(m: torch.Tensor, phi: torch.Tensor) -> torch.Tensor:
    """``G_S = (1/n) sum_i m_i phi_i^T = m^T phi / n`` (THEORY §1), shape ``(d, r)``.

    Args:
        m: ``(n, d)`` activation gradients; phi: ``(n, r)`` block features.

    Raises:
        ValueError: shapes do not match.

    Example:
        >>> cross_gradient(torch.ones(4, 2), torch.ones(4, 3)).shape
        torch.Size([2, 3])
    """
    _check_pair(m, phi)
    return m.T @ phi / m.shape[0]


def u_statistic_sq_norm(m: torch.Tensor, phi: torch.Tensor) -> float:
    """Unbiased ``S_hat = (||sum_i X_i||^2 - sum_i ||X_i||^2) / (n (n-1))`` for ``||G||_F^2`` (THEORY §8).

    ``X_i = m_i phi_i^T`` is never formed: ``||sum_i X_i||_F = ||m^T phi||_F`` and
    ``||X_i||_F = ||m_i|| ||phi_i||``, so the cost is ``O(n d r)``.

    Args:
        m: ``(n, d)``; phi: ``(n, r)``; ``n >= 2``.

    Raises:
        ValueError: shapes do not match or ``n < 2``.

    Example:
        >>> m, phi = torch.tensor([[1.0], [1.0]]), torch.tensor([[2.0], [2.0]])
        >>> u_statistic_sq_norm(m, phi)
        4.0
    """
    _check_pair(m, phi)
    n = m.shape[0]
    if n < 2:
        raise ValueError(f"n == {n}, must be >= 2 for the U-statistic.")
    first = (m.T @ phi).pow(2).sum()
    # Fused row norms: no (n, d) temporary.
    second = torch.dot(torch.linalg.vector_norm(m, dim=1).square(),
                       torch.linalg.vector_norm(phi, dim=1).square())
    return float((first - second) / (n * (n - 1)))


def first_order_scan(model, x: torch.Tensor, y: torch.Tensor, blocks: dict, loss: str = "cross_entropy"
                     ) -> dict:
    """All candidates at once: ``m_l`` (one backward), ``G_l`` and ``AG_max`` (THEORY §8).

    Args:
        model: post-norm base model.
        blocks: ``{l: block}`` with ``block.features(u) -> (n, r)`` (e.g. the ``.block`` of
            :func:`~numerics.insertion.insert_block`).

    Returns:
        ``{"G": {l: (d, r)}, "ag_max": {l: float}, "ag_max_overall": float}``.
    """
    points = sorted(blocks)
    check_per_sample(model)
    logits, states = model.forward_collect(x, points)
    grads = torch.autograd.grad(per_sample_loss(logits, y, loss).sum(), [states[p] for p in points])
    out = {"G": {}, "ag_max": {}}
    with torch.no_grad():
        for p, g in zip(points, grads):
            m = g.reshape(g.shape[0], -1)
            phi = blocks[p].features(states[p])
            out["G"][p] = m.T @ phi / m.shape[0]
            out["ag_max"][p] = float(m.norm(dim=1).max())
    out["ag_max_overall"] = max(out["ag_max"].values())
    return out
