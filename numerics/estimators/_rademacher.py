"""Rademacher complexity of the inserted block and ``eps_n`` (THEORY §4).

The closed forms and ``eps_n(delta)`` are imported from :mod:`bounds.generalisation`;
this module only measures their inputs (``rho_phi``, the empirical readout value by Monte
Carlo) and handles the cap grid.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import torch

from bounds._statement import evaluate
from bounds.generalisation import eps_value, jensen_readout_expression, mc_error_expression
from numerics._numerics import check_positive, check_probability, random_bits
from numerics.residual_families import block_family

#: Sign entries per batch: large enough for one efficient matmul, small enough for cache.
_SIGNS_PER_BATCH = 1 << 19


def rho_phi(block, rho: float) -> float:
    """``rho_phi >= sup_{||u|| <= rho} ||phi(u)||`` (THEORY §4).

    The block's family's own bound (:func:`numerics.residual_families.block_family`): ReLU features
    ``||relu(U0 u + b0)|| <= ||U0 u + b0|| <= ||U0||_2 rho + ||b0||``; linear family: ``rho``. For
    ``full`` this is the value at the block's current ``U, b``.

    Raises:
        ValueError: ``rho < 0``.
    """
    if not rho >= 0:
        raise ValueError(f"rho == {rho!r}, must be >= 0.")
    return float(block_family(block.family).rho_phi(block, rho))


def _check_phi(phi: torch.Tensor) -> None:
    if phi.dim() != 2 or phi.shape[0] < 1:
        raise ValueError(f"expected phi of shape (n, r) with n >= 1, got {tuple(phi.shape)}.")


def _sign_norm_sum(phi: torch.Tensor, d: int, n_draws: int, seed: int) -> float:
    """``sum over n_draws sign draws of ||s^T phi||_F``, ``s in {±1}^{n×d}``, in batches of one matmul."""
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
    return total


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
    value = nu_V * _sign_norm_sum(phi, d, n_draws, seed) / (n_draws * n)
    # the error formula is written once, in bounds (THEORY §4); the variants' ledger checks it there
    mc_error = float(evaluate(mc_error_expression(), {"nu_V": nu_V, "M": n, "d": d, "delta_mc": delta_mc,
                                                      "phi_sq_sum": float(phi.pow(2).sum()), "n_draws": n_draws}))
    return value, mc_error


@dataclasses.dataclass(frozen=True)
class ReadoutRademacher:
    """One pass over a sample's block features: the sign Monte Carlo and the moments it needs (THEORY §4).

    Attributes:
        n: sample size.
        value: Monte-Carlo value of ``(nu_V/n) E_s ||s^T phi||_F``; ``mc_error`` its McDiarmid
            error at ``delta_mc`` (one-sided); ``n_draws`` sign draws.
        phi_sq_sum: ``sum_i ||phi_i||^2``; ``phi4_sum``: ``sum_i ||phi_i||^4``;
            ``gram_fro_sq``: ``||Phi^T Phi||_F^2``.
    """

    n: int
    d: int
    nu_V: float
    n_draws: int
    delta_mc: float
    value: float
    mc_error: float
    phi_sq_sum: float
    phi4_sum: float
    gram_fro_sq: float

    def at_cap(self, nu_V: float) -> "ReadoutRademacher":
        """The same sample at another cap: the value, its McDiarmid error and the bracket are
        linear in ``nu_V`` (the sign draws and feature moments do not depend on it)."""
        r = float(nu_V) / self.nu_V
        return dataclasses.replace(self, nu_V=float(nu_V), value=self.value * r, mc_error=self.mc_error * r)

    def exact_bracket(self) -> tuple[float, float]:
        """``(lower, upper)`` with ``lower <= (nu_V/n) E_s ||s^T phi||_F <= upper`` surely.

        ``Z = ||s^T Phi||_F``: ``E Z^2 = d sum_i ||phi_i||^2`` and, the ``d`` columns of signs
        being independent and ``Var(s^T K s) = 2 sum_{i != j} K_ij^2`` for ``K = Phi Phi^T``,
        ``E Z^4 = (E Z^2)^2 + 2 d (||Phi^T Phi||_F^2 - sum_i ||phi_i||^4)``. Jensen gives
        ``E Z <= (E Z^2)^(1/2)`` (the upper end, :func:`bounds.generalisation.jensen_readout_expression`);
        Hoelder (``E Z^2 <= (E Z)^(2/3) (E Z^4)^(1/3)``) gives ``E Z >= (E Z^2)^(3/2) / (E Z^4)^(1/2)``.
        Used by the validity study to check the events of the empirical variants.
        """
        m2 = self.d * self.phi_sq_sum
        m4 = m2**2 + 2 * self.d * max(self.gram_fro_sq - self.phi4_sum, 0.0)
        scale = self.nu_V / self.n
        return (scale * m2**1.5 / math.sqrt(m4) if m4 > 0 else 0.0), scale * math.sqrt(m2)


@torch.no_grad()
def rademacher_readout_stream(chunks: Iterable[torch.Tensor], d: int, nu_V: float, n_draws: int, seed: int = 0, *,
                              delta_mc: float = 1e-3) -> ReadoutRademacher:
    """:func:`rademacher_readout_mc` over a sample given in chunks of features (memory ``O(n_draws d r)``).

    ``s^T phi = sum_chunks s_chunk^T phi_chunk``: each chunk's signs, a ``(n_draws d, c)`` matrix of
    i.i.d. signs (:func:`~numerics._numerics.random_bits`), are one matmul; with one chunk and
    ``n_draws d n`` signs within one batch of :func:`rademacher_readout_mc` the signs are the
    same. The same pass sums ``||phi_i||^2``, ``||phi_i||^4`` and ``Phi^T Phi`` (for Jensen's
    bound, the Monte-Carlo error and :meth:`ReadoutRademacher.exact_bracket`).

    Raises:
        ValueError: no rows, a chunk that is not ``(c, r)``, or a bad ``d``/``n_draws``/``delta_mc``.
    """
    check_positive("d", d, integer=True)
    check_positive("n_draws", n_draws, integer=True)
    check_probability("delta_mc", delta_mc)
    gen = torch.Generator().manual_seed(seed)
    X = gram = None
    n, sq, fourth = 0, 0.0, 0.0
    for phi in chunks:
        _check_phi(phi)
        if X is None:
            X = torch.zeros(n_draws * d, phi.shape[1], dtype=phi.dtype)
            gram = torch.zeros(phi.shape[1], phi.shape[1], dtype=torch.float64)
        bits = random_bits(n_draws * d * phi.shape[0], gen, phi.dtype).reshape(n_draws * d, phi.shape[0])
        X += (bits @ phi).mul_(2).sub_(phi.sum(dim=0))
        norms = phi.double().pow(2).sum(dim=1)
        n, sq, fourth = n + phi.shape[0], sq + float(norms.sum()), fourth + float(norms.pow(2).sum())
        gram += phi.double().T @ phi.double()
    if X is None:
        raise ValueError("no chunk of features was given, must give at least one row.")
    value = nu_V * float(X.reshape(n_draws, -1).norm(dim=1).sum()) / (n_draws * n)
    err = float(evaluate(mc_error_expression(), {"nu_V": nu_V, "M": n, "d": d, "delta_mc": delta_mc,
                                                 "phi_sq_sum": sq, "n_draws": n_draws}))
    return ReadoutRademacher(n, d, float(nu_V), n_draws, float(delta_mc), value, err, sq, fourth,
                             float(gram.pow(2).sum()))


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
