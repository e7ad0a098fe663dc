"""Theorems 1-3 of THEORY.md as :class:`~bounds._statement.Theorem` objects.

These objects are the only place the statements are written down: the route
evaluators (:mod:`bounds.routes`), the checker (:mod:`proofs_check`), the numerics and
the CLI all read them.

References:
    Paper A, arXiv 2605.08297 (2026); THEORY.md §3, §5, §6 (this project's
    formalisation).
"""
from __future__ import annotations

import sympy as sp

from bounds import _symbols as s
from bounds._statement import Event, Hoeffding, Premise, Theorem
from bounds.dependence import declared_functions, declared_risk_terms

_nonneg_costs = (s.eps_M >= 0, s.eps_K >= 0, s.delta_R >= 0, s.delta_erm >= 0)
# losses take values in [0, B]: every risk is >= 0 (THEORY §1)
_risks = (s.L_test_old >= 0, s.L_test_new >= 0, s.R_old >= 0, s.R_new >= 0, s.RS_new >= 0, s.RS_jump >= 0,
          s.R_jump >= 0)
_sizes = (s.M > 0, s.K > 0, s.B > 0, s.delta > 0, s.delta < 1, s.delta_prime > 0, s.delta_prime < 1)

E_S = Event("E_S", s.delta, "sup_F |R - R_S| > eps_M on the training sample S (THEORY §4)")
E_T = Event("E_T", s.delta_prime, "sup_F |R - L_test| > eps_K on the test sample T (THEORY §4)")


def _hoeffding_event(name: str, what: str, function: str) -> Event:
    h = Hoeffding(n=s.K, t=s.t, range=s.B)
    return Event(name, h.tail(), f"one-sided Hoeffding on T for {what} at deviation t", h, sample="T",
                 functions=(function,))


# ---- Theorem 1: jumpboard existence (THEORY §3) -----------------------------------
THEOREM_1 = Theorem(
    name="theorem1_jumpboard",
    reference="THEORY §3 (Paper A, Theorem 1)",
    description="R(f~_pop) <= R(f_old) - eta (1 - beta eta / 2) ||G||^2 for 0 < eta <= 1/beta.",
    conclusion=sp.Le(s.R_jump, s.R_old - s.eta * (1 - s.beta * s.eta / 2) * s.G_sq),
    premises=(
        Premise(
            "descent_lemma",
            sp.Le(s.R_jump, s.R_old - s.eta * s.G_sq + s.beta * s.eta**2 * s.G_sq / 2),
            "phi(t) = g(-t G) has phi'(0) = -||G||^2 and phi'' <= beta ||G||^2 on [0, eta] "
            "(A-smooth), so phi(eta) <= phi(0) + phi'(0) eta + beta ||G||^2 eta^2 / 2.",
        ),
    ),
    events=(),
    failure_probability=sp.Integer(0),
    side_conditions=(s.beta > 0, s.eta > 0, s.beta * s.eta <= 1, s.G_sq >= 0),
)

#: Corollary of Theorem 1 at ``eta = 1/beta``: ``Delta_R >= ||G||^2 / (2 beta)``.
THEOREM_1_OPTIMAL = Theorem(
    name="theorem1_optimal_step",
    reference="THEORY §3 (Paper A, Theorem 1 at eta = 1/beta)",
    description="Delta_R := R(f_old) - R(f~_pop) >= ||G||^2 / (2 beta).",
    conclusion=sp.Ge(s.delta_R, s.G_sq / (2 * s.beta)),
    premises=(
        Premise(
            "descent_lemma_at_optimum",
            sp.Le(s.R_jump, s.R_old - s.G_sq / s.beta + s.G_sq / (2 * s.beta)),
            "Descent lemma at eta = 1/beta (the minimiser of -eta + beta eta^2/2).",
        ),
        Premise("definition_delta_R", sp.Eq(s.R_jump, s.R_old - s.delta_R), "Definition of Delta_R."),
    ),
    events=(),
    failure_probability=sp.Integer(0),
    side_conditions=(s.beta > 0, s.G_sq >= 0),
)

