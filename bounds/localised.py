"""Localised certificates on loss differences (THEORY §6b, this project's **Choice**, not Paper A's).

Everything works with the paired differences ``d_V(z) = l(f_V(x), y) - l(f_old(x), y)``
against the reference, over the ball ``F_nu = {f_V : ||V||_F <= nu_V}`` fixed before ``S``.
``D(V) = E d_V``, ``D_n(V)`` its mean on a sample. Two chains, each its own
:class:`~bounds._statement.Theorem` (``localised_<chain>_<uniform>_<tail>``):

* ``train`` (S-chain): ``L_test(f_new) <= L_test(f_old) - Delta_train + U_S + t_T(d_new)``,
  ``Delta_train := R_S(f_old) - R_S(f_new) = -D_S(V_new)``; failure ``P(E_U) + delta_T_d``.
* ``paper`` (paper-shaped): ``L_test(f_new) <= L_test(f_old) - Delta_R - Delta_ERM_pop + U_S +
  t_S(d_pop) + t_T(d_new)``, ``Delta_ERM_pop := R_S(f~_pop) - R_S(f_new)`` (any sign), ``Delta_R``
  a lower confidence bound on ``R(f_old) - R(f~_pop)`` (event ``E_R``, ``delta_R_failure``,
  0 when exact); failure ``P(E_U) + delta_T_d + delta_S_pop + delta_R_failure``.

Derivations (re-derived here; checked in :mod:`proofs_check.side_algebra_localised`, covered
by Monte Carlo in ``tests/bounds/test_localised_coverage.py``). ``r_d = min(B, L_loss L_top
nu_V rho_phi)`` (``L_top`` certified on the tube of radius ``nu_V rho_phi``), so
``d_V in [-r_d, r_d]``: an interval of length ``R = 2 r_d``
(:func:`bounds.dependence.difference_range`).

* One-function tails (``copies`` = the cap grid): Hoeffding ``t = R sqrt(ln(copies/delta)/(2n))``
  (``= 2 r_d sqrt(...)``, as THEORY); empirical Bernstein = Maurer--Pontil Thm 4 on
  ``(d + r_d)/R``: ``sqrt(2 V ln(2 copies/delta)/n) + 7 R ln(2 copies/delta)/(3(n-1))``, i.e.
  ``14 r_d/(3(n-1))`` as THEORY says (the range is ``2 r_d``: checked).
* (a) sure: McDiarmid with bounded differences ``R/M`` on ``sup_V (D - D_S)(V)`` and
  ``E sup <= 2 Rad_M(l o F)`` (subtracting ``l o f_0`` changes no Rademacher average)
  ``<= 2 sqrt(2) L_loss L_top rad_M``, ``rad_M = nu_V sqrt(d) rho_phi / sqrt(M)``:
  ``U_S = 2 sqrt(2 d) L_loss L_top nu_V rho_phi / sqrt(M) + 2 r_d sqrt(ln(copies/delta_U)/(2M))``.
  **Differs from THEORY**, which writes ``r_d (2 sqrt(2d) + ...)``: the contraction term
  carries ``L_loss L_top nu_V rho_phi``, which equals ``r_d`` only when ``r_d < B``; with
  ``r_d = B`` THEORY's form would be too small.
* (b) linearised (block at the top; ``kappa`` a Lipschitz constant of the gradient of
  ``h -> l(f_top(u + h), y)``): ``U_S = nu_V e_G + 2 sqrt(2) kappa nu_V rho_phi rad_M +
  kappa nu_V^2 rho_phi^2 sqrt(ln(copies/delta_q)/(2M))`` -- THEORY's constant
  ``2 sqrt(2) kappa nu^2 rho_phi^2 sqrt(d/M)`` (the remainder ``q_V`` is ``kappa nu_V
  rho_phi``-Lipschitz in the block output on the ball, Maurer's contraction ``sqrt(2)``, 2
  for symmetrisation; ``|q_V| <= kappa nu_V^2 rho_phi^2 / 2``, range ``kappa nu^2 rho^2``).
  **Tighter remainder (Choice)**: the contraction's linear class ``{V phi}`` has ``E sup <V, sum_i s_i phi_i^T> =
  nu E||sum_i s_i phi_i^T||_F <= nu sqrt(d M E||phi||^2)`` (Jensen over the signs *and* ``S``), so
  ``rad_M``'s ``rho_phi`` may be ``sqrt(tr_ub)``, ``tr_ub >= E||phi||^2`` fixed before ``S`` (the
  signal sample's Maurer--Pontil bound on ``||phi||^2 in [0, rho_phi^2]`` at ``delta_tr``, in
  ``P(E_U)``); the Lipschitz constant ``kappa nu rho_phi`` stays sure (the contraction needs it
  on the whole ball). ``tr_ub = rho_phi^2`` (``delta_tr = 0``) is the former term.
* ``e_G`` bounds ``||G_S - G||_F`` at ``delta_G``: Pinelis (1994, Thm 3.4, Hilbert space) in
  Bernstein form, ``P(||sum (xi_i - E xi)|| >= r) <= 2 exp(-r^2 / (2 (M sigma^2 + a r / 3)))``
  with ``a = 2 b_xi`` (``||xi - E xi|| <= 2 b_xi``) and ``sigma^2 >= E||xi - E xi||^2`` (the centred
  variance: Pinelis' ``b^2`` is the sum of the conditional second moments of the martingale
  differences ``xi_i - E xi``; the uncentred ``E||xi||^2`` is one upper bound of it);
  the positive root is at most ``e_G = 4 b_xi L / (3M) + sqrt(2 sigma^2 L / M)``,
  ``L = ln(2 copies / delta_G)``. **Differs from THEORY** (Smale--Zhou's Lemma 2,
  ``2 b_xi L / M``): ``4/3`` instead of ``2`` (theirs is valid, ours is the derivation).
* ``sigma^2``: ``sigma2_ub``, the sure ``b_xi^2`` (``delta_sigma = 0``), the
  Maurer--Pontil upper bound on the signal sample, ``mean ||xi||^2 + sqrt(2 V ln(2/delta_sigma)/n)
  + 7 b_xi^2 ln(2/delta_sigma)/(3(n-1))`` (values in ``[0, b_xi^2]``: as THEORY; *uncentred*), or
  the *centred* bound :func:`centred_variance_upper_expression` at the same ``delta_sigma``
  (``E||xi||^2 - ||G||^2`` from the same sample: **Choice**).
* (c) exact (readout at the top, squared loss, uncentred ``Sigma_phi``): ``U_S = nu_V e_G +
  nu_V^2 ||A||_2^2 lambda``, ``lambda = sqrt(2 rho_phi^2 Sigma_ub L / M) + 2 Sigma_ub L / (3M)``,
  ``L = ln(r copies / delta_Sigma)`` (Tropp 2012, Thm 1.4, ``X_i = (Sigma_phi - phi_i phi_i^T)/M``,
  ``lambda_max(X_i) <= ||Sigma_phi||/M``, ``||sum E X_i^2|| <= rho_phi^2 ||Sigma_phi|| / M``):
  as THEORY. ``Sigma_ub`` is ``rho_phi^2`` (sure, ``delta_Sn = 0``) or a bound at ``delta_Sn``.

**Choice**: every event about a function that depends on the cap pays the cap grid
(``copies = n_grid``; 1 for a cap fixed before ``S``), as in §6's variants; (c)'s two events
would not need it (both are cap-free). The remainder's McDiarmid term is not halved for
convex ``h``-maps (valid, not used).

References:
    I. Pinelis, Optimum bounds for the distributions of martingales in Banach spaces, Ann.
    Probab. 1994. S. Smale, D.-X. Zhou, Learning theory estimates via integral operators,
    Constr. Approx. 2007, Lemma 2. J. Tropp, User-friendly tail bounds for sums of random
    matrices, FoCM 2012 (arXiv 1004.4389), Thm 1.4. A. Maurer, A vector-contraction inequality
    for Rademacher complexities, ALT 2016. A. Maurer, M. Pontil, COLT 2009, Thm 4.
"""
from __future__ import annotations

