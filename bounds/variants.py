"""Tighter variants of Theorems 2 and 3 (THEORY §6, this project's **Choice**, not Paper A's).

Several premises of the paper's chains are about a function that does not depend on the
sample the premise is about: ``f~_pop`` on ``S`` (built from ``f_old`` and population
quantities estimated on a separate sample), and ``f_new``, ``f~_S``, ``f_old`` on ``T``
(fixed given ``S``). For those a tail bound for ONE fixed function replaces the uniform
term; only the premises about ``f_new`` or ``f~_S`` on ``S`` pay for a supremum over the
capped class. Each variant is its own :class:`~bounds._statement.Theorem`; the paper's
objects in :mod:`bounds.theorems` are untouched. Which function depends on which sample
(and on the cap) is read from :mod:`bounds.dependence`, the table the ledger checks.

One-function tails (losses in ``[0, B]``, level ``delta_i``, one-sided):

* Hoeffding: ``t = B sqrt(ln(1/delta_i) / (2 n))`` (solves ``exp(-2 n t^2 / B^2) = delta_i``);
* empirical Bernstein (Maurer--Pontil 2009, Thm 4, sample variance ``V_n``, ``n >= 2``):
  ``t = sqrt(2 V_n ln(2/delta_i) / n) + 7 B ln(2/delta_i) / (3 (n - 1))``
  (:func:`bounds.confidence.maurer_pontil_deviation`).

Uniform term for ``f_new`` (and ``f~_S``) on ``S`` (THEORY §4): THEORY §4's ``eps_n`` at
``2 delta / sides`` (:func:`bounds.generalisation.eps_expression`), i.e. with the
closed-form vector Rademacher bound ``rad_M``,
``2 sqrt(2) L_loss L_top rad_M + B sqrt(ln(sides/delta)/(2M))`` (``sides = 1`` in the
population variant, which only uses ``R - R_S <= eps``; 2 in the direct variant, which
uses both directions); with the empirical value ``rad_S`` (an expectation over signs,
estimated by Monte Carlo with a McDiarmid error paid at ``delta_mc``; or Jensen's sure
bound when smaller), ``2 sqrt(2) L_loss L_top rad_S + 3 B sqrt(ln(2 sides/delta)/(2M))``
(Bartlett--Mendelson). A post-hoc cap grid of ``n_grid`` caps is paid by a union bound
(``copies = n_grid``) on every event about a function that depends on the cap, on ``S``
and on ``T`` alike (the uniform term; ``f~_pop``, whose step ``eta = min(1/beta,
nu_V/||G||)`` depends on it; ``f_new`` and ``f~_S`` on ``T``): valid whichever data the
cap is chosen with.

References:
    A. Maurer, M. Pontil, Empirical Bernstein bounds and sample variance penalization,
    COLT 2009 (arXiv 0907.3740), Thm 4. P. Bartlett, S. Mendelson, Rademacher and Gaussian
    complexities, JMLR 2002. THEORY.md §4, §6.
"""
from __future__ import annotations

import sympy as sp

from bounds import _symbols as s
from bounds import dependence
from bounds._statement import Event, Premise, Tail, Theorem
from bounds.confidence import maurer_pontil_deviation
from bounds.generalisation import confidence_term, rad_loss
# THEORY §4's empirical readout complexity, written once in bounds.generalisation (re-exported here)
from bounds.generalisation import (delta_mc, mc_error_expression, n_draws, phi_sq_sum, rad_S,  # noqa: F401
                                   rad_S_jensen, rad_S_mc, rad_S_mc_err)

_pos, _nonneg = dict(positive=True), dict(nonnegative=True)