# ---- Theorem 2: population route (THEORY §5), general tail t ----------------------
THEOREM_2_GENERAL = Theorem(
    name="theorem2_population_route_general_t",
    reference="THEORY §5 (generalisation to any Hoeffding tail t)",
    description="L_test(f_new) <= L_test(f_old) - Delta_R + 2t - Delta_ERM + 2 eps_M "
    "w.p. >= 1 - delta - 2 exp(-2 K t^2 / B^2).",
    conclusion=sp.Le(s.L_test_new, s.L_test_old - s.delta_R + 2 * s.t - s.delta_erm + 2 * s.eps_M),
    premises=(
        Premise("uniform_S_new", sp.Le(s.R_new, s.RS_new + s.eps_M),
                "Uniform convergence on S applied to f_new.", "E_S"),
        Premise("selection_C2", sp.Eq(s.RS_new, s.RS_jump - s.delta_erm),
                "Definition of Delta_ERM relative to f~_pop (C2 fallback makes it >= 0)."),
        Premise("uniform_S_jump", sp.Le(s.RS_jump, s.R_jump + s.eps_M),
                "Uniform convergence on S applied to f~_pop.", "E_S"),
        Premise("definition_delta_R", sp.Eq(s.R_jump, s.R_old - s.delta_R),
                "Definition of Delta_R (Theorem 1)."),
        Premise("hoeffding_new", sp.Le(s.L_test_new, s.R_new + s.t),
                "Hoeffding on T, conditionally on S (f_new is fixed given S).", "H_new"),
        Premise("hoeffding_old", sp.Le(s.R_old, s.L_test_old + s.t),
                "Hoeffding on T for the fixed f_old.", "H_old"),
    ),
    events=(E_S, _hoeffding_event("H_new", "L_test(f_new) - R(f_new)", "f_new"),
            _hoeffding_event("H_old", "R(f_old) - L_test(f_old)", "f_old")),
    failure_probability=s.delta + 2 * sp.exp(-2 * s.K * s.t**2 / s.B**2),
    side_conditions=_nonneg_costs + _sizes + _risks + (s.t > 0,),
    functions=declared_functions("f~_pop"), risk_terms=declared_risk_terms("f~_pop"),   # bounds.dependence
)

#: The paper's statement: ``t = Delta_R / 4``.
THEOREM_2 = THEOREM_2_GENERAL.substitute({s.t: s.delta_R / 4}, name="theorem2_population_route").replace(
    reference="THEORY §5 (Paper A, Theorem 2)",
    description="L_test(f_new) <= L_test(f_old) - Delta_R/2 - Delta_ERM + 2 eps_M "
    "w.p. >= 1 - delta - 2 exp(-K Delta_R^2 / (8 B^2)).",
    failure_probability=s.delta + 2 * sp.exp(-s.K * s.delta_R**2 / (8 * s.B**2)),
    side_conditions=_nonneg_costs + _sizes + _risks + (s.delta_R > 0,),
)

# ---- Theorem 3: direct route (THEORY §6) ---------------------------------------------
THEOREM_3 = Theorem(
    name="theorem3_direct_route",
    reference="THEORY §6 (Paper A, Theorem 3)",
    description="L_test(f_new) <= L_test(f_old) - Delta_test^R - Delta_ERM + 2 (eps_M + eps_K) "
    "w.p. >= 1 - delta - delta'.",
    conclusion=sp.Le(s.L_test_new, s.L_test_old - s.delta_test_R - s.delta_erm + 2 * (s.eps_M + s.eps_K)),
    premises=(
        Premise("uniform_T_new", sp.Le(s.L_test_new, s.R_new + s.eps_K),
                "Uniform convergence on T applied to f_new.", "E_T"),
        Premise("uniform_S_new", sp.Le(s.R_new, s.RS_new + s.eps_M),
                "Uniform convergence on S applied to f_new.", "E_S"),
        Premise("selection_C2", sp.Eq(s.RS_new, s.RS_jump - s.delta_erm),
                "Definition of Delta_ERM relative to f~_S (C2 fallback makes it >= 0)."),
        Premise("uniform_S_jump", sp.Le(s.RS_jump, s.R_jump + s.eps_M),
                "Uniform convergence on S applied to f~_S.", "E_S"),
        Premise("uniform_T_jump", sp.Le(s.R_jump, s.L_test_jump + s.eps_K),
                "Uniform convergence on T applied to f~_S.", "E_T"),
        Premise("definition_delta_test_R", sp.Eq(s.L_test_jump, s.L_test_old - s.delta_test_R),
                "Definition of Delta_test^R."),
    ),
    events=(E_T, E_S),
    failure_probability=s.delta + s.delta_prime,
    side_conditions=_nonneg_costs + _sizes + _risks + (s.L_test_jump >= 0,),
    functions=declared_functions("f~_S"), risk_terms=declared_risk_terms("f~_S"),   # bounds.dependence
)

