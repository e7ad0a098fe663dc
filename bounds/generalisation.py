"""Generalisation cost ``eps_n(delta)`` of the norm-capped expanded class (THEORY §4).

``eps_n(delta) = 2 Rad_n(l o F) + B sqrt(ln(2/delta) / (2 n))`` (expected Rademacher,
two-sided, each side at ``delta/2``), or ``2 Rad^_n + 3 B sqrt(ln(4/delta) / (2 n))`` with
a data-dependent (empirical) Rademacher value (Bartlett--Mendelson). Maurer's vector
contraction gives ``Rad_n(l o F) <= sqrt(2) L_loss L_top Rad^vec_n(H)``.

Caps chosen after training are paid for by a union bound over a grid of ``n_grid`` caps:
the level becomes ``delta / n_grid`` (a **Choice** of this project, THEORY §4).
"""
from __future__ import annotations

from typing import Mapping

import sympy as sp

from bounds import _symbols as s
from bounds._statement import evaluate
from bounds.families import RESIDUAL_FAMILIES, FamilyNames

#: The residual block families (a live view of :data:`bounds.families.RESIDUAL_FAMILIES`).
FAMILIES = FamilyNames()


def rad_vec_closed_form(family: str, n: sp.Expr = s.n) -> sp.Expr:
    """Closed-form bound on the vector Rademacher complexity ``Rad^vec_n(H)``.

    * readout: ``nu_V sqrt(d) rho_phi / sqrt(n)``;
    * full (Golowich--Rakhlin--Shamir 2018, Thm 1, depth 2, summed over the ``d`` output
      coordinates; bias absorbed, ``rho~ = sqrt(rho^2 + 1)``):
      ``d rho~ nu_U nu_V (sqrt(4 ln 2) + 1) / sqrt(n)``.

    Raises:
        ValueError: unknown family.

    Example:
        >>> rad_vec_closed_form("readout")
        sqrt(d)*nu_V*rho_phi/sqrt(n)
    """
    if family not in RESIDUAL_FAMILIES:
        raise ValueError(f"family == {family!r}, must be one of {list(FAMILIES)}.")
    return RESIDUAL_FAMILIES[family].rad_vec(n)


def rad_loss(rad_vec: sp.Expr) -> sp.Expr:
    """Maurer's vector contraction: ``Rad(l o F) <= sqrt(2) L_loss L_top Rad^vec(H)``."""
    return sp.sqrt(2) * s.L_loss * s.L_top * rad_vec


def confidence_term(n: sp.Expr, level: sp.Expr, empirical: bool = False) -> sp.Expr:
    """``B sqrt(ln(2/level)/(2n))``, or ``3 B sqrt(ln(4/level)/(2n))`` when empirical."""
    if empirical:
        return 3 * s.B * sp.sqrt(sp.log(4 / level) / (2 * n))
    return s.B * sp.sqrt(sp.log(2 / level) / (2 * n))


def eps_expression(
    family: str,
    n: sp.Expr = s.n,
    level: sp.Expr = s.delta,
    *,
    empirical: bool = False,
    grid: bool = False,
) -> sp.Expr:
    """``eps_n(level)`` of THEORY §4 as a sympy expression.

    Args:
        family: "readout" or "full" (closed forms), ignored when ``empirical``.
        n: sample size symbol (``M`` for ``eps_M``, ``K`` for ``eps_K``).
        level: failure level (``delta`` or ``delta_prime``).
        empirical: use the data-dependent vector Rademacher value ``rad_hat`` (which
            must then be the empirical value at this ``n``) and the 3B confidence term.
        grid: pay for post-hoc caps by a union bound over ``n_grid`` caps.

    Example:
        >>> e = eps_expression("readout", s.M, s.delta)
        >>> vals = dict(B=1, L_loss=1, L_top=1, d=4, nu_V=1, rho_phi=1, M=100, delta=0.05)
        >>> round(float(e.subs({getattr(s, k): v for k, v in vals.items()})), 6)  # 4 sqrt(2)/10 + sqrt(ln 40/200)
        0.701496
    """
    lvl = level / s.n_grid if grid else level
    rad_vec = s.rad_hat if empirical else rad_vec_closed_form(family, n)
    return 2 * rad_loss(rad_vec) + confidence_term(n, lvl, empirical)