import sympy as sp

from bounds import _symbols as s
from bounds import dependence as dep
from bounds._statement import Event, Premise, Tail, Theorem
from bounds.confidence import maurer_pontil_deviation
from bounds.theorems import E_R
from bounds.variants import rad_M

_real, _pos, _nonneg = dict(real=True), dict(positive=True), dict(nonnegative=True)

# ---- symbols (THEORY §6b) ------------------------------------------------------------------
DT_new, D_new, DS_new = (sp.Symbol(n, **_real) for n in ("DT_new", "D_new", "DS_new"))  # d_new on T, pop., S
D_pop, DS_pop = sp.Symbol("D_pop", **_real), sp.Symbol("DS_pop", **_real)              # d_pop on pop., S
delta_train = sp.Symbol("delta_train", **_real)        # R_S(f_old) - R_S(f_new) = -D_S(V_new)
delta_erm_pop = sp.Symbol("delta_erm_pop", **_real)    # R_S(f~_pop) - R_S(f_new), any sign
U_S = sp.Symbol("U_S", **_nonneg)                      # the uniform term (event E_U)
t_T_d, t_S_pop = sp.Symbol("t_T_d", **_pos), sp.Symbol("t_S_pop", **_pos)
delta_T_d, delta_S_pop = sp.Symbol("delta_T_d", **_pos), sp.Symbol("delta_S_pop", **_pos)
delta_U, delta_G, delta_q, delta_Sigma = (sp.Symbol(n, **_pos) for n in ("delta_U", "delta_G", "delta_q",
                                                                            "delta_Sigma"))
