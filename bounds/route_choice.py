"""Paying for the choice of a route: "some route of this set certifies" as one statement.

Picking, after seeing the data, whichever route certifies is itself a choice, and a
certificate must pay for it (THEORY §5-§6; docs/CHOICES.md). :func:`union_of_routes` is the
one mechanism the toolkit uses for that claim, for a set of routes fixed before the data:
"some route of the set that takes part certifies", which fails only on the union of the
failure events of the routes that take part, each distinct event counted once.

* A route takes part iff its own failure probability is at most ``share`` (or as the
  caller decides, ``included``). That probability is a function of the levels,
  ``Delta_R``, ``K``, ``B`` (and ``delta_R_failure``), all fixed before ``S`` and ``T`` are
  drawn, so the selection costs nothing (this project's **Choice**).
* The union's probability is the sum over the distinct events of the routes that take
  part. An event is about a statistic (:func:`event_key`: its kind, sample, function(s),
  sides, Rademacher value) exceeding a threshold that decreases with the event's level
  (``t = B sqrt(ln(1/p)/(2n))`` for a Hoeffding tail, and likewise for Bernstein and the
  uniform terms). Two events with the same key are therefore nested, and their union is
  the one with the larger level: a key is paid once, at the largest level among the routes
  taking part that use it (the same event at the same level in several routes is then
  paid once, e.g. ``E_S`` of the paper's two routes).
* Two uses (both through this function):

  - ``routes.any`` (:mod:`bounds._union`): Paper A's two routes at their own levels,
    ``E_S`` shared (``method = "union"``);
  - "any route with the variants" (``variants.any_route`` of ``depthcert bounds``,
    ``routes.any_with_variants`` of ``depthcert run``;
    :func:`bounds.variant_routes.any_with_variants`): the paper's routes and every
    variant, every level they spend multiplied by one factor ``c`` in ``(0, 1]`` chosen
    before the data (:func:`level_scale`) so that the union of their distinct events is at
    most the level (``method = "scaled_union"``).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from plumbing.io import to_plain

__all__ = ["AnyRouteResult", "RouteCandidate", "any_route_message", "event_key", "level_scale", "union_of_routes"]


@dataclasses.dataclass(frozen=True)
class RouteCandidate:
    """One route of a set: its result (``failure_probability``, ``certified``) and its events.

    Attributes:
        name: the route's name (e.g. ``direct_route``, ``population_tight_bernstein``).
        result: a :class:`~bounds.routes.RouteResult` (arrays allowed).
        events: event key -> probability (arrays allowed); an equal key with an equal
            probability in another candidate is the same event (counted once).
    """

    name: str
    result: object
    events: Mapping[str, object]


@dataclasses.dataclass(frozen=True)
class AnyRouteResult:
    """"Some route of the set certifies" (:func:`union_of_routes`).

    Attributes:
        included: route -> whether it takes part.
        events: the distinct event keys in the union (anywhere in a batch).
        failure_probability: the union bound over the distinct events of the included routes.
        certifying: route -> included and certified on its own.
        certified: some included route certifies and ``failure_probability <= level``.
        share: the failure probability a route may have to take part.
        level: the user's level.
        method: "union" (routes at their own levels) or "scaled_union" (every level
            multiplied by ``scale``, :func:`level_scale`).
        scale: the common factor of the levels (1 for "union").
    """

    included: Mapping[str, np.ndarray]
    events: tuple[str, ...]
    failure_probability: np.ndarray
    certifying: Mapping[str, np.ndarray]
    certified: np.ndarray
    share: float = 1.0
    level: float = 1.0
    method: str = "union"
    scale: object = 1.0

    def to_dict(self) -> dict:
        return to_plain({"certified": self.certified, "failure_probability": self.failure_probability,
                         "routes_included": dict(self.included), "routes_certifying": dict(self.certifying),
                         "events": list(self.events), "share": self.share, "level": self.level, "method": self.method,
                         "scale": self.scale, "message": any_route_message(self)})


def event_key(event, name: str | None = None) -> str:
    """The statistic an event is about, as a key: same key and same level = the same event.

    From the event's :class:`~bounds._statement.Tail` (kind, sample, function(s) for a
    one-function tail, sides and Rademacher value for a uniform one) or its Hoeffding
    record (a one-sided Hoeffding tail of the function on its sample); otherwise the
    event's own name (prefixed with ``name``, the route, when given: not shared).

    Example:
        >>> from bounds.variants import VARIANTS
        >>> [event_key(e) for e in VARIANTS["direct_tight_hoeffding"].events]
        ['S/uniform/two-sided/rad_M', 'T/hoeffding/f_new', 'T/hoeffding/f~_S']
    """
    t = event.tail
    if t is not None:
        if t.kind in ("uniform", "uniform_empirical"):
            return f"{event.sample}/{t.kind}/{'two' if t.sides == 2 else 'one'}-sided/{t.rademacher}"
        if t.kind == "monte_carlo":
            return f"{event.sample}/monte_carlo/{t.rademacher}"
        return f"{event.sample}/{t.kind}/{'+'.join(event.functions)}"
    if event.hoeffding is not None and event.sample is not None and len(event.functions) == 1:
        return f"{event.sample}/hoeffding/{event.functions[0]}"
    return event.name if name is None else f"{name}/{event.name}"


def _grouped(candidates, shape) -> dict[str, list[tuple[str, np.ndarray]]]:
    """Event key -> ``[(route, probability)]``: the routes using each statistic."""
    out: dict[str, list[tuple[str, np.ndarray]]] = {}
    for c in candidates:
        for key, p in c.events.items():
            out.setdefault(key, []).append((c.name, np.broadcast_to(np.asarray(p, dtype=np.float64), shape)))
    return out


def union_of_routes(candidates: Sequence[RouteCandidate], level: float, *, share: float | None = None,
                    method: str = "union", included: Mapping[str, object] | None = None,
                    scale: object = 1.0) -> AnyRouteResult:
    """"Some route of ``candidates`` certifies", failing only on the union of their distinct events.

    Args:
        candidates: the routes of a set fixed before the data, with their events.
        level: the user's level.
        share: a route takes part iff its failure probability is ``<= share`` (default ``level``).
        method: a label for the report ("union", "scaled_union").
        included: route -> whether it takes part (decided before the data), instead of ``share``.
        scale: the common factor the routes' levels were multiplied by (reported).

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
    shapes += [np.shape(x) for x in (included or {}).values()]
    shape = np.broadcast_shapes(*shapes) if shapes else ()
    if included is None:
        inc = {c.name: np.broadcast_to(np.asarray(c.result.failure_probability) <= share, shape) for c in candidates}
    else:
        inc = {c.name: np.broadcast_to(np.asarray(included[c.name], dtype=bool), shape) for c in candidates}
    total, keys = np.zeros(shape), []
    for key, users in _grouped(candidates, shape).items():   # nested events: the largest level counts
        paid = np.zeros(shape)
        for name, p in users:
            paid = np.maximum(paid, np.where(inc[name], p, 0.0))
        total = total + paid
        if any(np.any(inc[name]) for name, _ in users):
            keys.append(key)
    certifying = {c.name: inc[c.name] & np.asarray(c.result.certified) for c in candidates}
    some = np.zeros(shape, dtype=bool)
    for flag in certifying.values():
        some = some | flag
    return AnyRouteResult(inc, tuple(keys), total, certifying, some & (total <= level), float(share), float(level),
                          method, scale)


