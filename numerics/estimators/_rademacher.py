"""Rademacher complexity of the inserted block and ``eps_n`` (THEORY §4).

The closed forms and ``eps_n(delta)`` are imported from :mod:`bounds.generalisation`;
this module only measures their inputs (``rho_phi``, the empirical readout value by Monte
Carlo) and handles the cap grid.
"""
from __future__ import annotations

import math
from typing import Sequence

import torch

from bounds._statement import evaluate
from bounds.generalisation import eps_value, jensen_readout_expression, mc_error_expression
from numerics._numerics import check_positive, check_probability, random_bits, spectral_norm

#: Sign entries per batch: large enough for one efficient matmul, small enough for cache.
_SIGNS_PER_BATCH = 1 << 19


def rho_phi(block, rho: float) -> float:
    """``rho_phi >= sup_{||u|| <= rho} ||phi(u)||`` (THEORY §4).

    ReLU features: ``||relu(U0 u + b0)|| <= ||U0 u + b0|| <= ||U0||_2 rho + ||b0||``;
    linear family: ``rho``. For ``full`` this is the value at the block's current ``U, b``.

    Raises:
        ValueError: ``rho < 0``.
    """
    if not rho >= 0:
        raise ValueError(f"rho == {rho!r}, must be >= 0.")
    if block.family == "linear":
        return float(rho)
    return spectral_norm(block.U) * float(rho) + float(block.b.detach().norm())


def _check_phi(phi: torch.Tensor) -> None:
    if phi.dim() != 2 or phi.shape[0] < 1:
        raise ValueError(f"expected phi of shape (n, r) with n >= 1, got {tuple(phi.shape)}.")


