"""Which function depends on which sample: the tables the probability ledger checks against.

A one-function tail (Hoeffding, Bernstein) is valid only for a function that does not
depend on the sample it averages over, and a cap chosen after seeing the data must be paid
for on every event about a function that depends on the cap (THEORY §4, §6). Whether that
holds is a fact about how the toolkit builds its functions, not something a theorem object
may declare for itself: :mod:`proofs_check` reads these tables and fails any theorem whose
declared ``functions``/``risk_terms`` are weaker, or whose tail records name a variance,
a Rademacher value or a Monte-Carlo estimate other than the ones below.

* :data:`FUNCTIONS` -- each function, the samples it depends on and whether it depends on
  the norm cap (this project's pipeline, docs/CHOICES.md: ``f_old`` is trained on its own
  sample; ``f~_pop`` is ``f_old`` plus a step along ``G`` estimated on an independent
  sample, with ``eta = min(1/beta, nu_V/||G||)``, hence cap-dependent; ``f_new`` and
  ``f~_S`` are chosen with ``S`` inside the capped class).
* :data:`RISK_TERMS` -- each risk symbol: the function and where it is averaged (``S``,
  ``T`` or the population). ``*_jump`` symbols are about the chain's jumpboard, identified
  by its margin (:data:`MARGINS`: ``Delta_R`` is defined with ``f~_pop``, THEORY §5;
  ``Delta_test^R`` with ``f~_S``, THEORY §6); a chain with neither or both has an
  unknown jumpboard, taken to depend on everything.
* :data:`VARIANCES` -- each sample-variance symbol: the function and the sample.
* :data:`RADEMACHER` -- each Rademacher symbol: ``closed`` (the family's closed form at
  the sample's size) or ``empirical`` (measured on the sample).
* :data:`RANGES` -- the length of the interval of each function's values: ``B`` for a
  loss, ``2 r_d`` (:func:`difference_range`, at the cap ``nu_V``) for a paired difference
  ``d_V = l(f_V) - l(f_old)`` of THEORY §6b (``d_new``, ``d_pop``).
* :data:`CONSTANT_BOUNDS` -- the bounds on ``sigma^2`` and ``||Sigma_phi||`` the localised
  uniform terms may use, with the sample they come from (THEORY §6b).
* :func:`monte_carlo_estimates` -- the upper bounds of the exact empirical ``rad_S`` that a
  Monte-Carlo event may use: ``rad_S_mc + mc_error(level)``, or its minimum with Jensen's
  sure bound (THEORY §4).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import sympy as sp

from bounds import _symbols as s
from bounds import generalisation as g

#: The samples of THEORY §1 and their sizes.
SAMPLE_SIZES: Mapping[str, sp.Expr] = {"S": s.M, "T": s.K}
#: Placeholder for "the chain's jumpboard" in :data:`RISK_TERMS` and :data:`VARIANCES`.
JUMPBOARD = "f~"


@dataclasses.dataclass(frozen=True)
class Role:
    """How a function is built: the samples it depends on, and whether it depends on the cap."""

    samples: tuple[str, ...]
    cap: bool
    description: str


FUNCTIONS: Mapping[str, Role] = {
    "f_old": Role((), False, "the reference model, trained on its own sample before S and T are drawn"),
    "f~_pop": Role((), True, "the population jumpboard f_old - eta G (G, beta estimated on an independent "
                   "sample), fixed before S; its step eta = min(1/beta, nu_V/||G||) depends on the cap"),
    "f~_S": Role(("S",), True, "the jumpboard of the training sample (built from S, inside the capped class)"),
    "f_new": Role(("S",), True, "the selected expanded model (trained on S, inside the capped class)"),
    # THEORY §6b: paired loss differences against the reference (bounds.localised)
    "d_new": Role(("S",), True, "l(f_new) - l(f_old): f_new is trained on S inside the ball ||V||_F <= nu_V"),
    "d_pop": Role((), True, "l(f~_pop) - l(f_old): V_pop fixed before S (signal sample), rounded into the ball; "
                  "its step depends on the cap"),
}
#: Any function the tables do not know: it depends on every sample and on the cap.
UNKNOWN = Role(tuple(SAMPLE_SIZES), True, "unknown function: taken to depend on every sample and on the cap")

#: Margin symbol -> the jumpboard it is defined with.
MARGINS: Mapping[str, str] = {"delta_R": "f~_pop", "delta_test_R": "f~_S"}

RISK_TERMS: Mapping[str, tuple[str, str]] = {
    "L_test_new": ("f_new", "T"), "R_new": ("f_new", "population"), "RS_new": ("f_new", "S"),
    "L_test_old": ("f_old", "T"), "R_old": ("f_old", "population"),
    "L_test_jump": (JUMPBOARD, "T"), "R_jump": (JUMPBOARD, "population"), "RS_jump": (JUMPBOARD, "S"),
    # THEORY §6b: means of the paired differences d_V = l(f_V) - l(f_old)
    "DT_new": ("d_new", "T"), "D_new": ("d_new", "population"), "DS_new": ("d_new", "S"),
    "D_pop": ("d_pop", "population"), "DS_pop": ("d_pop", "S"),
}

VARIANCES: Mapping[str, tuple[str, str]] = {
    "V_S_jump": (JUMPBOARD, "S"), "V_T_new": ("f_new", "T"), "V_T_old": ("f_old", "T"), "V_T_jump": (JUMPBOARD, "T"),
    # THEORY §6b: sample variances of the paired differences (V_S_dnew is measured, but no tail may use it)
    "V_T_dnew": ("d_new", "T"), "V_S_dpop": ("d_pop", "S"), "V_S_dnew": ("d_new", "S"),
}


def difference_range(cap: sp.Expr = s.nu_V) -> sp.Expr:
    """``2 r_d`` with ``r_d = min(B, L_loss L_top cap rho_phi)``: the paired differences lie in ``[-r_d, r_d]``.

    THEORY §6b: ``|l(f_V) - l(f_old)| <= min(B, L_loss L_top ||V phi||)`` and ``||V phi|| <= ||V||_F rho_phi``,
    ``L_top`` certified on the tube ``{u + h : ||h|| <= cap rho_phi}``.

    Example:
        >>> difference_range()
        2*Min(B, L_loss*L_top*nu_V*rho_phi)
    """
    return 2 * sp.Min(s.B, s.L_loss * s.L_top * cap * s.rho_phi)


#: The length of the interval of each function's values (losses: ``[0, B]``; differences at the cap ``nu_V``).
RANGES: Mapping[str, sp.Expr] = {f: s.B for f in ("f_old", "f~_pop", "f~_S", "f_new", JUMPBOARD)}
RANGES = {**RANGES, "d_new": difference_range(), "d_pop": difference_range()}


def value_range(functions) -> sp.Expr:
    """The range of the values of ``functions`` (all must share one): ``B`` for losses, ``2 r_d`` for differences."""
    found = {RANGES.get(f, s.B) for f in functions} or {s.B}
    return found.pop() if len(found) == 1 else s.B


@dataclasses.dataclass(frozen=True)
class Bound:
    """A measured constant that enters a deviation: where it comes from and whether it is a sure bound."""

    sample: str | None
    level: str | None
    description: str


#: THEORY §6b: the bounds on ``sigma^2 = E ||m phi^T||_F^2`` and on ``||Sigma_phi||`` that ``E_U`` may use:
#: fixed before ``S`` (sure, or an upper confidence bound on the signal sample at its own level).
CONSTANT_BOUNDS: Mapping[str, Bound] = {
    "sigma2_ub": Bound("signal", "delta_sigma", "upper confidence bound on the centred E||xi - E xi||^2 from the "
                       "signal sample: the uncentred E||xi||^2's, or E||xi||^2's minus a lower bound on ||G||^2 "
                       "(each at its share of delta_sigma), or the sure b_xi^2 at delta_sigma = 0"),
    "Sigma_ub": Bound("signal", "delta_Sn", "upper bound on ||Sigma_phi||_2 from the signal sample (or the sure "
                      "rho_phi^2 at delta_Sn = 0)"),
    "sigma2_S": Bound("S", None, "the plain mean of ||m_i phi_i^T||^2 on S: no level, and chosen with S"),
    "tr_ub": Bound("signal", "delta_tr", "upper confidence bound on E||phi||^2 = tr Sigma_phi from the signal sample "
                   "(or the sure rho_phi^2 at delta_tr = 0)"),
    "tr_S": Bound("S", None, "the plain mean of ||phi_i||^2 on S: no level, and chosen with S"),
    "sigma2_plugin_c": Bound("signal", None, "mean ||xi||^2 - ||G_n||^2 on the signal sample: a plug-in centred "
                             "variance, no level (||G_n||^2 is no lower bound on ||G||^2)"),
}


@dataclasses.dataclass(frozen=True)
class Rademacher:
    """A Rademacher symbol: ``closed`` (closed form at the sample's size) or ``empirical`` (on the sample)."""

    kind: str
    sample: str


RADEMACHER: Mapping[str, Rademacher] = {
    "rad_M": Rademacher("closed", "S"), "rad_S": Rademacher("empirical", "S"), "rad_hat": Rademacher("empirical", "S"),
}

#: Symbols that stand for a fixed formula (expanded before the ledger compares).
DEFINITIONS: Mapping[sp.Symbol, sp.Expr] = {
    g.rad_S_mc_err: g.mc_error_expression(g.delta_mc), g.rad_S_jensen: g.jensen_readout_expression(),
}


def jumpboard(theorem) -> str:
    """The chain's jumpboard, read from its margin (:data:`MARGINS`); :data:`JUMPBOARD` if unknown.

    Example:
        >>> from bounds.theorems import THEOREM_2, THEOREM_3
        >>> jumpboard(THEOREM_2), jumpboard(THEOREM_3)
        ('f~_pop', 'f~_S')
    """
    names = {x.name for p in theorem.premises for x in p.relation.free_symbols}
    names |= {x.name for x in theorem.conclusion.free_symbols}
    found = {MARGINS[m] for m in names & set(MARGINS)}
    return found.pop() if len(found) == 1 else JUMPBOARD


def role(function: str) -> Role:
    """The :class:`Role` of ``function`` (:data:`UNKNOWN` for a function not in :data:`FUNCTIONS`)."""
    return FUNCTIONS.get(function, UNKNOWN)


def _resolve(entry: tuple[str, str] | None, jump: str) -> tuple[str, str] | None:
    if entry is None:
        return None
    return (jump if entry[0] == JUMPBOARD else entry[0]), entry[1]


def risk_term(name: str, jump: str) -> tuple[str, str] | None:
    """``(function, "S" | "T" | "population")`` of the risk symbol ``name`` in a chain with jumpboard ``jump``."""
    return _resolve(RISK_TERMS.get(name), jump)


def variance_of(name: str, jump: str) -> tuple[str, str] | None:
    """``(function, sample)`` whose losses the variance symbol ``name`` is measured on."""
    return _resolve(VARIANCES.get(name), jump)


def declared_functions(jump: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The ``Theorem.functions`` data of a chain with jumpboard ``jump`` (read from :data:`FUNCTIONS`)."""
    return tuple((f, role(f).samples) for f in ("f_old", jump, "f_new"))


def declared_risk_terms(jump: str) -> tuple[tuple[str, tuple[str, str]], ...]:
    """The ``Theorem.risk_terms`` data of a chain with jumpboard ``jump`` (read from :data:`RISK_TERMS`)."""
    return tuple((name, risk_term(name, jump)) for name in RISK_TERMS)


def expand_definitions(expr: sp.Expr) -> sp.Expr:
    """``expr`` with every symbol of :data:`DEFINITIONS` replaced by its formula."""
    return expr.subs(DEFINITIONS)


def monte_carlo_estimates(level: sp.Expr) -> tuple[sp.Expr, ...]:
    """Valid replacements of the exact ``rad_S`` outside a Monte-Carlo event of probability ``level``.

    ``rad_S_mc + mc_error(level)`` (McDiarmid over the sign draws), and its minimum with
    Jensen's deterministic bound (which holds surely, so the minimum holds on the same event).

    Example:
        >>> [type(e).__name__ for e in monte_carlo_estimates(g.delta_mc)]
        ['Add', 'Min']
    """
    mc = g.rad_S_mc + g.mc_error_expression(level)
    return mc, sp.Min(g.jensen_readout_expression(), mc)