# ---- symbols of the variants (THEORY §6) ------------------------------------------------
t_S_jump = sp.Symbol("t_S_jump", **_pos)          # tail of f~_pop on S
t_T_new = sp.Symbol("t_T_new", **_pos)            # tail of f_new on T
t_T_old = sp.Symbol("t_T_old", **_pos)            # tail of f_old on T
t_T_jump = sp.Symbol("t_T_jump", **_pos)          # tail of f~_S on T
delta_S_jump = sp.Symbol("delta_S_jump", **_pos)  # their levels
delta_T_new = sp.Symbol("delta_T_new", **_pos)
delta_T_old = sp.Symbol("delta_T_old", **_pos)
delta_T_jump = sp.Symbol("delta_T_jump", **_pos)
V_S_jump = sp.Symbol("V_S_jump", **_nonneg)       # unbiased sample variances of the losses
V_T_new = sp.Symbol("V_T_new", **_nonneg)
V_T_old = sp.Symbol("V_T_old", **_nonneg)
V_T_jump = sp.Symbol("V_T_jump", **_nonneg)
eps_M1 = sp.Symbol("eps_M1", **_nonneg)           # one-sided uniform cost on S (computable)
eps_M1_star = sp.Symbol("eps_M1_star", **_nonneg)  # the same with the exact empirical rad_S
eps_M_star = sp.Symbol("eps_M_star", **_nonneg)   # two-sided, exact empirical rad_S
rad_M = sp.Symbol("rad_M", **_nonneg)             # closed-form bound on Rad^vec_M(H) (family's)

TAILS = ("hoeffding", "bernstein")
UNIFORMS = ("closed", "empirical")
ORIGIN = "Choice: THEORY §6 tighter variant (this project's, not Paper A's)"
#: What replaces the exact ``rad_S`` outside ``E_MC``: the Monte-Carlo value plus its
#: McDiarmid error, or Jensen's sure bound when smaller (:func:`bounds.dependence.monte_carlo_estimates`).
RAD_S_ESTIMATE = sp.Min(rad_S_jensen, rad_S_mc + rad_S_mc_err)


# ---- deviation formulas (the only place they are written) ------------------------------
def hoeffding_deviation(n: sp.Expr, level: sp.Expr, copies: sp.Expr = 1) -> sp.Expr:
    """One-sided Hoeffding deviation ``B sqrt(ln(copies/level) / (2 n))`` for losses in ``[0, B]``.

    Example:
        >>> hoeffding_deviation(s.K, sp.Symbol("d"))
        sqrt(2)*B*sqrt(log(1/d))/(2*sqrt(K))
    """
    return s.B * sp.sqrt(sp.log(copies / level) / (2 * n))


def bernstein_deviation(n: sp.Expr, variance: sp.Expr, level: sp.Expr, copies: sp.Expr = 1) -> sp.Expr:
    """Empirical Bernstein (Maurer--Pontil 2009, Thm 4) one-sided deviation, losses in ``[0, B]``.

    ``sqrt(2 V ln(2 copies/level) / n) + 7 B ln(2 copies/level) / (3 (n - 1))``: the formula
    of :func:`bounds.confidence.maurer_pontil_deviation` at ``level / copies``.
    """
    return maurer_pontil_deviation(n, variance, level / copies, s.B)


def uniform_deviation(n: sp.Expr, level: sp.Expr, rademacher: sp.Expr, *, sides: int, copies: sp.Expr = 1,
                      empirical: bool = False) -> sp.Expr:
    """``sup_F`` deviation on a sample of size ``n`` (THEORY §4), ``sides`` directions at ``level``.

    THEORY §4's ``eps_n`` at ``2 level / (sides copies)``:
    ``2 sqrt(2) L_loss L_top rad + B sqrt(ln(sides copies/level)/(2n))`` with an expected
    (closed-form) ``rad``, or ``... + 3 B sqrt(ln(2 sides copies/level)/(2n))`` with an
    empirical one. ``sides = 2`` is ``eps_n(level)`` itself.

    Why one side suffices at ``level``: ``sup_F (R - R_n)`` has bounded differences ``B/n``
    (losses in ``[0, B]``), so McDiarmid gives ``P(sup - E sup > c) <= exp(-2 n c^2/B^2)``,
    and ``E sup <= 2 Rad_n(l o F)`` (symmetrisation) ``<= 2 sqrt(2) L_loss L_top rad``
    (Maurer's contraction); a chain that uses only ``R(f) <= R_n(f) + eps`` never needs
    the event of the other direction. Both directions: each at ``level/2``. Empirical
    ``rad``: the expected Rademacher value is at most the empirical one plus ``B c`` by a
    second McDiarmid event (bounded differences ``B/n`` again), each of the two at
    ``level/(2 sides)``, hence ``c + 2c = 3c``. ``copies``: a union over a cap grid.
    """
    return 2 * rad_loss(rademacher) + confidence_term(n, 2 * level / (sides * copies), empirical)


