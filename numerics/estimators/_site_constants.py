"""Plug-in constants at a site of any network, and the generalisation cost ``eps_M`` they give (THEORY §1-§4).

For a general network no data-free bound on the loss range ``B`` or on ``L_top`` exists
(the post-norm bounds of THEORY §1 need the project's own models). **Choice** (ours): the
growth stop rule compares the certified gain with ``2 eps_M``, where ``eps_M`` is
THEORY §4's closed form for the readout class (read from :mod:`bounds.generalisation`)
evaluated with *plug-in* constants measured on a sample:

* ``B`` = the largest per-sample loss, ``L_loss`` = ``sqrt(2)`` (cross-entropy) or
  ``2 (F + Y)`` with the largest output and target norms (squared loss);
* ``L_top`` = the largest per-sample spectral norm of the Jacobian of the outputs with
  respect to the state at the site (power iteration with ``torch.func`` jvp/vjp);
* ``rho_phi`` = the largest ``||phi_i||`` seen on the probe; ``nu_V`` = the norm of the
  jumpboard ``V`` (the class must contain it); ``d`` = the token dimension.

The result is an estimate, reported as such (never a certificate).
"""
from __future__ import annotations

import math

import torch

from numerics._numerics import per_sample_loss
from numerics.sites import add_at_site

__all__ = ["eps_M_plugin", "lipschitz_top_at_site", "loss_constants_plugin"]


def lipschitz_top_at_site(model, site: str, x: torch.Tensor, iters: int = 15, seed: int = 0) -> float:
    """``max_i ||d f(x_i) / d u_i||_2`` at ``site`` by per-sample power iteration (an empirical ``L_top``).

    Example:
        >>> from numerics.models import PostNormResMLP
        >>> net = PostNormResMLP(3, 6, 1, 2)
        >>> x = torch.randn(4, 3, dtype=torch.float64)
        >>> from numerics._numerics import spectral_norm
        >>> abs(lipschitz_top_at_site(net, "norms.0", x, iters=50) - spectral_norm(net.head.weight)) < 1e-6
        True
    """
    model.eval()
    box: dict = {}
    with torch.no_grad(), add_at_site(model, site, lambda u: _record(u, box)):
        model(x)
    zero = torch.zeros_like(box["u"])

    def f(delta):
        with add_at_site(model, site, lambda u: delta):
            return model(x)

    _, vjp_fn = torch.func.vjp(f, zero)
    gen = torch.Generator().manual_seed(seed)
    v = torch.randn(zero.shape, generator=gen, dtype=zero.dtype)
    sigma = torch.zeros(x.shape[0], dtype=zero.dtype)
    for _ in range(iters):
        v = v / v.flatten(1).norm(dim=1).clamp(min=1e-300).reshape(-1, *[1] * (v.dim() - 1))
        _, jv = torch.func.jvp(f, (zero,), (v,))
        (g,) = vjp_fn(jv)
        sigma = (g * v).detach().flatten(1).sum(dim=1).clamp(min=0).sqrt()
        v = g.detach()
    return float(sigma.max())


def _record(u, box):
    box["u"] = u.detach()
    return torch.zeros_like(u)


@torch.no_grad()
def loss_constants_plugin(model, x: torch.Tensor, y: torch.Tensor, loss: str) -> tuple[float, float]:
    """``(B, L_loss)`` measured on ``(x, y)``: the largest loss, and the loss's Lipschitz constant."""
    out = model(x)
    B = float(per_sample_loss(out, y, loss).max())
    if loss == "cross_entropy":
        return B, math.sqrt(2.0)
    F = float(out.flatten(1).norm(dim=1).max())
    Y = float(y.reshape(y.shape[0], -1).double().norm(dim=1).max())
    return B, 2.0 * (F + Y)


def eps_M_plugin(*, M: int, level: float, B: float, L_loss: float, L_top: float, d: int, nu_V: float,
                 rho_phi: float) -> float:
    """THEORY §4 ``eps_M(level)`` of the readout class, from :func:`bounds.generalisation.eps_value`.

    Example:
        >>> round(eps_M_plugin(M=100, level=0.05, B=1, L_loss=1, L_top=1, d=4, nu_V=1, rho_phi=1), 6)
        0.701496
    """
    from bounds.generalisation import eps_value

    params = {"B": B, "L_loss": L_loss, "L_top": L_top, "d": d, "nu_V": nu_V, "rho_phi": rho_phi}
    return float(eps_value("readout", M, level, params))