# ---- an estimated Delta_R (this project's Choice, bounds.confidence) -------------------
#: ``Delta_R`` fed to a chain is a lower confidence bound on the true margin; the premise
#: ``R(f~_pop) <= R(f_old) - Delta_R`` then holds outside the event ``E_R`` (probability
#: ``delta_R_failure``, e.g. the level of an empirical-Bernstein bound).
E_R = Event("E_R", s.delta_R_failure,
            "the estimated Delta_R exceeds the true margin R(f_old) - R(f~_pop) (confidence bound fails)")
_estimated = (s.delta_R_failure >= 0, s.delta_R_failure < 1)


def with_estimated_delta_R(theorem: Theorem, name: str | None = None) -> Theorem:
    """``theorem`` with ``definition_delta_R`` replaced by the confidence premise on ``E_R``.

    The definition ``R(f~_pop) = R(f_old) - Delta_R`` becomes ``R(f~_pop) <= R(f_old) -
    Delta_R`` (``Delta_R`` a lower confidence bound), which fails on :data:`E_R`; the
    failure probability gains ``delta_R_failure``. Every other premise is unchanged
    (THEORY §5 stays valid for any ``Delta_R' <= Delta_R``).

    Raises:
        ValueError: ``theorem`` has no premise ``definition_delta_R``.
    """
    names = [p.name for p in theorem.premises]
    if "definition_delta_R" not in names:
        raise ValueError(f"theorem {theorem.name!r} has no premise 'definition_delta_R' (premises: {names}).")
    conf = Premise("delta_R_confidence", sp.Le(s.R_jump, s.R_old - s.delta_R),
                   "Delta_R is a lower confidence bound on R(f_old) - R(f~_pop) (bounds.confidence).", "E_R")
    premises = tuple(conf if p.name == "definition_delta_R" else p for p in theorem.premises)
    return theorem.replace(
        name=name or f"{theorem.name}_estimated_delta_R",
        premises=premises, events=theorem.events + (E_R,),
        failure_probability=theorem.failure_probability + s.delta_R_failure,
        side_conditions=theorem.side_conditions + _estimated)


#: Theorem 2 as ``bounds.routes`` evaluates it when ``Delta_R`` is estimated
#: (``Setup.delta_R_failure``): failure ``delta + 2 exp(-K Delta_R^2/(8 B^2)) + delta_R_failure``.
THEOREM_2_ESTIMATED = with_estimated_delta_R(THEOREM_2).replace(
    reference="THEORY §5 (Paper A, Theorem 2) with an estimated Delta_R (this project's Choice)")

# ---- population-level consequence of the same chain (THEORY §5, steps 1-4) -------------
THEOREM_POPULATION_RISK = Theorem(
    name="population_risk",
    reference="THEORY §5, steps 1-4 (this project's statement of the chain's population-level consequence)",
    description="R(f_new) <= R(f_old) - Delta_R - Delta_ERM + 2 eps_M w.p. >= 1 - delta - delta_R_failure.",
    conclusion=sp.Le(s.R_new, s.R_old - s.delta_R - s.delta_erm + 2 * s.eps_M),
    premises=THEOREM_2_ESTIMATED.premises[:4],
    events=(E_S, E_R),
    failure_probability=s.delta + s.delta_R_failure,
    side_conditions=_nonneg_costs + _sizes + _risks + _estimated,
)

ALL_THEOREMS = (THEOREM_1, THEOREM_1_OPTIMAL, THEOREM_2_GENERAL, THEOREM_2, THEOREM_3, THEOREM_POPULATION_RISK,
                THEOREM_2_ESTIMATED)


def jumpboard_lower_bound(G_sq, beta):
    """``||G||^2 / (2 beta)``: Theorem 1's guaranteed population gain (vectorised).

    Read from :data:`THEOREM_1_OPTIMAL`'s conclusion, not re-typed.

    Example:
        >>> float(jumpboard_lower_bound(2.0, 4.0))
        0.25
    """
    from bounds._statement import evaluate

    return evaluate(THEOREM_1_OPTIMAL.conclusion.rhs, {"G_sq": G_sq, "beta": beta})


def jumpboard_risk_bound(R_old, G_sq, beta, eta):
    """``R(f_old) - eta (1 - beta eta / 2) ||G||^2`` (Theorem 1, any ``0 < eta <= 1/beta``)."""
    from bounds._statement import evaluate

    return evaluate(THEOREM_1.bound, {"R_old": R_old, "G_sq": G_sq, "beta": beta, "eta": eta})