# ---- building blocks of the chains --------------------------------------------------------
def _copies(function: str) -> sp.Expr:
    """``n_grid`` for a function that depends on the cap (:mod:`bounds.dependence`), else 1."""
    return s.n_grid if dependence.role(function).cap else sp.Integer(1)


def _one_function_event(name: str, tail: str, sample: str, function: str, symbol, level, variance) -> Event:
    n, copies = dependence.SAMPLE_SIZES[sample], _copies(function)
    dev = hoeffding_deviation(n, level, copies) if tail == "hoeffding" else bernstein_deviation(
        n, variance, level, copies)
    rec = Tail(tail, symbol, dev, n, level, s.B, variance=None if tail == "hoeffding" else variance, copies=copies)
    return Event(name, level, f"one-sided {tail} tail for the fixed {function} on {sample} at level {level}",
                 sample=sample, functions=(function,), tail=rec)


def _uniform_events(sides: int, functions: tuple[str, ...], empirical: bool) -> tuple[Event, ...]:
    """``E_S`` (and, empirical, ``E_MC``): the supremum over the capped class on ``S``."""
    computed = eps_M1 if sides == 1 else s.eps_M
    if not empirical:
        dev = uniform_deviation(s.M, s.delta, rad_M, sides=sides, copies=s.n_grid)
        rec = Tail("uniform", computed, dev, s.M, s.delta, s.B, sides=sides, copies=s.n_grid, rademacher=rad_M)
        return (Event("E_S", s.delta, f"sup_F deviation on S ({sides}-sided) > {computed} (THEORY §4)",
                      sample="S", functions=functions, tail=rec),)
    star = eps_M1_star if sides == 1 else eps_M_star
    dev = uniform_deviation(s.M, s.delta, rad_S, sides=sides, copies=s.n_grid, empirical=True)
    rec = Tail("uniform_empirical", star, dev, s.M, s.delta, s.B, sides=sides, copies=s.n_grid, rademacher=rad_S)
    mc = Tail("monte_carlo", computed, dev.subs(rad_S, RAD_S_ESTIMATE), s.M, delta_mc, s.B, rademacher=rad_S,
              estimate=RAD_S_ESTIMATE)
    return (Event("E_S", s.delta, f"sup_F deviation on S ({sides}-sided) > {star}, empirical Rademacher "
                  "(Bartlett-Mendelson, THEORY §4)", sample="S", functions=functions, tail=rec),
            Event("E_MC", delta_mc, "the sign Monte Carlo under-estimates rad_S by more than its McDiarmid "
                  "error (THEORY §4)", sample="S", tail=mc))


def _mc_premise(empirical: bool, sides: int) -> tuple[Premise, ...]:
    if not empirical:
        return ()
    star, computed = (eps_M1_star, eps_M1) if sides == 1 else (eps_M_star, s.eps_M)
    return (Premise("monte_carlo_rad_S", sp.Le(star, computed),
                    "rad_S <= min(Jensen, rad_S_mc + rad_S_mc_err) (McDiarmid over the sign draws) and the cost "
                    "increases in rad_S.", "E_MC"),)


def _side_conditions(extra) -> tuple:
    risks = tuple(x >= 0 for x in (s.L_test_old, s.L_test_new, s.L_test_jump, s.R_old, s.R_new, s.RS_new,
                                   s.RS_jump, s.R_jump))
    sizes = (s.M > 0, s.K > 0, s.B > 0, s.delta > 0, s.delta < 1, s.n_grid >= 1)
    return (s.delta_erm >= 0,) + sizes + risks + tuple(extra)


def _levels(*levels) -> tuple:
    return tuple(c for lv in levels for c in (lv > 0, lv < 1))