delta_sigma, delta_Sn = sp.Symbol("delta_sigma", **_nonneg), sp.Symbol("delta_Sn", **_nonneg)
kappa, b_xi, A_norm = sp.Symbol("kappa", **_nonneg), sp.Symbol("b_xi", **_nonneg), sp.Symbol("A_norm", **_nonneg)
sigma2_ub, Sigma_ub = sp.Symbol("sigma2_ub", **_nonneg), sp.Symbol("Sigma_ub", **_nonneg)
sigma2_S = sp.Symbol("sigma2_S", **_nonneg)            # a plain mean on S: never a valid bound (mutants)
tr_ub, delta_tr = sp.Symbol("tr_ub", **_nonneg), sp.Symbol("delta_tr", **_nonneg)   # E||phi||^2 <= tr_ub (signal)
V_T_dnew, V_S_dpop, V_S_dnew = (sp.Symbol(n, **_nonneg) for n in ("V_T_dnew", "V_S_dpop", "V_S_dnew"))
#: ``2 r_d``: the length of the interval of the differences, at the cap ``nu_V``.
RANGE = dep.difference_range()
nu = s.nu_V

CHAINS, UNIFORMS, TAILS = ("train", "paper"), ("sure", "linearised", "exact"), ("hoeffding", "bernstein")
ORIGIN = "Choice: THEORY §6b localised certificate on loss differences (this project's, not Paper A's)"


# ---- deviation formulas (the only place they are written) ------------------------------------
def hoeffding_difference(n, level, copies=1, value_range=RANGE) -> sp.Expr:
    """One-sided Hoeffding for values in an interval of length ``value_range``: ``R sqrt(ln(copies/level)/(2n))``."""
    return value_range * sp.sqrt(sp.log(copies / level) / (2 * n))


def bernstein_difference(n, variance, level, copies=1, value_range=RANGE) -> sp.Expr:
    """Maurer--Pontil Thm 4, interval of length ``R = 2 r_d``: ``sqrt(2 V ln(2c/l)/n) + 7 R ln(2c/l)/(3(n-1))``."""
    return maurer_pontil_deviation(n, variance, level / copies, value_range)


def e_G(level, copies=1, sigma2=sigma2_ub) -> sp.Expr:
    """``||G_S - G||_F <= 4 b_xi L/(3M) + sqrt(2 sigma^2 L/M)``, ``L = ln(2 copies/level)`` (Pinelis, Bernstein)."""
    L = sp.log(2 * copies / level)
    return 4 * b_xi * L / (3 * s.M) + sp.sqrt(2 * sigma2 * L / s.M)


def sure_uniform(level, copies=1, value_range=RANGE) -> sp.Expr:
    """(a): ``2 sqrt(2) L_loss L_top rad_M + R sqrt(ln(copies/level)/(2M))`` (McDiarmid, bounded differences R/M)."""
    return 2 * sp.sqrt(2) * s.L_loss * s.L_top * rad_M + hoeffding_difference(s.M, level, copies, value_range)


