"""``routes.any``: "some route certifies" pays for the union of the routes' failure events.

A route takes part iff its own failure probability is at most the level; that
probability depends on ``Delta_R``, ``K``, ``B`` and the levels only, all fixed before ``S``
and ``T`` are drawn, so the selection costs nothing (this project's **Choice**). Each
distinct event of the taking-part routes' chains is paid once (``E_S`` is shared by both
routes). Used by :func:`bounds.routes.evaluate_routes` and :mod:`bounds.regimes`. The union
is computed by the one mechanism of :mod:`bounds.route_choice` (:func:`union_of_routes`),
which also computes "some route certifies" over the paper's routes and the variants.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np
import sympy as sp

from bounds._statement import evaluate
from bounds.route_choice import AnyRouteResult, RouteCandidate, union_of_routes
from bounds.routes._route import LiveMapping, union_theorems

__all__ = ["ANY_OF", "AnyRouteResult", "any_route"]

#: The theorem whose events each route of ``any_route`` pays for (Theorem 2 with the
#: estimated ``Delta_R``: its event ``E_R`` has probability ``delta_R_failure``): a live view of the route
#: registry (:attr:`bounds.routes.Route.union`), so a registered route takes part without passing ``theorems``.
ANY_OF = LiveMapping(union_theorems)


def any_route(results: Mapping[str, object], values: Mapping[str, object], level: float,
              theorems: Mapping[str, object] | None = None) -> AnyRouteResult:
    """"Some route certifies" over ``results``: the union of their failure events (THEORY §5-§6).

    A route takes part iff its own failure probability is ``<= level``; each distinct
    event of the taking-part routes' chains (:data:`ANY_OF`, or ``theorems``) is counted
    once, so ``E_S`` shared by both routes is paid once.

    Args:
        results: route name -> :class:`~bounds.routes.RouteResult` (arrays allowed).
        values: symbol name -> value (as in :func:`evaluate_routes`).
        level: the user's level.
        theorems: route name -> theorem whose events the route pays for (default
            :data:`ANY_OF`; a new route or variant passes its own).

    Raises:
        ValueError: two chains give the same event name different probabilities.

    Example:
        >>> from bounds.routes import Setup, evaluate_routes
        >>> st = Setup(L_test_old=1.0, delta_R=0.2, delta_erm=0.05, delta_test_R=0.15, M=1e4, K=1000,
        ...            delta=0.01, delta_prime=0.02, B=1.0, L_loss=1.0, block=dict(d=1, L_top=1, rho_phi=1, nu_V=1),
        ...            eps_M=0.01, eps_K=0.02)
        >>> a = evaluate_routes(st, level=0.1).any_route
        >>> bool(a.certified), a.events, round(float(a.failure_probability), 6)   # 0.01 + 0.02 + 2 exp(-5)
        (True, ('E_S', 'E_R', 'H_new', 'H_old', 'E_T'), 0.043476)
    """
    theorems = dict(ANY_OF if theorems is None else theorems)
    exprs: dict[str, sp.Expr] = {}
    candidates = []
    for route, result in results.items():
        T = theorems[route]
        events = {}
        for name in dict.fromkeys(p.event for p in T.premises if p.event is not None):
            expr = T.event_map[name].probability
            if name in exprs and sp.simplify(exprs[name] - expr) != 0:
                raise ValueError(f"event {name!r} has probability {exprs[name]} in one chain and {expr} in another.")
            exprs[name] = expr
            with np.errstate(over="ignore"):
                events[name] = evaluate(expr, values)
        candidates.append(RouteCandidate(route, result, events))
    shape = np.broadcast_shapes(*(np.shape(x) for x in values.values()))
    out = union_of_routes(candidates, level)
    return AnyRouteResult(**{**out.__dict__, "failure_probability": np.broadcast_to(out.failure_probability, shape),
                             "certified": np.broadcast_to(out.certified, shape)})