#: The one-function tails of each route: ``(event, sample, function, slack, level, variance)``.
_TAIL_EVENTS = {
    "population": (("H_S_jump", "S", "f~_pop", t_S_jump, delta_S_jump, V_S_jump),
                   ("H_T_new", "T", "f_new", t_T_new, delta_T_new, V_T_new),
                   ("H_T_old", "T", "f_old", t_T_old, delta_T_old, V_T_old)),
    "direct": (("H_T_new", "T", "f_new", t_T_new, delta_T_new, V_T_new),
               ("H_T_jump", "T", "f~_S", t_T_jump, delta_T_jump, V_T_jump)),
}
_SIDES = {"population": 1, "direct": 2}
_MARGIN = {"population": s.delta_R, "direct": s.delta_test_R}
_JUMP = {"population": "f~_pop", "direct": "f~_S"}


def _population_premises(tail: str, slack) -> tuple[Premise, ...]:
    return (
        Premise("uniform_S_new", sp.Le(s.R_new, s.RS_new + slack),
                "One side of the uniform deviation on S, applied to f_new (depends on S).", "E_S"),
        Premise("selection_C2", sp.Eq(s.RS_new, s.RS_jump - s.delta_erm),
                "Definition of Delta_ERM relative to f~_pop (C2 fallback makes it >= 0)."),
        Premise("tail_S_jump", sp.Le(s.RS_jump, s.R_jump + t_S_jump),
                f"One-function {tail} tail on S for f~_pop (independent of S).", "H_S_jump"),
        Premise("definition_delta_R", sp.Eq(s.R_jump, s.R_old - s.delta_R), "Definition of Delta_R."),
        Premise("tail_T_new", sp.Le(s.L_test_new, s.R_new + t_T_new),
                f"One-function {tail} tail on T for f_new (fixed given S).", "H_T_new"),
        Premise("tail_T_old", sp.Le(s.R_old, s.L_test_old + t_T_old),
                f"One-function {tail} tail on T for f_old (fixed before T).", "H_T_old"),
    )


def _direct_premises(tail: str, slack) -> tuple[Premise, ...]:
    return (
        Premise("tail_T_new", sp.Le(s.L_test_new, s.R_new + t_T_new),
                f"One-function {tail} tail on T for f_new (fixed given S).", "H_T_new"),
        Premise("uniform_S_new", sp.Le(s.R_new, s.RS_new + slack),
                "Uniform deviation on S applied to f_new (depends on S).", "E_S"),
        Premise("selection_C2", sp.Eq(s.RS_new, s.RS_jump - s.delta_erm),
                "Definition of Delta_ERM relative to f~_S (C2 fallback makes it >= 0)."),
        Premise("uniform_S_jump", sp.Le(s.RS_jump, s.R_jump + slack),
                "Uniform deviation on S applied to f~_S (depends on S): the other direction.", "E_S"),
        Premise("tail_T_jump", sp.Le(s.R_jump, s.L_test_jump + t_T_jump),
                f"One-function {tail} tail on T for f~_S (fixed given S).", "H_T_jump"),
        Premise("definition_delta_test_R", sp.Eq(s.L_test_jump, s.L_test_old - s.delta_test_R),
                "Definition of Delta_test^R."),
    )


