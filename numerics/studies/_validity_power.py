"""Power of the validity test: the same draws against deliberately weakened guarantees.

A validity test that cannot fail proves nothing. Each :class:`Variant` restates one event
of the chains with a guarantee that is too strong -- a deviation threshold too small for
its stated probability -- and is checked on the stored draws exactly like the true events.
The true counterparts (factor 1) are listed too: they must *not* be flagged.

* ``eps x c`` (``E_S``, ``E_T``): the uniform deviation bounded by ``c eps_n`` at the same
  level (``eps_n`` scales as ``1/sqrt(n)``, so ``c = 0.1`` is ``eps_n`` computed as if the
  sample were 100 times larger);
* ``Hoeffding K x c`` (``H_new``, ``H_old``): the one-sided tail at the fixed level
  :data:`HOEFFDING_LEVEL`, deviation ``t_c = B sqrt(ln(1/p) / (2 c K))`` (the sample size
  ``K`` replaced by ``c K``);
* ``Delta_R: mean - 1.645 SE`` (``E_R``): a plain normal-approximation bound stated at the
  route's level ``delta_R_failure`` (true coverage ~ 95%, not ``1 - 5e-4``).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping

from bounds import THEOREM_2_GENERAL
from numerics.studies._validity_routes import ROUTE_SPECS, RouteSpec, premise_slacks

__all__ = ["HOEFFDING_LEVEL", "VARIANTS", "Variant", "variant_failures"]

#: Level at which the Hoeffding variants state their tail.
HOEFFDING_LEVEL = 0.05

_GENERAL = RouteSpec("population_general_t", THEOREM_2_GENERAL, ROUTE_SPECS[0].binding)


@dataclasses.dataclass(frozen=True)
class Variant:
    """A restated event: ``check(record) -> (failed, stated probability)``."""

    name: str
    event: str
    weakened: bool
    description: str
    check: Callable[[Mapping], tuple[bool, float]]


def _uniform(event: str, eps: str, level: str, factor: float) -> Callable:
    def check(rec):
        v, devs = rec["values"], rec.get("deviations") or {}
        if event in devs:
            return devs[event]["sup"] > factor * v[eps], v[level]
        slacks = [s for spec in ROUTE_SPECS
                  for ev, s in premise_slacks(spec, v, {eps: factor * v[eps]}).values() if ev == event]
        return any(s < 0 for s in slacks), v[level]
    return check


def _hoeffding(event: str, factor: float) -> Callable:
    premise = {"H_new": "hoeffding_new", "H_old": "hoeffding_old"}[event]

    def check(rec):
        v = rec["values"]
        t = v["B"] * math.sqrt(math.log(1 / HOEFFDING_LEVEL) / (2 * factor * v["K"]))
        return premise_slacks(_GENERAL, v, {"t": t})[premise][1] < 0, HOEFFDING_LEVEL
    return check


def _normal_delta_R(z: float) -> Callable:
    def check(rec):
        v = rec["values"]
        return v["delta_R_hat"] - z * v["delta_R_stderr"] > v["delta_R_true"], v["delta_R_failure"]
    return check


def _variants() -> list[Variant]:
    out = []
    for event, eps, level in (("E_S", "eps_M", "delta"), ("E_T", "eps_K", "delta_prime")):
        for c in (1.0, 0.1, 0.01):
            out.append(Variant(f"{eps} x {c:g}", event, c < 1, f"sup |R - R_n| <= {c:g} {eps} w.p. >= 1 - {level}",
                               _uniform(event, eps, level, c)))
    for event in ("H_new", "H_old"):
        for c in (1.0, 100.0, 1e4):
            out.append(Variant(f"Hoeffding {event} K x {c:g}", event, c > 1,
                               f"one-sided Hoeffding tail at level {HOEFFDING_LEVEL:g} with K replaced by {c:g} K",
                               _hoeffding(event, c)))
    out.append(Variant("Delta_R: mean - 1.645 SE", "E_R", True,
                       "normal-approximation lower bound on Delta_R stated at delta_R_failure", _normal_delta_R(1.645)))
    return out


#: The variants every validity study reports (append to add one).
VARIANTS: list[Variant] = _variants()


def variant_failures(records, variants=VARIANTS) -> dict[str, dict]:
    """``{variant: {"failed": [...], "stated": [...]}}`` over the records."""
    out = {}
    for var in variants:
        pairs = [var.check(r) for r in records]
        out[var.name] = {"failed": [p[0] for p in pairs], "stated": [p[1] for p in pairs]}
    return out
