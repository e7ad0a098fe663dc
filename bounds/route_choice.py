"""Paying for the choice of a route: "some route of this set certifies" as one statement.

Picking, after seeing the data, whichever route certifies is itself a choice, and a
certificate must pay for it (THEORY §5-§6; docs/CHOICES.md). :func:`union_of_routes` is the
honest statement for a set of routes fixed before the data: "some route of the set that
takes part certifies", which fails only on the union of the failure events of the routes
that take part, each distinct event counted once.

* A route takes part iff its own failure probability is at most ``share``. That
  probability is a function of the levels, ``Delta_R``, ``K``, ``B`` (and
  ``delta_R_failure``), all fixed before ``S`` and ``T`` are drawn, so the selection costs
  nothing (this project's **Choice**).
* The union's probability is the sum over the distinct event keys of the routes that take
  part. Callers give two routes the same key only for the same event (e.g. ``E_S`` of the
  paper's two routes); different keys are always safe (a Bonferroni sum).
* Bonferroni "best of N" (:func:`bounds.variant_routes.evaluate_variants`): every route is
  evaluated at ``level / N`` (every level it spends scaled by ``1/N``) and ``share =
  level / N``; the union is then at most ``level`` whichever route is picked afterwards.

The signature takes a list of candidates with their event sets, so that the paper routes'
union (``routes.any``) and the variants' can be combined into one set.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from bounds._io import to_plain


@dataclasses.dataclass(frozen=True)
class RouteCandidate:
    """One route of a set: its result (``failure_probability``, ``certified``) and its events.

    Attributes:
        name: the route's name (e.g. ``direct_route``, ``population_tight_bernstein``).
        result: a :class:`~bounds.routes.RouteResult` (arrays allowed).
        events: event key -> probability (arrays allowed); equal keys across candidates
            must denote the same event (counted once).
    """

    name: str
    result: object
    events: Mapping[str, object]


@dataclasses.dataclass(frozen=True)
class AnyRouteResult:
    """"Some route of the set certifies" (:func:`union_of_routes`).

    Attributes:
        included: route -> whether it takes part (its failure probability <= ``share``).
        events: the event keys in the union (anywhere in a batch).
        failure_probability: the union bound over the distinct events of the included routes.
        certifying: route -> included and certified on its own.
        certified: some included route certifies and ``failure_probability <= level``.
        share: the failure probability a route may have to take part.
        level: the user's level.
        method: "union" or "bonferroni".
    """

    included: Mapping[str, np.ndarray]
    events: tuple[str, ...]
    failure_probability: np.ndarray
    certifying: Mapping[str, np.ndarray]
    certified: np.ndarray
    share: float
    level: float = 1.0
    method: str = "union"

    def to_dict(self) -> dict:
        return to_plain({"certified": self.certified, "failure_probability": self.failure_probability,
                         "routes_included": dict(self.included), "routes_certifying": dict(self.certifying),
                         "events": list(self.events), "share": self.share, "level": self.level, "method": self.method,
                         "message": any_route_message(self)})


def union_of_routes(candidates: Sequence[RouteCandidate], level: float, *, share: float | None = None,
                    method: str = "union") -> AnyRouteResult:
    """"Some route of ``candidates`` certifies", failing only on the union of their events.

    Args:
        candidates: the routes of a set fixed before the data, with their events.
        level: the user's level.
        share: a route takes part iff its failure probability is ``<= share`` (default ``level``).
        method: a label for the report ("union", "bonferroni").

    Example:
        >>> from types import SimpleNamespace as R
        >>> a = RouteCandidate("a", R(failure_probability=0.04, certified=False), {"E_S": 0.03, "H": 0.01})
        >>> b = RouteCandidate("b", R(failure_probability=0.05, certified=True), {"E_S": 0.03, "E_T": 0.02})
        >>> u = union_of_routes([a, b], 0.1)
        >>> bool(u.certified), u.events, round(float(u.failure_probability), 6)
        (True, ('E_S', 'H', 'E_T'), 0.06)
    """
    share = level if share is None else share
    shapes = [np.shape(c.result.failure_probability) for c in candidates]
    shapes += [np.shape(p) for c in candidates for p in c.events.values()]
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    included = {c.name: np.broadcast_to(np.asarray(c.result.failure_probability) <= share, shape) for c in candidates}
    probability: dict[str, np.ndarray] = {}
    used: dict[str, np.ndarray] = {}
    for c in candidates:
        for key, p in c.events.items():
            probability.setdefault(key, np.broadcast_to(np.asarray(p, dtype=np.float64), shape))
            used[key] = used.get(key, np.zeros(shape, dtype=bool)) | included[c.name]
    total = np.zeros(shape)
    for key, p in probability.items():
        total = total + np.where(used[key], p, 0.0)
    certifying = {c.name: included[c.name] & np.asarray(c.result.certified) for c in candidates}
    some = np.zeros(shape, dtype=bool)
    for flag in certifying.values():
        some = some | flag
    events = tuple(k for k in probability if np.any(used[k]))
    return AnyRouteResult(included, events, total, certifying, some & (total <= level), float(share), float(level),
                          method)


def any_route_message(a: AnyRouteResult) -> str:
    """One line: which routes take part, which certify, the union's failure probability."""
    if np.ndim(a.certified):
        return f"{int(np.sum(a.certified))} of {np.size(a.certified)} setups certified by some route"
    taking = [k for k, v in a.included.items() if v]
    if not taking:
        return f"not certified: no route has failure probability <= {a.share:.4g}"
    fp = float(a.failure_probability)
    if a.certified:
        by = [k for k, v in a.certifying.items() if v]
        return f"certified by {', '.join(by)} (any of {len(taking)} routes; union failure probability {fp:.4g})"
    if any(bool(v) for v in a.certifying.values()):
        return f"not certified: the union of the events of {taking} has failure probability {fp:.4g} > {a.level:g}"
    return f"not certified: none of the {len(taking)} routes with failure probability <= {a.share:.4g} certifies"
