"""A toy certificate route in one module (the route half of "add a route", docs/CONTRIBUTING.md).

``direct_loose`` is Theorem 3 with one more ``eps_K`` in its bound: it follows from Theorem 3's premises (a looser
conclusion), so ``prove`` must verify it, the validity study must never see it violated where Theorem 3 holds, and
its row in the certificate table is the direct route's bound plus ``eps_K`` -- each known without its code.
Its wrong twin ``direct_overclaim`` drops Theorem 3's costs: ``prove`` must reject it (the route's own mutant) and
the validity study must see its conclusion violated.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import sympy as sp

from bounds import THEOREM_3
from bounds import _symbols as s
from bounds.routes import Route, evaluate_routes

NAME = "direct_loose"
LOOSE = THEOREM_3.replace(name="toy_direct_loose", reference="a toy: Theorem 3 plus eps_K (tests/_toy_route.py)",
                          conclusion=sp.Le(s.L_test_new, THEOREM_3.bound + s.eps_K))
OVERCLAIM = THEOREM_3.replace(name="toy_direct_overclaim", reference="a wrong toy: Theorem 3 without its costs",
                              conclusion=sp.Le(s.L_test_new, THEOREM_3.bound - 2 * (s.eps_M + s.eps_K)))


def _evaluate(setup, level, inputs, constants, memo):
    """The direct route's result with ``eps_K`` added to its bound (vectorised over the setup's arrays)."""
    if "toy" not in memo:
        memo["toy"] = evaluate_routes(setup, level)
    rep = memo["toy"]
    bound = rep.direct.bound + rep.eps_K
    improvement = np.asarray(setup.L_test_old, dtype=np.float64) - bound
    return dataclasses.replace(rep.direct, route=NAME, theorem=LOOSE.name, bound=bound, improvement=improvement,
                               certified=(improvement > 0) & (rep.direct.failure_probability <= level),
                               margin_shortfall=np.maximum(0.0, -improvement))


DIRECT_LOOSE = Route(NAME, LOOSE, {"R_jump": "R_jump_S", "RS_jump": "R_S_jump_S", "RS_new": "R_S_new",
                                   "L_test_jump": "L_test_jump_S", "delta_erm": "delta_erm_S"},
                     origin="Choice", evaluate=_evaluate, union=LOOSE, label="direct + eps_K (toy)",
                     mutants=(("toy_direct_overclaim", "the toy without Theorem 3's costs", "entailment/z3",
                               lambda: OVERCLAIM),))
#: The wrong twin, registered on its own by the test that must see it caught.
DIRECT_OVERCLAIM = dataclasses.replace(DIRECT_LOOSE, name="direct_overclaim", theorem=OVERCLAIM, union=None,
                                       proofs=None, mutants=(), evaluate=None)
