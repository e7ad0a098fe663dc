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
  route's level ``delta_R_failure`` (true coverage ~ 95%, not ``1 - 5e-4``);
* ``<variant>: fixed tail f_new on S`` (THEORY §6, the mutant ``fixed_tail_f_new_on_S`` of
  :mod:`proofs_check._variant_mutants`, rebuilt here from :mod:`bounds.variants`'s formulas): the
  variant's uniform step for ``f_new`` on ``S`` replaced by a one-function Hoeffding tail at
  ``E_S``'s level -- wrong because ``f_new`` is chosen with ``S``. Its event ``H_S_new``
  (``R(f_new) - R_S(f_new) > t``) and its chain are checked; the variant's own one-sided
  ``E_S`` and chain are the true counterparts. Selection on ``S`` must matter for this to be
  flagged (few data, a rich class; see ``examples/validity_selection_power.toml``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

from bounds import THEOREM_2_GENERAL
from bounds import _symbols as s
from bounds._statement import evaluate
from bounds.variants import VARIANT_SPECS, hoeffding_deviation
from numerics.studies.validity._routes import (PAPER_ROUTE_SPECS, ROUTE_SPECS, RouteSpec, conclusion_holds,
                                              premise_slacks, spec_values)

__all__ = ["HOEFFDING_LEVEL", "MUTATED", "VARIANTS", "Variant", "fixed_tail_values", "mutant_variants",
           "variant_failures"]

#: Level at which the Hoeffding variants state their tail.
HOEFFDING_LEVEL = 0.05

_GENERAL = RouteSpec("population_general_t", THEOREM_2_GENERAL, PAPER_ROUTE_SPECS[0].binding)
_SPECS = {spec.name: spec for spec in ROUTE_SPECS}
#: The variants whose fixed-tail mutant the study reports (the closed-form ones: the mutant replaces
#: their computed uniform term ``eps_M1``/``eps_M`` by the one-function tail).
MUTATED = ("population_tight_hoeffding", "population_tight_bernstein", "direct_tight_hoeffding",
           "direct_tight_bernstein")


@dataclasses.dataclass(frozen=True)
class Variant:
    """A restated event: ``check(record) -> (failed, stated probability)``."""

    name: str
    event: str
    weakened: bool
    description: str
    check: Callable[[Mapping], tuple[bool, float]]
    counted: str = "at its threshold"     # how a failure is counted (see _margin)
    #: ``testable(record) -> (tolerance, term)``: the truth's tolerance of the check and the (weakened) bound term
    #: it tests (:mod:`numerics.studies.validity._testable`); ``None``: exact check, testable.
    testable: Callable[[Mapping], tuple[float, float | None]] | None = None


def truth_error(rec: Mapping) -> float:
    """The Monte-Carlo error of a draw's truth (population risks), in risk units (0 when exact)."""
    return float((rec.get("truth") or {}).get("moment_error") or 0.0)


def _margin(rec: Mapping, weakened: bool) -> float:
    """A weakened *uniform* guarantee counts as failed only beyond the truth's error (the error is
    the supremum over the class of the check sample's half-sample disagreement -- the scale of the
    supremum checked -- so such a flag is never an artefact of the check sample); a true one fails
    at its threshold (over-counts: conservative). The one-function checks (Hoeffding tails,
    ``Delta_R``) compare at one function, where the class-wide error would overstate the error."""
    return truth_error(rec) if weakened else 0.0


def _at_functions(event: str, eps: str, factor: float, rec: Mapping) -> list[tuple[float, float]]:
    """``(gap, tolerance)`` of each paper premise on ``event`` with ``eps`` x ``factor``, at the chains' functions;
    the tolerance is the truth's (paired where the record holds ``truth_cov``: :func:`_routes.tolerance`)."""
    from numerics.studies.validity._routes import symbol_values, tolerance

    v, out = rec["values"], []
    for spec in PAPER_ROUTE_SPECS:
        rels = {p.name: p.relation for p in spec.theorem.premises}
        vals = symbol_values(spec, v)
        for name, (ev, sl) in premise_slacks(spec, v, {eps: factor * v[eps]}).items():
            if ev == event:
                out.append((sl, tolerance(vals, rels[name], spec.binding)))
    return out


def _uniform(event: str, eps: str, level: str, factor: float) -> Callable:
    def check(rec):
        v, devs, m = rec["values"], rec.get("deviations") or {}, _margin(rec, factor < 1)
        if event in devs:
            return devs[event]["sup"] > factor * v[eps] + m, v[level]
        return any(sl < -max(m, tol) for sl, tol in _at_functions(event, eps, factor, rec)), v[level]
    return check


def _uniform_testable(event: str, eps: str, factor: float) -> Callable:
    def testable(rec):
        v, devs, m = rec["values"], rec.get("deviations") or {}, _margin(rec, factor < 1)
        if event in devs:
            return m, factor * v[eps]
        return max([m] + [tol for _, tol in _at_functions(event, eps, factor, rec)]), factor * v[eps]
    return testable


def truth_tolerance(values: Mapping, coefficients: Mapping[str, float]) -> float:
    """The truth's tolerance for ``sum coefficients[name] * value(name)`` (record names): 0 for an exact truth,
    ``z se`` of the paired truth (``truth_cov``), else the unpaired ``truth_mc_tolerance``."""
    from numerics.sampled_task import TRUTH_Z
    from numerics.studies.validity._testable import truth_se

    if "truth_cov" in values:
        return TRUTH_Z * truth_se(values, coefficients)
    return float(values.get("truth_mc_tolerance", 0.0))


def _hoeffding_parts(event: str, factor: float, rec: Mapping) -> tuple[float, float, float]:
    from numerics.studies.validity._routes import symbol_values, tolerance

    premise = {"H_new": "hoeffding_new", "H_old": "hoeffding_old"}[event]
    v = rec["values"]
    t = float(evaluate(hoeffding_deviation(factor * s.K, HOEFFDING_LEVEL), v))   # the sample size c K
    rel = next(p.relation for p in _GENERAL.theorem.premises if p.name == premise)
    tol = tolerance(symbol_values(_GENERAL, v), rel, _GENERAL.binding)
    return premise_slacks(_GENERAL, v, {"t": t})[premise][1], tol, t


def _hoeffding(event: str, factor: float) -> tuple[Callable, Callable]:
    def check(rec):
        gap, tol, _ = _hoeffding_parts(event, factor, rec)
        return gap < -tol, HOEFFDING_LEVEL

    def testable(rec):
        _, tol, t = _hoeffding_parts(event, factor, rec)
        return tol, t
    return check, testable


def _normal_delta_R(z: float) -> tuple[Callable, Callable]:
    def check(rec):
        v = rec["values"]
        tol = truth_tolerance(v, {"delta_R_true": 1.0})
        return v["delta_R_hat"] - z * v["delta_R_stderr"] > v["delta_R_true"] + tol, v["delta_R_failure"]

    def testable(rec):
        v = rec["values"]
        return truth_tolerance(v, {"delta_R_true": 1.0}), z * v["delta_R_stderr"]
    return check, testable


def fixed_tail_values(name: str, rec: Mapping) -> dict:
    """The mutant ``fixed_tail_f_new_on_S`` of variant ``name`` at a draw: ``t_S_new``, its level, bound, failure.

    ``t_S_new = B sqrt(ln(1/delta)/(2M))`` (:func:`bounds.variants.hoeffding_deviation`, one
    function, no grid) at ``E_S``'s level ``delta``; the bound pays it instead of one copy of
    the computed uniform term; the failure probability trades ``E_S`` for ``H_S_new`` (the
    population variants use ``E_S`` nowhere else) or adds ``H_S_new`` (direct).
    """
    route = VARIANT_SPECS[name][0]
    v = spec_values(_SPECS[name], rec)
    r = rec["routes"][name]
    t = float(evaluate(hoeffding_deviation(s.M, s.delta), v))
    computed = v["eps_M1"] if route == "population" else v["eps_M"]
    extra = 0.0 if route == "population" else v["delta"]
    return {"t_S_new": t, "delta_S_new": v["delta"], "bound": r["bound"] - computed + t,
            "failure_probability": min(1.0, r["failure_probability"] + extra)}


def _mutant_event(name: str) -> Callable:
    def check(rec):
        m, v = fixed_tail_values(name, rec), rec["values"]
        return v["R_new"] - v["R_S_new"] > m["t_S_new"], m["delta_S_new"]
    return check


def _mutant_chain(name: str) -> Callable:
    def check(rec):
        m = fixed_tail_values(name, rec)
        return rec["values"]["L_test_new"] > m["bound"], m["failure_probability"]     # no truth involved
    return check


def _true_uniform(name: str) -> Callable:
    side = "upper" if VARIANT_SPECS[name][0] == "population" else "sup"

    def check(rec):
        v = spec_values(_SPECS[name], rec)
        threshold = v["eps_M1"] if side == "upper" else v["eps_M"]
        devs = rec.get("deviations") or {}
        failed = devs["E_S"][side] > threshold if "E_S" in devs else v["R_new"] - v["R_S_new"] > threshold
        return failed, v["delta"]
    return check


def _true_chain(name: str) -> Callable:
    def check(rec):
        return not conclusion_holds(_SPECS[name], spec_values(_SPECS[name], rec)), \
            min(1.0, rec["routes"][name]["failure_probability"])
    return check


def mutant_variants(names=MUTATED) -> list[Variant]:
    """The fixed-tail mutant of each variant of ``names`` (event and chain), with its true counterparts."""
    out = []
    for n in names:
        pop = VARIANT_SPECS[n][0] == "population"
        out += [Variant(f"{n}: fixed tail f_new on S (H_S_new)", "H_S_new", True,
                        "one-function Hoeffding tail for f_new on S at E_S's level (f_new depends on S)",
                        _mutant_event(n)),
                Variant(f"{n}: fixed tail f_new on S (chain)", "chain", True,
                        "the variant's chain with that tail in place of its uniform term", _mutant_chain(n)),
                Variant(f"{n}: E_S ({'one-sided' if pop else 'two-sided'} uniform, true)", "E_S", False,
                        "the variant's own uniform event over the capped class (exact supremum)", _true_uniform(n)),
                Variant(f"{n}: chain (true)", "chain", False, "the variant's own conclusion", _true_chain(n))]
    return out


def _variants() -> list[Variant]:
    out = []
    for event, eps, level in (("E_S", "eps_M", "delta"), ("E_T", "eps_K", "delta_prime")):
        for c in (1.0, 0.1, 0.01):
            out.append(Variant(f"{eps} x {c:g}", event, c < 1, f"sup |R - R_n| <= {c:g} {eps} w.p. >= 1 - {level}",
                               _uniform(event, eps, level, c),
                               "beyond the truth's Monte-Carlo error (a flag is never an artefact of the check "
                               "sample)" if c < 1 else "at its threshold", _uniform_testable(event, eps, c)))
    for event in ("H_new", "H_old"):
        for c in (1.0, 100.0, 1e4):
            check, testable = _hoeffding(event, c)
            out.append(Variant(f"Hoeffding {event} K x {c:g}", event, c > 1,
                               f"one-sided Hoeffding tail at level {HOEFFDING_LEVEL:g} with K replaced by {c:g} K",
                               check, testable=testable))
    check, testable = _normal_delta_R(1.645)
    out.append(Variant("Delta_R: mean - 1.645 SE", "E_R", True,
                       "normal-approximation lower bound on Delta_R stated at delta_R_failure", check, testable=testable))
    return out + mutant_variants()


#: The variants every validity study reports (append to add one).
VARIANTS: list[Variant] = _variants()


def variant_failures(records, variants=VARIANTS) -> dict[str, dict]:
    """``{variant: {"failed": [...], "stated": [...]}}`` over the records (a check that needs a route the
    records do not hold, e.g. the variants in an older study, is left out)."""
    out = {}
    for var in variants:
        try:
            pairs = [var.check(r) for r in records]
        except KeyError:
            continue
        out[var.name] = {"failed": [p[0] for p in pairs], "stated": [p[1] for p in pairs]}
    return out
