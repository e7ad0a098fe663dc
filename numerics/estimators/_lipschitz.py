"""Loss constants ``B, L_loss`` and the Lipschitz constant of ``f_top`` (THEORY §1, §2 A-Lip)."""
from __future__ import annotations

from typing import Sequence

import torch

from numerics._numerics import check_loss, spectral_norm
from numerics.insertion import ExpandedModel
from numerics.models import check_per_sample


def _base(model):
    return model.base if isinstance(model, ExpandedModel) else model


def loss_constants(model, loss: str, *, target_bound: float | None = None,
                   extra_head_input: float = 0.0) -> tuple[float, float]:
    """``(B, L_loss)`` from the model's weights only (post-norm, THEORY §1), via ``bounds.loss``.

    Cross-entropy: ``B = log C + 2 max_k (||A_k|| rho + |c_k|)``, ``L_loss = sqrt(2)`` with
    ``rho`` the bound on the head input. Squared loss ``||f - y||^2``:
    ``B = (F + Y)^2``, ``L_loss = 2 (F + Y)`` with ``F = ||A||_2 rho + ||c||`` and
    ``Y = target_bound``.

    Args:
        model: post-norm model or expanded model.
        loss: ``"cross_entropy"`` or ``"squared"``.
        target_bound: ``Y >= ||y||`` almost surely (squared loss only, required).
        extra_head_input: added to ``rho`` when a block is inserted at ``l = D`` without
            post-norm (then ``||u + h(u)|| <= rho + nu_V rho_phi``); 0 otherwise.

    Raises:
        ValueError: unknown loss, or squared loss without ``target_bound``.
    """
    from bounds.loss import cross_entropy_constants, squared_loss_constants

    check_loss(loss)
    base = _base(model)
    check_per_sample(base)
    rho = base.head_input_bound() + float(extra_head_input)
    A, c = base.head.weight.detach(), base.head.bias.detach()
    if loss == "cross_entropy":
        return cross_entropy_constants(A.shape[0], A.norm(dim=1).tolist(), c.tolist(), rho)
    if target_bound is None:
        raise ValueError("target_bound == None, must be a number >= 0 (||y|| bound) for squared loss.")
    return squared_loss_constants(spectral_norm(A) * rho + float(c.norm()), target_bound)


def _layer_scale(r_min, j: int, depth: int):
    if r_min is None or isinstance(r_min, (int, float)):
        return r_min
    if len(r_min) != depth + 1:
        raise ValueError(f"expected r_min of length D + 1 == {depth + 1} (per norm, index j for "
                         f"z_j), got {len(r_min)}.")
    return r_min[j]


def lipschitz_top_certified(model, at: int, r_min: float | Sequence[float] | None = None) -> float:
    """``L_top <= prod_{j > at} Lip(N_j) (1 + Lip(g_j)) * ||A||_2`` (THEORY §2, A-Lip).

    ``Lip(N_j) = ||gamma_j||_inf / sqrt(r_min_j^2 + eps_n)`` when the pre-norm scale is at
    least ``r_min_j`` on the domain, else the engineering-eps route
    ``||gamma_j||_inf / sqrt(eps_n)``. With ``r_min`` the bound holds only on the domain
    where every pre-norm scale is ``>= r_min_j``. For the generalisation costs (THEORY §4)
    that domain must contain every ``u_i + h`` of the capped class, not only the sample
    states: an ``r_min`` measured by ``norm_diagnostics`` at the samples gives a *local*
    Jacobian bound, not a certified ``L_top`` (``numerics.studies.run`` therefore uses the
    top insertion, where ``L_top = ||A||_2`` exactly, or the engineering-eps route).

    Args:
        model: post-norm model, or expanded model (its post-norm, if any, counts too).
        at: insertion point.
        r_min: None (eps route), one float, or a sequence indexed by ``j = 0..D``
            (the minimum pre-norm scale of the norm producing ``z_j``).

    Raises:
        ValueError: batch-norm model; ``eps_n == 0`` with ``r_min`` None.
    """
    base = _base(model)
    check_per_sample(base)
    base._check_at(at)
    bound = base.head_lipschitz_bound()
    for j in range(at, base.depth):
        scale = _layer_scale(r_min, j + 1, base.depth)
        bound *= base.norms[j].lipschitz_bound(scale) * (1.0 + base.branch_lipschitz_bound(j))
    if isinstance(model, ExpandedModel) and model.post_norm is not None:
        bound *= model.post_norm.lipschitz_bound(_layer_scale(r_min, at, base.depth))
    return bound


def lipschitz_top_empirical(model, at: int, u: torch.Tensor, iters: int = 30, seed: int = 0) -> float:
    """``max_i ||J_{f_top}(u_i)||_2`` by batched power iteration with jvp/vjp (THEORY §2).

    (jvp by the double-backward trick on one recorded graph: faster than ``torch.func``
    here, and exact.)

    ``f_top`` acts on each sample separately, so one jvp/vjp pair on the batch applies every
    per-sample Jacobian at once. Power iteration returns a lower estimate of each spectral
    norm (Rayleigh quotient), so the result never exceeds the true maximum.

    Args:
        model: post-norm model or expanded model (then ``f_top(u + h(u))``).
        at: insertion point; u: states ``(n, ...)`` at ``at``.
        iters: power iterations.

    Raises:
        ValueError: batch-norm model, bad ``iters``.
    """
    check_per_sample(model)
    if not isinstance(iters, int) or iters < 1:
        raise ValueError(f"iters == {iters!r}, must be an int >= 1.")
    if isinstance(model, ExpandedModel):
        fn = model.top_from_u
    else:
        def fn(v):
            return model.top(v, at)
    gen = torch.Generator().manual_seed(seed)
    v = _unit_rows(torch.randn(u.shape, generator=gen, dtype=u.dtype))
    with torch.enable_grad():
        u = u.detach().requires_grad_(True)
        out = fn(u)
        # J^T w is a vjp; J v is the vjp of the (linear in w) vjp: the double-backward trick.
        w0 = torch.zeros_like(out, requires_grad=True)
        (jt_w0,) = torch.autograd.grad(out, u, w0, create_graph=True)
        for _ in range(iters):
            (jv,) = torch.autograd.grad(jt_w0, w0, v, retain_graph=True)
            (jtjv,) = torch.autograd.grad(out, u, jv, retain_graph=True)
            v = _unit_rows(jtjv)
        (jv,) = torch.autograd.grad(jt_w0, w0, v, retain_graph=True)
    return float(jv.detach().reshape(jv.shape[0], -1).norm(dim=1).max())


def _unit_rows(v: torch.Tensor) -> torch.Tensor:
    flat = v.reshape(v.shape[0], -1)
    norms = flat.norm(dim=1, keepdim=True).clamp(min=torch.finfo(v.dtype).tiny)
    return (flat / norms).reshape(v.shape)