def remainder(level, copies=1, trace=tr_ub) -> sp.Expr:
    """(b)'s remainder: ``2 sqrt(2) kappa nu rho_phi nu sqrt(d tr/M) + kappa nu^2 rho_phi^2 sqrt(ln(copies/level)/(2M))``.

    ``tr >= E||phi||^2 = tr Sigma_phi``: the sure ``rho_phi^2`` (then ``nu sqrt(d tr/M) = rad_M``) or the
    signal sample's upper confidence bound at ``delta_tr``.
    """
    scale = kappa * nu**2 * s.rho_phi**2
    rad = nu * sp.sqrt(s.d * trace / s.M)
    return 2 * sp.sqrt(2) * kappa * nu * s.rho_phi * rad + scale * sp.sqrt(sp.log(copies / level) / (2 * s.M))


def lambda_bound(level, copies=1, sigma_norm=Sigma_ub) -> sp.Expr:
    """``lambda_max(Sigma_phi - Sigma_phi,S) <= sqrt(2 rho^2 S L/M) + 2 S L/(3M)``, ``L = ln(r copies/level)``."""
    L = sp.log(s.r * copies / level)
    return sp.sqrt(2 * s.rho_phi**2 * sigma_norm * L / s.M) + 2 * sigma_norm * L / (3 * s.M)


def linearised_uniform(copies=1, sigma2=sigma2_ub) -> sp.Expr:
    """(b): ``nu e_G(delta_G) + remainder(delta_q)``."""
    return nu * e_G(delta_G, copies, sigma2) + remainder(delta_q, copies)


def exact_uniform(copies=1, sigma2=sigma2_ub) -> sp.Expr:
    """(c): ``nu e_G(delta_G) + nu^2 ||A||_2^2 lambda_bound(delta_Sigma)``."""
    return nu * e_G(delta_G, copies, sigma2) + nu**2 * A_norm**2 * lambda_bound(delta_Sigma, copies)


def sigma2_upper_expression(n, mean, variance, level) -> sp.Expr:
    """``mean + sqrt(2 V ln(2/level)/n) + 7 b_xi^2 ln(2/level)/(3(n-1))``: ``sigma^2``'s bound on the signal sample."""
    return mean + maurer_pontil_deviation(n, variance, level, b_xi**2)


def centred_variance_upper_expression(n, mean, variance, G_norm, level) -> sp.Expr:
    """Upper confidence bound on the centred ``s^2 = E||xi - E xi||_F^2`` from a sample of ``n`` (the signal sample).

    ``s^2 = E||xi||^2 - ||G||^2`` (``G = E xi``). At ``level/2`` each (union: ``level``): ``u`` =
    :func:`sigma2_upper_expression` (``E||xi||^2 <= u``, its minimum with the sure ``b_xi^2``) and
    ``||G|| >= l = max(0, ||G_n|| - e_n)``, ``e_n`` Pinelis' Bernstein bound of :func:`e_G` at the
    sample's size with the variance proxy ``min(u, b_xi^2)`` (valid on ``u``'s event, since
    ``E||xi - E xi||^2 <= E||xi||^2``): ``s^2 <= max(0, min(u, b_xi^2) - l^2)`` (**Choice**: the split).
    """
    u = sp.Min(sigma2_upper_expression(n, mean, variance, level / 2), b_xi**2)
    L = sp.log(2 / (level / 2))
    e_n = 4 * b_xi * L / (3 * n) + sp.sqrt(2 * u * L / n)
    return sp.Max(0, u - sp.Max(0, G_norm - e_n) ** 2)


def trace_upper_expression(n, mean, variance, level) -> sp.Expr:
    """``mean + sqrt(2 V ln(2/level)/n) + 7 rho_phi^2 ln(2/level)/(3(n-1))``: ``E||phi||^2``'s bound (values in ``[0, rho_phi^2]``)."""
    return mean + maurer_pontil_deviation(n, variance, level, s.rho_phi**2)


