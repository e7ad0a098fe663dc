"""``routes.any``: "some route certifies" pays for the union of the routes' failure events.

A route takes part iff its own failure probability is at most the level; that
probability depends on ``Delta_R``, ``K``, ``B`` and the levels only, all fixed before ``S``
and ``T`` are drawn, so the selection costs nothing (this project's **Choice**). Each
distinct event of the taking-part routes' chains is paid once (``E_S`` is shared by both
routes). Used by :func:`bounds.routes.evaluate_routes` and :mod:`bounds.regimes`.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import sympy as sp

from bounds._statement import evaluate
from bounds.theorems import THEOREM_2_ESTIMATED, THEOREM_3

__all__ = ["ANY_OF", "AnyRouteResult", "any_route"]

#: The theorem whose events each route of ``any_route`` pays for (Theorem 2 with the
#: estimated ``Delta_R``: its event ``E_R`` has probability ``delta_R_failure``).
ANY_OF = {"population": THEOREM_2_ESTIMATED, "direct": THEOREM_3}


def _py(x):
    arr = np.asarray(x)
    if arr.ndim == 0:
        v = arr.item()
        return None if isinstance(v, float) and not np.isfinite(v) else v
    return [None if isinstance(v, float) and not np.isfinite(v) else v for v in arr.tolist()]


@dataclasses.dataclass(frozen=True)
class AnyRouteResult:
    """"Some route certifies": the union of the failure events of the routes taking part.

    Attributes:
        included: route -> whether it takes part (its own failure probability <= level;
            decided before ``S`` and ``T`` are drawn, see the module docstring).
        events: the distinct events of the union (a shared ``E_S`` once).
        failure_probability: sum of their probabilities.
        certifying: route -> taking part and certifying on its own.
        certified: some route certifies and ``failure_probability <= level``.
    """

    included: Mapping[str, np.ndarray]
    events: tuple[str, ...]
    failure_probability: np.ndarray
    certifying: Mapping[str, np.ndarray]
    certified: np.ndarray

    def to_dict(self) -> dict:
        return {"certified": _py(self.certified), "failure_probability": _py(self.failure_probability),
                "routes_included": {k: _py(v) for k, v in self.included.items()},
                "routes_certifying": {k: _py(v) for k, v in self.certifying.items()},
                "events": list(self.events), "message": _any_message(self)}



def _any_message(a: AnyRouteResult) -> str:
    if np.ndim(a.certified):
        return f"{int(np.sum(a.certified))} of {np.size(a.certified)} setups certified by some route"
    taking = [k for k, v in a.included.items() if v]
    if not taking:
        return "not certified: no route has failure probability <= level"
    fp = float(a.failure_probability)
    if a.certified:
        by = [k for k, v in a.certifying.items() if v]
        return f"certified by {' and '.join(by)}: failure probability of the union {fp:.4g} ({' + '.join(a.events)})"
    if any(bool(v) for v in a.certifying.values()):
        return f"not certified: the union of the events of {taking} has failure probability {fp:.4g} > level"
    return f"not certified: no route among {taking} certifies"



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
    shape = np.broadcast_shapes(*(np.shape(x) for x in values.values()),
                                *(np.shape(r.failure_probability) for r in results.values()))
    included = {k: np.broadcast_to(np.asarray(r.failure_probability) <= level, shape) for k, r in results.items()}
    exprs: dict[str, sp.Expr] = {}
    used: dict[str, np.ndarray] = {}
    for route, T in theorems.items():
        if route not in results:
            continue
        for name in dict.fromkeys(p.event for p in T.premises if p.event is not None):
            expr = T.event_map[name].probability
            if name in exprs and sp.simplify(exprs[name] - expr) != 0:
                raise ValueError(f"event {name!r} has probability {exprs[name]} in one chain and {expr} in another.")
            exprs[name] = expr
            used[name] = used.get(name, np.zeros(shape, dtype=bool)) | included[route]
    total = np.zeros(shape)
    with np.errstate(over="ignore"):
        for name, expr in exprs.items():
            total = total + np.where(used[name], evaluate(expr, values), 0.0)
    certifying = {k: included[k] & np.asarray(r.certified) for k, r in results.items()}
    some = np.zeros(shape, dtype=bool)
    for flag in certifying.values():
        some = some | flag
    events = tuple(name for name in exprs if np.any(used[name]))   # those in the union (anywhere in a batch)
    return AnyRouteResult(included=included, events=events, failure_probability=total,
                          certifying=certifying, certified=some & (total <= level))
