"""Ledger checks of the localised uniform terms (b), (c) of THEORY §6b (**Choice**).

Re-derived here from the inequalities, independently of :mod:`bounds.localised`'s formulas:

* ``e_G`` -- Pinelis (1994, Thm 3.4) in Bernstein form for the mean of ``M`` i.i.d. vectors
  with ``||xi - E xi|| <= a = 2 b_xi`` and ``E||xi - E xi||^2 <= sigma^2``:
  ``P(||mean - E|| >= e) <= 2 exp(-M e^2 / (2 (sigma^2 + a e / 3)))``; at ``delta_G / copies``
  the positive root is at most ``2 a L / (3M) + sqrt(2 sigma^2 L / M)``, ``L = ln(2 copies/delta_G)``.
* the remainder of (b) -- symmetrisation (2), Maurer's contraction (``sqrt(2)`` times the
  Lipschitz constant ``kappa nu rho_phi`` of ``q`` in the block output on the ball) times the
  ``nu sqrt(d tr_ub / M)`` (``tr_ub >= E||phi||^2``: the signal sample's bound at ``delta_tr``, or the
  sure ``rho_phi^2``; the event's probability adds ``delta_tr``), plus McDiarmid for values in an
  interval of length ``kappa nu^2 rho_phi^2``.
* ``lambda_max(Sigma_phi - Sigma_phi,S)`` -- Tropp's matrix Bernstein with
  ``R = ||Sigma||/M``, variance ``rho_phi^2 ||Sigma|| / M``, dimension ``r``: at most
  ``2 R L / 3 + sqrt(2 var L)``, ``L = ln(r copies / delta_Sigma)``.

The bound on ``sigma^2`` the record names (its ``variance``) must be one of
:data:`bounds.dependence.CONSTANT_BOUNDS` fixed before ``S`` (the signal sample), and the
event's probability must add that bound's level.
"""
from __future__ import annotations

import sympy as sp

from bounds import _symbols as s
from bounds import dependence as dep
from bounds import localised as loc
from proofs_check._symbolic import symbolic_equal

LOCALISED_KINDS = ("uniform_linearised", "uniform_exact")


def _bernstein_root(a, variance, L, n):
    """An upper bound of the positive root of ``n e^2 = 2 L (variance + a e / 3)``."""
    return 2 * a * L / (3 * n) + sp.sqrt(2 * variance * L / n)


def _sigma(ev):
    """``(the sigma^2 symbol the derivation uses, its level, a problem or None)``."""
    t = ev.tail
    name = t.variance.name if isinstance(t.variance, sp.Symbol) else None
    bound = dep.CONSTANT_BOUNDS.get(name)
    if bound is not None and bound.sample == "signal" and bound.level is not None:
        return t.variance, sp.Symbol(bound.level, nonnegative=True), None
    where = "unknown" if bound is None else f"{bound.sample}, level {bound.level} ({bound.description})"
    why = (f"sigma^2 bound {t.variance} comes from {where}: E_U needs a bound fixed before S "
           "(sure b_xi^2, or an upper confidence bound on the signal sample at its own level; bounds.dependence)")
    return loc.sigma2_ub, loc.delta_sigma, why


def _expected(ev):
    """``(derived deviation, derived probability)`` of a localised uniform record."""
    t, M, copies = ev.tail, s.M, ev.tail.copies
    sigma2, sigma_level, _ = _sigma(ev)
    eG = _bernstein_root(2 * loc.b_xi, sigma2, sp.log(2 * copies / loc.delta_G), M)
    if t.kind == "uniform_linearised":
        lip, length = loc.kappa * s.nu_V * s.rho_phi, loc.kappa * s.nu_V**2 * s.rho_phi**2
        rad = s.nu_V * sp.sqrt(s.d) * sp.sqrt(loc.tr_ub) / sp.sqrt(M)     # Jensen: E||sum s_i phi_i^T|| <= sqrt(d M tr)
        rem = 2 * sp.sqrt(2) * lip * rad + length * sp.sqrt(sp.log(copies / loc.delta_q) / (2 * M))
        return s.nu_V * eG + rem, loc.delta_G + loc.delta_q + sigma_level + loc.delta_tr
    R_, var = loc.Sigma_ub / M, s.rho_phi**2 * loc.Sigma_ub / M
    lam = _bernstein_root(R_ * M, var * M, sp.log(s.r * copies / loc.delta_Sigma), M)
    return (s.nu_V * eG + s.nu_V**2 * loc.A_norm**2 * lam,
            loc.delta_G + loc.delta_Sigma + sigma_level + loc.delta_Sn)


def localised_derived(ev, n, value_range):
    """``(stated, derived, "deviation")`` for a (b)/(c) record (``n``, ``value_range``: unused)."""
    return ev.tail.deviation, _expected(ev)[0], "deviation"


def localised_problems(ev) -> list[tuple]:
    """``(why, stated, derived)``: a sigma^2 bound chosen with ``S``, or an event probability that omits a level."""
    out = []
    why = _sigma(ev)[2]
    if why is not None:
        out.append((why, ev.tail.deviation, _expected(ev)[0]))
    prob = _expected(ev)[1]
    if not symbolic_equal(ev.probability, prob):
        out.append((f"P({ev.name}) = {ev.probability}, but the union of its events is {prob}", ev.probability, prob))
    return out