def Sigma_norm_upper_expression(n, top, level, rho=s.rho_phi, dim=s.r) -> sp.Expr:
    """Upper confidence bound on ``||Sigma_phi||_2`` from a sample of ``n`` (the signal sample), at ``level``.

    ``top = lambda_max(Sigma_n)`` (uncentred, ``Sigma_n = (1/n) sum phi_i phi_i^T``). Weyl and the
    matrix Bernstein bound of :func:`lambda_bound` at ``S = ||Sigma_phi||`` (Tropp Thm 1.4 with
    ``X_i = (Sigma - phi_i phi_i^T)/n``, ``L = ln(r/level)``): ``S <= top + b sqrt(S) + a S``,
    ``b = sqrt(2 rho^2 L/n)``, ``a = 2L/(3n)``; for ``a < 1`` the quadratic in ``sqrt(S)`` gives
    ``S <= ((b + sqrt(b^2 + 4 (1 - a) top)) / (2 (1 - a)))^2`` (**Choice**: its minimum with the
    sure ``rho^2`` holds on the same event; with ``a >= 1`` only ``rho^2``).
    """
    L = sp.log(dim / level)
    a, b = 2 * L / (3 * n), sp.sqrt(2 * rho**2 * L / n)
    return ((b + sp.sqrt(b**2 + 4 * (1 - a) * top)) / (2 * (1 - a)))**2


#: ``E_U``'s probability per kind of ``U_S``.
UNIFORM_LEVELS = {"sure": delta_U, "linearised": delta_G + delta_q + delta_sigma + delta_tr,
                  "exact": delta_G + delta_Sigma + delta_sigma + delta_Sn}


# ---- events and premises --------------------------------------------------------------------
def uniform_event(uniform: str, copies=s.n_grid) -> Event:
    """``E_U``: ``sup_{||V|| <= nu} (D - D_S)(V) > U_S`` on ``S`` (THEORY §6b (a)/(b)/(c))."""
    p = UNIFORM_LEVELS[uniform]
    if uniform == "sure":
        tail = Tail("uniform", U_S, sure_uniform(delta_U, copies), s.M, p, RANGE, copies=copies, rademacher=rad_M)
    elif uniform == "linearised":
        tail = Tail("uniform_linearised", U_S, linearised_uniform(copies), s.M, p, RANGE, variance=sigma2_ub,
                    copies=copies)
    else:
        tail = Tail("uniform_exact", U_S, exact_uniform(copies), s.M, p, RANGE, variance=sigma2_ub, copies=copies)
    return Event("E_U", p, f"sup over the ball of (D - D_S)(V) exceeds U_S ({uniform}, THEORY §6b)", sample="S",
                 functions=("d_new",), tail=tail)


def difference_event(name, tail, sample, function, symbol, level, variance, copies=s.n_grid) -> Event:
    """A one-function tail of the mean of ``function``'s differences on ``sample`` (range ``2 r_d``)."""
    n = dep.SAMPLE_SIZES[sample]
    dev = (hoeffding_difference(n, level, copies) if tail == "hoeffding"
           else bernstein_difference(n, variance, level, copies))
    rec = Tail(tail, symbol, dev, n, level, RANGE, variance=None if tail == "hoeffding" else variance, copies=copies)
    return Event(name, level, f"one-sided {tail} tail of the mean of {function} on {sample}", sample=sample,
                 functions=(function,), tail=rec)


def _common_premises() -> tuple[Premise, ...]:
    return (
        Premise("definition_test_difference", sp.Eq(DT_new, s.L_test_new - s.L_test_old),
                "Definition: the mean of d_new on T is L_test(f_new) - L_test(f_old)."),
        Premise("tail_T_diff", sp.Le(DT_new, D_new + t_T_d),
                "One-function tail on T for the paired difference d_new (fixed given S).", "H_T_diff"),
        Premise("uniform_S", sp.Le(D_new, DS_new + U_S),
                "E_U: sup over the ball (fixed before S) of (D - D_S)(V) <= U_S; V_new is in the ball.", "E_U"),
    )


def _paper_premises() -> tuple[Premise, ...]:
    return (
        Premise("selection_pop", sp.Eq(DS_new, DS_pop - delta_erm_pop),
                "Definition of Delta_ERM_pop = R_S(f~_pop) - R_S(f_new), minus R_S(f_old) on both sides."),
        Premise("tail_S_pop", sp.Le(DS_pop, D_pop + t_S_pop),
                "One-function tail on S for d_pop (V_pop fixed before S).", "H_S_pop"),
        Premise("delta_R_confidence", sp.Le(D_pop, -s.delta_R),
                "Delta_R is a lower confidence bound on R(f_old) - R(f~_pop) (E_R; exact: level 0).", "E_R"),
    )