def eps_M(family: str, **kw) -> sp.Expr:
    """``eps_M``: ``eps_n`` on the training sample (``n = M``, level ``delta``)."""
    return eps_expression(family, s.M, s.delta, **kw)


def eps_K(family: str, **kw) -> sp.Expr:
    """``eps_K``: ``eps_n`` on the test sample (``n = K``, level ``delta_prime``)."""
    return eps_expression(family, s.K, s.delta_prime, **kw)


def eps_value(family: str, n: object, level: object, params: Mapping[str, object], **kw):
    """Numeric ``eps_n(level)`` (vectorised over numpy arrays)."""
    expr = eps_expression(family, s.n, s.delta, **kw)
    return evaluate(expr, {**params, "n": n, "delta": level})


# ---- the empirical readout complexity on S (THEORY §4): Monte Carlo and Jensen ------------
_nonneg = dict(nonnegative=True)
rad_S = sp.Symbol("rad_S", **_nonneg)              # exact empirical (nu_V/M) E_s ||s^T phi||_F on S
rad_S_mc = sp.Symbol("rad_S_mc", **_nonneg)        # its Monte-Carlo estimate
rad_S_mc_err = sp.Symbol("rad_S_mc_err", **_nonneg)  # the McDiarmid error of the estimate at delta_mc
rad_S_jensen = sp.Symbol("rad_S_jensen", **_nonneg)  # Jensen's sure bound (nu_V/M) sqrt(d sum_i ||phi_i||^2)
delta_mc = sp.Symbol("delta_mc", positive=True)    # level of the Monte-Carlo error
phi_sq_sum = sp.Symbol("phi_sq_sum", **_nonneg)    # sum_i ||phi_i||^2 over S
n_draws = sp.Symbol("n_draws", positive=True)      # number of sign draws


def mc_error_expression(level: sp.Expr = delta_mc) -> sp.Expr:
    """McDiarmid error of the sign Monte Carlo of ``rad_S``, one-sided at ``level`` (THEORY §4).

    ``(nu_V / M) sqrt(2 d sum_i ||phi_i||^2 ln(1/level) / n_draws)``: flipping one of the
    ``n_draws M d`` independent signs moves the mean of the draws of ``(nu_V/M) ||s^T phi||_F``
    by at most ``c_ik = 2 nu_V ||phi_i|| / (M n_draws)``, so ``P(rad_S - mean > err) <=
    exp(-2 err^2 / sum c_ik^2) = level``. This is the only place the formula is written
    (:func:`numerics.estimators.rademacher_readout_mc` evaluates it).

    Example:
        >>> e = mc_error_expression()
        >>> float(e.subs({s.nu_V: 1, s.M: 4, s.d: 2, phi_sq_sum: 8, delta_mc: sp.exp(-1), n_draws: 2}))
        1.0
    """
    return s.nu_V / s.M * sp.sqrt(2 * s.d * phi_sq_sum * sp.log(1 / level) / n_draws)


def jensen_readout_expression() -> sp.Expr:
    """``rad_S <= (nu_V / M) sqrt(d sum_i ||phi_i||^2)`` surely (Jensen, ``E s_ik s_jk = [i = j]``), THEORY §4.

    A deterministic bound on the empirical readout complexity: no event, no level.

    Example:
        >>> jensen_readout_expression()
        sqrt(d)*nu_V*sqrt(phi_sq_sum)/M
    """
    return s.nu_V / s.M * sp.sqrt(s.d * phi_sq_sum)