def _build(route: str, tail: str, uniform: str) -> Theorem:
    """The variant of ``route`` with ``tail`` one-function tails and a ``uniform`` Rademacher term."""
    emp, sides, jump = uniform == "empirical", _SIDES[route], _JUMP[route]
    computed = eps_M1 if sides == 1 else s.eps_M
    slack = (eps_M1_star if sides == 1 else eps_M_star) if emp else computed
    make = _population_premises if route == "population" else _direct_premises
    specs = _TAIL_EVENTS[route]
    tails = [x[3] for x in specs]
    events = _uniform_events(sides, ("f_new",) if sides == 1 else ("f_new", jump), emp) + tuple(
        _one_function_event(name, tail, *rest) for name, *rest in specs)
    fail = s.delta + sp.Add(*[x[4] for x in specs]) + (delta_mc if emp else 0)
    cost = sides * computed + sp.Add(*tails)
    return Theorem(
        name=variant_name(route, tail, uniform),
        reference=f"THEORY §6, {route} route, tighter variant (Choice: this project's, not Paper A's)",
        description=f"L_test(f_new) <= L_test(f_old) - {_MARGIN[route]} - Delta_ERM + {cost} ({tail} tails, "
        f"{uniform} Rademacher) w.p. >= 1 - {fail}.",
        conclusion=sp.Le(s.L_test_new, s.L_test_old - _MARGIN[route] - s.delta_erm + cost),
        premises=make(tail, slack) + _mc_premise(emp, sides), events=events, failure_probability=fail,
        side_conditions=_side_conditions((computed >= 0, slack >= 0) + tuple(x > 0 for x in tails)
                                         + _levels(*[x[4] for x in specs]) + (_levels(delta_mc) if emp else ())),
        functions=dependence.declared_functions(jump), risk_terms=dependence.declared_risk_terms(jump),
    )


# ---- the two routes (THEORY §6) -------------------------------------------------------------
def population_variant(tail: str = "hoeffding", uniform: str = "closed") -> Theorem:
    """``L_test(f_new) <= L_test(f_old) - Delta_R - Delta_ERM + eps_M1 + t_S(f~_pop) + t_T(f_new) + t_T(f_old)``.

    Failure: ``delta + delta_S_jump + delta_T_new + delta_T_old`` (``+ delta_mc`` with the
    empirical Rademacher term). Needs ``f_old`` and ``f~_pop`` fixed before ``S`` is drawn
    (:data:`bounds.dependence.FUNCTIONS`).

    Args:
        tail: "hoeffding" or "bernstein" (every one-function tail of the chain).
        uniform: "closed" (closed-form ``rad_M``) or "empirical" (``rad_S`` by Monte Carlo).
    """
    _check(tail, uniform)
    return _build("population", tail, uniform)


def direct_variant(tail: str = "hoeffding", uniform: str = "closed") -> Theorem:
    """``L_test(f_new) <= L_test(f_old) - Delta_test^R - Delta_ERM + 2 eps_M + t_T(f_new) + t_T(f~_S)``.

    Failure: ``delta + delta_T_new + delta_T_jump`` (``+ delta_mc`` with the empirical
    Rademacher term). ``eps_M`` is two-sided: the chain uses both directions on ``S``.
    """
    _check(tail, uniform)
    return _build("direct", tail, uniform)


def _check(tail: str, uniform: str) -> None:
    if tail not in TAILS:
        raise ValueError(f"tail == {tail!r}, must be one of {list(TAILS)}.")
    if uniform not in UNIFORMS:
        raise ValueError(f"uniform == {uniform!r}, must be one of {list(UNIFORMS)}.")


def variant_name(route: str, tail: str, uniform: str) -> str:
    """``population_tight_hoeffding``, ``direct_tight_bernstein_empirical``, ...

    Example:
        >>> variant_name("direct", "bernstein", "empirical")
        'direct_tight_bernstein_empirical'
    """
    return f"{route}_tight_{tail}" + ("_empirical" if uniform == "empirical" else "")


#: Every variant, keyed by name, with ``(route, tail, uniform)``.
VARIANT_SPECS = {variant_name(r, t, u): (r, t, u) for r in ("population", "direct") for u in UNIFORMS for t in TAILS}
_BUILD = {"population": population_variant, "direct": direct_variant}
VARIANTS = {name: _BUILD[r](t, u) for name, (r, t, u) in VARIANT_SPECS.items()}
VARIANT_THEOREMS = tuple(VARIANTS.values())

POPULATION_TIGHT_HOEFFDING = VARIANTS["population_tight_hoeffding"]
POPULATION_TIGHT_BERNSTEIN = VARIANTS["population_tight_bernstein"]
DIRECT_TIGHT_HOEFFDING = VARIANTS["direct_tight_hoeffding"]
DIRECT_TIGHT_BERNSTEIN = VARIANTS["direct_tight_bernstein"]