def _side_conditions(chain: str, uniform: str, tail_levels) -> tuple:
    levels = list(tail_levels) + ([delta_U] if uniform == "sure" else [delta_G]) + (
        [delta_q] if uniform == "linearised" else [delta_Sigma] if uniform == "exact" else [])
    conds = [s.M > 0, s.K > 0, s.B > 0, s.n_grid >= 1, s.L_test_old >= 0, s.L_test_new >= 0, U_S >= 0]
    conds += [c for lv in levels for c in (lv > 0, lv < 1)]
    conds += [lv < 1 for lv in (delta_sigma, delta_Sn, delta_tr) if lv in UNIFORM_LEVELS[uniform].free_symbols]
    if chain == "paper":
        conds += [s.delta_R_failure >= 0, s.delta_R_failure < 1]
    return tuple(conds)


def localised_name(chain: str, uniform: str, tail: str) -> str:
    """``localised_<chain>_<uniform>_<tail>``: the name of a localised route (a value of ``[localised] use``).

    Example:
        >>> localised_name("train", "exact", "bernstein")
        'localised_train_exact_bernstein'
    """
    return f"localised_{chain}_{uniform}_{tail}"


def localised_theorem(chain: str, uniform: str, tail: str) -> Theorem:
    """The THEORY §6b certificate of ``chain`` with a ``uniform`` term and ``tail`` one-function tails.

    Raises:
        ValueError: an unknown chain, uniform kind or tail.
    """
    for key, value, allowed in (("chain", chain, CHAINS), ("uniform", uniform, UNIFORMS), ("tail", tail, TAILS)):
        if value not in allowed:
            raise ValueError(f"{key} == {value!r}, must be one of {list(allowed)}.")
    events = [uniform_event(uniform), difference_event("H_T_diff", tail, "T", "d_new", t_T_d, delta_T_d, V_T_dnew)]
    premises = _common_premises()
    if chain == "train":
        premises += (Premise("definition_train_gain", sp.Eq(DS_new, -delta_train),
                             "Definition: Delta_train = R_S(f_old) - R_S(f_new) = -D_S(V_new), observed on S."),)
        bound, fail, tails = s.L_test_old - delta_train + U_S + t_T_d, UNIFORM_LEVELS[uniform] + delta_T_d, [delta_T_d]
    else:
        events += [difference_event("H_S_pop", tail, "S", "d_pop", t_S_pop, delta_S_pop, V_S_dpop), E_R]
        premises += _paper_premises()
        bound = s.L_test_old - s.delta_R - delta_erm_pop + U_S + t_S_pop + t_T_d
        fail, tails = UNIFORM_LEVELS[uniform] + delta_T_d + delta_S_pop + s.delta_R_failure, [delta_T_d, delta_S_pop]
    return Theorem(
        name=localised_name(chain, uniform, tail),
        reference=f"THEORY §6b, {chain} chain, U_S ({uniform}), {tail} tails (Choice: this project's, not Paper A's)",
        description=f"L_test(f_new) <= {bound} w.p. >= 1 - ({fail}).",
        conclusion=sp.Le(s.L_test_new, bound), premises=premises, events=tuple(events), failure_probability=fail,
        side_conditions=_side_conditions(chain, uniform, tails),
        functions=tuple((f, dep.role(f).samples) for f in ("f_old", "f_new", "d_new", "d_pop")),
        risk_terms=dep.declared_risk_terms(dep.JUMPBOARD if chain == "train" else "f~_pop"),
    )


#: Every localised certificate, keyed by name, with ``(chain, uniform, tail)``.
LOCALISED_SPECS = {localised_name(c, u, t): (c, u, t) for c in CHAINS for u in UNIFORMS for t in TAILS}
LOCALISED = {name: localised_theorem(*spec) for name, spec in LOCALISED_SPECS.items()}
LOCALISED_THEOREMS = tuple(LOCALISED.values())

__all__ = ["CHAINS", "LOCALISED", "LOCALISED_SPECS", "LOCALISED_THEOREMS", "ORIGIN", "RANGE", "TAILS", "UNIFORMS",
           "UNIFORM_LEVELS", "bernstein_difference", "e_G", "exact_uniform", "hoeffding_difference", "lambda_bound",
           "linearised_uniform", "localised_name", "localised_theorem", "remainder", "sigma2_upper_expression",
           "centred_variance_upper_expression", "trace_upper_expression",
           "Sigma_norm_upper_expression",
           "sure_uniform", "uniform_event", "difference_event"]