def _level_sums(parts: Mapping[str, Sequence[tuple[str, object, object]]], inc: Mapping[str, np.ndarray], shape):
    """``(F, L)``: fixed and linear parts summed over the event keys, each key at the largest part
    among the taking-part routes using it (nested events)."""
    F, L = np.zeros(shape), np.zeros(shape)
    for users in parts.values():
        f_key, l_key = np.zeros(shape), np.zeros(shape)
        for r, f, lin in users:
            f_key = np.maximum(f_key, np.where(inc[r], f, 0.0))
            l_key = np.maximum(l_key, np.where(inc[r], lin, 0.0))
        F, L = F + f_key, L + l_key
    return F, L


def level_scale(parts: Mapping[str, Sequence[tuple[str, object, object]]], route_fixed: Mapping[str, object],
                level: float) -> tuple[object, dict[str, np.ndarray]]:
    """The common factor ``c`` of the levels, and which routes take part (everything before the data).

    Each event a route uses has a probability ``fixed + c * linear``: a level (``delta``,
    ``delta'``, a tail's level, ``delta_mc``) scales with ``c``; a probability fixed by other
    quantities (the paper's Hoeffding tails at ``t = Delta_R/4``, ``delta_R_failure``) does
    not. A route takes part iff its own fixed part is below the level (e.g. the paper's
    population route when ``Delta_R`` is too small for ``K`` does not), and, when the fixed
    parts of the taking-part routes together reach the level, only routes without one.
    Then ``c = min(1, (level - F) / L)``, ``F`` and ``L`` summed over the event keys, each
    key at the largest part among the taking-part routes using it (nested events, see the
    module docstring).

    Args:
        parts: event key -> ``[(route, fixed part, linear part at c = 1)]`` (arrays allowed).
        route_fixed: route -> its failure probability that does not scale with ``c``.
        level: the user's level.

    Returns:
        ``(c, included)``.

    Example:
        >>> parts = {"E_S": [("a", 0, 0.05), ("b", 0, 0.05)], "E_R": [("a", 0.01, 0)], "E_T": [("b", 0, 0.05)]}
        >>> c, inc = level_scale(parts, {"a": 0.01, "b": 0.0}, 0.05)
        >>> round(float(c), 6), {k: bool(v) for k, v in inc.items()}   # (0.05 - 0.01) / 0.1
        (0.4, {'a': True, 'b': True})
    """
    arrays = [np.asarray(x, dtype=np.float64) for users in parts.values() for _, f, lin in users for x in (f, lin)]
    arrays += [np.asarray(x, dtype=np.float64) for x in route_fixed.values()]
    shape = np.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
    inc = {r: np.broadcast_to(np.asarray(f, dtype=np.float64) < level, shape) for r, f in route_fixed.items()}
    F, _ = _level_sums(parts, inc, shape)
    crowded = F >= level
    if np.any(crowded):
        inc = {r: v & ~(crowded & (np.asarray(route_fixed[r]) > 0)) for r, v in inc.items()}
    F, L = _level_sums(parts, inc, shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(L > 0, np.minimum(1.0, (level - F) / L), 1.0)
    return c, inc


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
        who = " and ".join(by) if len(by) <= 3 else f"{len(by)} routes ({', '.join(by[:2])}, ...)"
        what = " + ".join(a.events) if len(a.events) <= 6 else f"{len(a.events)} distinct events"
        return f"certified by {who} (any of {len(taking)} routes; failure probability of the union {fp:.4g}: {what})"
    if any(bool(v) for v in a.certifying.values()):
        return f"not certified: the union of the events of {taking} has failure probability {fp:.4g} > {a.level:g}"
    return f"not certified: none of the {len(taking)} routes taking part certifies"
