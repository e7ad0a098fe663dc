"""Paper A's routes (THEORY §5-§6) as :class:`~bounds.routes.Route` objects: ``population`` (Theorem 2),
``direct`` (Theorem 3) and the population-level consequence ``population_risk``.

The certificate table evaluates the two test-risk routes together (:func:`bounds.routes.evaluate_routes`,
once per table); the validity study checks Theorem 2 in its estimated-``Delta_R`` form (the confidence premise
on ``E_R``), as the run evaluates it, and that form is what "some route certifies" pays for.
"""
from __future__ import annotations

from bounds.routes._route import Route
from bounds.theorems import THEOREM_2, THEOREM_2_ESTIMATED, THEOREM_3, THEOREM_POPULATION_RISK

__all__ = ["DIRECT", "POPULATION", "POPULATION_RISK_ROUTE", "ROUTES"]


def _paper(setup, level, inputs, constants, memo):
    """Both test-risk routes at once (one :func:`~bounds.routes.evaluate_routes` per table), then this one's."""
    from bounds.routes._paper import evaluate_routes

    if "paper" not in memo:
        memo["paper"] = evaluate_routes(setup, level)
    return memo["paper"]


def _population(setup, level, inputs, constants, memo):
    return _paper(setup, level, inputs, constants, memo).population


def _direct(setup, level, inputs, constants, memo):
    return _paper(setup, level, inputs, constants, memo).direct


_POP = {"R_jump": "R_jump_pop", "RS_jump": "R_S_jump_pop", "RS_new": "R_S_new", "delta_erm": "delta_erm_pop"}

POPULATION = Route("population", THEOREM_2_ESTIMATED, _POP, row="population_route", group="paper",
                   evaluate=_population, union=THEOREM_2_ESTIMATED, proofs=(THEOREM_2, THEOREM_2_ESTIMATED),
                   label="population (Thm 2)", default=True)
DIRECT = Route("direct", THEOREM_3, {"R_jump": "R_jump_S", "RS_jump": "R_S_jump_S", "RS_new": "R_S_new",
                                     "L_test_jump": "L_test_jump_S", "delta_erm": "delta_erm_S"},
               row="direct_route", group="paper", evaluate=_direct, union=THEOREM_3, label="direct (Thm 3)", default=True)
POPULATION_RISK_ROUTE = Route("population_risk", THEOREM_POPULATION_RISK, _POP, kind="population", group="paper",
                              label="population risk R(f_new)")
#: Paper A's routes, in the order every table lists them.
ROUTES = (POPULATION, DIRECT, POPULATION_RISK_ROUTE)