def rademacher_readout_mc(phi: torch.Tensor, d: int, nu_V: float, n_draws: int, seed: int = 0, *,
                          delta_mc: float = 1e-3) -> tuple[float, float]:
    """``Rad^vec_n = (nu_V / n) E_s ||s^T phi||_F`` by Monte Carlo over ``s in {±1}^{n×d}`` (THEORY §4).

    Draws are batched: for ``B`` draws the signs form one ``(B d, n)`` matrix (the entries
    are i.i.d., so any layout is a valid draw) and ``s^T phi`` for all of them is ONE matmul
    (signs from :func:`~numerics._numerics.random_bits`).

    Monte-Carlo error (McDiarmid over the ``n_draws n d`` independent signs): flipping one
    ``s_ik`` changes ``||s^T phi||_F`` by at most ``2 ||phi_i||``, so the mean of the draws
    has bounded differences ``c_ik = 2 nu_V ||phi_i|| / (n n_draws)`` and, one-sided,
    ``E <= value + (nu_V/n) sqrt(2 d sum_i ||phi_i||^2 ln(1/delta_mc) / n_draws)``
    with probability ``>= 1 - delta_mc`` over the draws.

    Args:
        phi: ``(n, r)`` block features on the sample.
        d: state dimension (number of sign columns).
        nu_V: the cap ``||V||_F <= nu_V``.
        n_draws: Monte-Carlo draws; seed: their seed.
        delta_mc: confidence share spent on the Monte-Carlo error.

    Returns:
        ``(value, mc_error)``; ``value + mc_error`` upper-bounds the empirical complexity
        with probability ``>= 1 - delta_mc``.

    Example:
        >>> value, err = rademacher_readout_mc(torch.ones(4, 2, dtype=torch.float64), 3, 1.0, 100)
        >>> 0 < value <= 3 ** 0.5 * 2 ** 0.5 / 2, err > 0
        (True, True)
    """
    _check_phi(phi)
    check_positive("d", d, integer=True)
    check_positive("n_draws", n_draws, integer=True)
    check_probability("delta_mc", delta_mc)
    if not nu_V >= 0:
        raise ValueError(f"nu_V == {nu_V!r}, must be >= 0.")
    n = phi.shape[0]
    gen = torch.Generator().manual_seed(seed)
    per_batch = max(1, _SIGNS_PER_BATCH // (n * d))
    col_sum = phi.sum(dim=0)
    total = 0.0
    for start in range(0, n_draws, per_batch):
        b = min(per_batch, n_draws - start)
        bits = random_bits(b * d * n, gen, phi.dtype).reshape(b * d, n)
        # s = 2 bits - 1, so s^T phi = 2 bits^T phi - 1^T phi: one matmul for all b draws.
        st_phi = (bits @ phi).mul_(2).sub_(col_sum)
        total += float(st_phi.reshape(b, -1).norm(dim=1).sum())
    value = nu_V * total / (n_draws * n)
    # the error formula is written once, in bounds (THEORY §4); the variants' ledger checks it there
    mc_error = float(evaluate(mc_error_expression(), {"nu_V": nu_V, "M": n, "d": d, "delta_mc": delta_mc,
                                                      "phi_sq_sum": float(phi.pow(2).sum()), "n_draws": n_draws}))
    return value, mc_error


def rademacher_readout_jensen(phi: torch.Tensor, d: int, nu_V: float) -> float:
    """``(nu_V/n) E||s^T phi||_F <= (nu_V/n) sqrt(d sum_i ||phi_i||^2)`` (Jensen), THEORY §4.

    This data-dependent bound is itself ``<= nu_V sqrt(d) rho_phi / sqrt(n)``.
    """
    _check_phi(phi)
    values = {"nu_V": nu_V, "M": phi.shape[0], "d": d, "phi_sq_sum": float(phi.pow(2).sum())}
    return float(evaluate(jensen_readout_expression(), values))


def cap_grid(low: float, high: float, ratio: float = 2.0) -> list[float]:
    """Geometric cap grid ``low, low*ratio, ...`` up to the first value ``>= high`` (THEORY §4).

    Caps chosen after training pay a union bound over ``len(grid)`` caps (**Choice**).

    Example:
        >>> cap_grid(1.0, 5.0)
        [1.0, 2.0, 4.0, 8.0]
    """
    if not 0 < low <= high:
        raise ValueError(f"(low, high) == {(low, high)!r}, must satisfy 0 < low <= high.")
    if not ratio > 1:
        raise ValueError(f"ratio == {ratio!r}, must be > 1.")
    count = math.ceil(math.log(high / low) / math.log(ratio) - 1e-12) + 1
    return [low * ratio**k for k in range(count)]


def cap_for(norm: float, grid: Sequence[float]) -> float:
    """Smallest cap in ``grid`` with ``norm <= cap``.

    Raises:
        ValueError: ``norm`` exceeds the largest cap.
    """
    for cap in sorted(grid):
        if norm <= cap:
            return float(cap)
    raise ValueError(f"norm == {norm!r}, must be <= the largest cap {max(grid)!r}.")


def eps_n_closed_form(family: str, n: int, level: float, *, n_grid: int = 1, **constants) -> float:
    """``eps_n(level)`` with the closed-form ``Rad^vec`` of ``family`` (THEORY §4, via ``bounds``).

    Args:
        constants: ``B, L_loss, L_top, d`` and ``rho_phi, nu_V`` (readout) or
            ``rho, nu_U, nu_V`` (full).
        n_grid: size of the cap grid (union bound, level ``level / n_grid``).
    """
    check_probability("level", level)
    params = {**constants, "n_grid": n_grid}
    return float(eps_value(family, n, level, params, grid=n_grid > 1))


def eps_n_readout_mc(phi: torch.Tensor, d: int, nu_V: float, level: float, *, B: float, L_loss: float,
                     L_top: float, mc_share: float = 0.1, n_draws: int = 1000, seed: int = 0,
                     n_grid: int = 1) -> dict:
    """``eps_n`` with the empirical readout complexity, MC error paid at ``mc_share * level`` (THEORY §4).

    ``eps = 2 sqrt(2) L_loss L_top (value + mc_error) + 3 B sqrt(ln(4/level')/(2n))`` with
    ``level' = (1 - mc_share) level`` (further divided by ``n_grid``); total failure
    probability ``<= level``.

    Returns:
        dict with ``eps``, ``rad_value``, ``mc_error``, ``level_mc``, ``level_uniform``.
    """
    check_probability("level", level)
    check_probability("mc_share", mc_share)
    value, err = rademacher_readout_mc(phi, d, nu_V, n_draws, seed, delta_mc=mc_share * level)
    level_u = (1 - mc_share) * level
    params = {"B": B, "L_loss": L_loss, "L_top": L_top, "rad_hat": value + err, "n_grid": n_grid}
    eps = float(eps_value("readout", phi.shape[0], level_u, params, empirical=True, grid=n_grid > 1))
    return {"eps": eps, "rad_value": value, "mc_error": err, "level_mc": mc_share * level,
            "level_uniform": level_u}
