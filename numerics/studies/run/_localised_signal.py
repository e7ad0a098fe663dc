"""The signal sample's constants of the localised ``U_S`` (THEORY §6b (b), (c); **Choice**), fixed before ``S``.

One streamed pass over the signal sample (role ``signal``: its ``x`` with labels from its
noise sub-stream, independent of ``S`` and ``T``) measures, for ``xi_i = m_i phi_i^T``:

* the mean and unbiased variance of ``||xi_i||_F^2 = ||m_i||^2 ||phi_i||^2`` and the mean
  ``G_n`` of ``xi_i``: ``sigma^2``'s bound, *uncentred* (Maurer--Pontil on ``[0, b_xi^2]``,
  :func:`bounds.localised.sigma2_upper_expression`) or *centred*
  (:func:`bounds.localised.centred_variance_upper_expression`: ``E||xi||^2``'s bound minus
  the square of Pinelis' lower bound on ``||G||``, each at ``delta_sigma / 2``), both at
  ``delta_sigma``; ``[localised] variance`` says which ``e_G`` uses (default ``uncentred``);
* ``lambda_max`` of the uncentred ``Sigma_n = (1/n) sum phi_i phi_i^T``: the upper confidence
  bound on ``||Sigma_phi||_2`` at ``delta_Sn`` (:func:`bounds.localised.Sigma_norm_upper_expression`,
  its minimum with the sure ``rho_phi^2``), used by (c);
* the mean and variance of ``||phi_i||^2``: ``E||phi||^2``'s upper confidence bound at ``delta_tr``
  (:func:`bounds.localised.trace_upper_expression`), used by (b)'s remainder;
* the variance of ``<xi_i, G^>/||G^||`` (``G^`` the run's signal ``G``): only a *predictor* of
  the variance of ``d_V`` along ``-G^`` (the ``"predicted"`` cap rule), never a bound.
"""
from __future__ import annotations

import dataclasses

import sympy as sp
import torch

__all__ = ["SignalMoments", "signal_moments", "sigma2_bounds", "Sigma_norm_upper", "trace_upper"]


@dataclasses.dataclass(frozen=True)
class SignalMoments:
    """What the pass measured (docstring of ``numerics.studies.run._localised_signal``)."""

    n: int
    mean_xi2: float           # mean ||xi||^2
    var_xi2: float            # its unbiased variance
    G_n_norm: float           # ||mean xi||_F on this pass
    Sigma_top: float          # lambda_max(Sigma_n)
    dir_var: float            # unbiased variance of <xi, G^>/||G^|| (a predictor only)
    mean_phi2: float = float("nan")   # mean ||phi||^2 (tr Sigma_n)
    var_phi2: float = float("nan")    # its unbiased variance


@torch.no_grad()
def _chunk(fixed, x, y, G_unit):
    from numerics.estimators import activation_gradients_on_states

    u = fixed.net.bottom(x, fixed.at)
    with torch.enable_grad():
        m = activation_gradients_on_states(fixed.expanded, u, y, fixed.loss)
    phi = fixed.expanded.block.features(u.reshape(u.shape[0], -1))
    val = m.pow(2).sum(dim=1) * phi.pow(2).sum(dim=1)
    direction = ((m @ G_unit.to(m.dtype)) * phi).sum(dim=1)       # <m phi^T, G^>/||G^||
    return m, phi, val, direction, phi.pow(2).sum(dim=1)


def signal_moments(fixed, b_xi: float) -> SignalMoments:
    """One streamed pass over the signal sample (docstring of ``numerics.studies.run._localised_signal``).

    Raises:
        ArithmeticError: a value above the sure bound ``b_xi^2`` (the constants would be wrong).
    """
    from numerics._numerics import MeanVar

    mv, top, G_sum, S_sum = MeanVar(), 0.0, None, None
    G_unit = fixed.signal.G / fixed.signal.G.norm()
    for x, y in fixed.task.sample_chunks(fixed.cfg.sizes.population, fixed.streams.seed_for("signal")):
        m, phi, val, direction, phi2 = _chunk(fixed, x, y, G_unit)
        top = max(top, float(val.max()))
        mv.add(torch.stack([val, direction, phi2], dim=1).cpu())
        g, s = m.double().T @ phi.double(), phi.double().T @ phi.double()
        G_sum, S_sum = (g, s) if G_sum is None else (G_sum + g, S_sum + s)
    if top > b_xi**2 * (1 + 1e-9):
        raise ArithmeticError(f"||m phi^T||^2 == {top:.6g} on the signal sample exceeds b_xi^2 == {b_xi**2:.6g}")
    mean, _ = mv.result()
    var = mv.variance()
    return SignalMoments(mv.n, float(mean[0]), float(var[0]), float((G_sum / mv.n).norm()),
                         float(torch.linalg.eigvalsh(S_sum / mv.n).max()), float(var[1]), float(mean[2]), float(var[2]))


def sigma2_bounds(mom: SignalMoments, level: float, b_xi: float) -> tuple[float, float]:
    """``(uncentred, centred)`` upper bounds on ``E||xi - E xi||^2``, each at ``level`` (minimum with ``b_xi^2``)."""
    from bounds._statement import evaluate
    from bounds.localised import centred_variance_upper_expression, sigma2_upper_expression

    n_, m_, v_, g_, l_ = sp.symbols("n_sig mean_sig var_sig G_sig level_sig", nonnegative=True)
    vals = {"n_sig": mom.n, "mean_sig": mom.mean_xi2, "var_sig": mom.var_xi2, "G_sig": mom.G_n_norm,
            "level_sig": level, "b_xi": b_xi}
    unc = float(evaluate(sigma2_upper_expression(n_, m_, v_, l_), vals))
    cen = float(evaluate(centred_variance_upper_expression(n_, m_, v_, g_, l_), vals))
    return min(unc, b_xi**2), min(cen, b_xi**2)


def Sigma_norm_upper(mom: SignalMoments, level: float, rho_phi: float, r: int) -> float:
    """The upper confidence bound on ``||Sigma_phi||_2`` at ``level``, its minimum with ``rho_phi^2``."""
    from bounds.localised_routes import Sigma_norm_upper_value

    return Sigma_norm_upper_value(mom.n, mom.Sigma_top, level, rho_phi, r)


def trace_upper(mom: SignalMoments, level: float, rho_phi: float) -> float:
    """``E||phi||^2``'s upper confidence bound at ``level`` (Maurer--Pontil on ``[0, rho_phi^2]``), at most ``rho_phi^2``."""
    from bounds._statement import evaluate
    from bounds.localised import trace_upper_expression

    n_, m_, v_, l_ = sp.symbols("n_tr mean_tr var_tr level_tr", nonnegative=True)
    val = evaluate(trace_upper_expression(n_, m_, v_, l_), {"n_tr": mom.n, "mean_tr": mom.mean_phi2,
                                                            "var_tr": mom.var_phi2, "level_tr": level, "rho_phi": rho_phi})
    return min(float(val), rho_phi**2)
