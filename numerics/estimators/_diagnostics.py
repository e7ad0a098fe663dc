"""Assumption diagnostics: (A3) gradient covariance, (A-norm) norms and pre-norm scales (THEORY §2)."""
from __future__ import annotations

import torch

from numerics.models import check_per_sample


def covariance_diagnostics(m: torch.Tensor) -> dict:
    """(A3): ``Sigma_m = Cov(m)``; ``||Sigma_m||_2``, ``tr``, off-diagonal mass (THEORY §2).

    ``offdiag_ratio = ||offdiag(Sigma_m)||_F / ||Sigma_m||_F`` (0 for a diagonal covariance,
    near 1 when the mass is off the diagonal); ``effective_rank = tr / ||Sigma_m||_2``.

    Args:
        m: ``(n, d)`` activation gradients, ``n >= 2``.

    Raises:
        ValueError: ``m`` is not ``(n, d)`` with ``n >= 2``.

    Example:
        >>> out = covariance_diagnostics(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        >>> out["spectral_norm"], out["offdiag_ratio"]
        (2.0, 0.0)
    """
    if m.dim() != 2 or m.shape[0] < 2:
        raise ValueError(f"expected m of shape (n, d) with n >= 2, got {tuple(m.shape)}.")
    sigma = torch.cov(m.T.to(torch.float64)).reshape(m.shape[1], m.shape[1])
    fro = float(sigma.norm())
    off = float((sigma - torch.diag(torch.diagonal(sigma))).norm())
    spectral = float(torch.linalg.eigvalsh(sigma).max())
    trace = float(torch.trace(sigma))
    return {
        "spectral_norm": spectral,
        "trace": trace,
        "offdiag_ratio": off / fro if fro > 0 else 0.0,
        "effective_rank": trace / spectral if spectral > 0 else 0.0,
    }


@torch.no_grad()
def norm_diagnostics(model, x: torch.Tensor) -> dict:
    """(A-norm): per normalisation ``j = 0..D``, the pre-norm scale and the state norms (THEORY §2).

    The pre-norm scale is the RMS of the input of ``N_j`` (mean-centred for LayerNorm /
    GroupNorm, minimum over groups); ``r_min[j]`` is its minimum over the batch and is
    what :func:`lipschitz_top_certified` takes. ``rho[j]`` is the data-free bound on
    ``||z_j||``, ``state_norm_max[j]`` the measured maximum (never above ``rho[j]``).

    Returns:
        dict of lists indexed by ``j`` (``r_min``, ``r_median``, ``state_norm_max``,
        ``rho``) plus ``r_min_overall`` and ``eps_n``.
    """
    check_per_sample(model)
    base = getattr(model, "base", model)
    pre = base.embed(x)
    out = {"r_min": [], "r_median": [], "state_norm_max": [], "rho": []}
    for j in range(base.depth + 1):
        norm = base.norm_at(j)
        scale = norm.pre_norm_scale(pre)
        z = norm(pre)
        out["r_min"].append(float(scale.min()))
        out["r_median"].append(float(scale.median()))
        out["state_norm_max"].append(float(z.reshape(z.shape[0], -1).norm(dim=1).max()))
        out["rho"].append(base.rho(j))
        if j < base.depth:
            pre = z + base.branches[j](z)
    out["r_min_overall"] = min(out["r_min"])
    out["eps_n"] = base.eps_n
    return out
