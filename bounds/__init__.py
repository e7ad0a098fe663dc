"""bounds: the theorems of THEORY.md as symbolic objects, evaluated, certified, solved.

Imports without torch. Public API (implementation in underscore/sub-modules):

* :data:`THEOREM_1`, :data:`THEOREM_1_OPTIMAL`, :data:`THEOREM_2`,
  :data:`THEOREM_2_GENERAL`, :data:`THEOREM_3`, :data:`THEOREM_POPULATION_RISK`,
  :data:`THEOREM_2_ESTIMATED`, :data:`ALL_THEOREMS` -- statements with their proof chains
  (:class:`Theorem`, :class:`Premise`, :class:`Event`).
* :mod:`bounds.generalisation` -- ``eps_n(delta)`` (THEORY §4).
* :mod:`bounds.loss` -- loss constants ``B``, ``L_loss`` (THEORY §1).
* :mod:`bounds.routes` -- :class:`Setup`, :func:`evaluate_routes` (THEORY §5-§6).
* :mod:`bounds.appendix_m` -- the power-law conversion (THEORY §7).
* :mod:`bounds.variants` -- this project's tighter variants of Theorems 2-3 (THEORY §6,
  **Choice**), :data:`VARIANT_THEOREMS`; :mod:`bounds.variant_routes` --
  :func:`~bounds.variant_routes.evaluate_variants`.
* :mod:`bounds.dependence` -- which function depends on which sample (and on the cap):
  the tables :mod:`proofs_check`'s ledger checks every theorem against.
* :mod:`bounds.route_choice` -- "some route of a set certifies": the one union mechanism of
  ``routes.any`` (the paper pair) and of :func:`~bounds.variant_routes.any_with_variants`
  (every route and variant, levels times one factor fixed before the data).
"""
from bounds._statement import Event, Hoeffding, Premise, Tail, Theorem, evaluate
from bounds.theorems import (
    ALL_THEOREMS,
    THEOREM_1,
    THEOREM_1_OPTIMAL,
    THEOREM_2,
    THEOREM_2_GENERAL,
    THEOREM_2_ESTIMATED,
    THEOREM_3,
    THEOREM_POPULATION_RISK,
    jumpboard_lower_bound,
    jumpboard_risk_bound,
)
from bounds.variants import VARIANT_THEOREMS

__all__ = [
    "ALL_THEOREMS",
    "Event",
    "Hoeffding",
    "Premise",
    "THEOREM_1",
    "THEOREM_1_OPTIMAL",
    "THEOREM_2",
    "THEOREM_2_GENERAL",
    "THEOREM_2_ESTIMATED",
    "THEOREM_3",
    "THEOREM_POPULATION_RISK",
    "Tail",
    "Theorem",
    "VARIANT_THEOREMS",
    "evaluate",
    "jumpboard_lower_bound",
    "jumpboard_risk_bound",
]
