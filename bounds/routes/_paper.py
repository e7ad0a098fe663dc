"""Evaluate, certify and solve the two routes of Paper A (THEORY §5, §6); re-exported by :mod:`bounds.routes`.

Everything is read from the theorem objects :data:`~bounds.theorems.THEOREM_2`,
:data:`~bounds.theorems.THEOREM_3`, :data:`~bounds.theorems.THEOREM_POPULATION_RISK` and
from :func:`bounds.generalisation.eps_expression`; numeric evaluation is lambdified and
vectorised (every :class:`Setup` field may be a numpy array).

Besides the two test-risk routes, a report holds

* ``population_risk`` -- the population-level consequence of Theorem 2's chain,
  ``R(f_new) <= R(f_old) - Delta_R - Delta_ERM + 2 eps_M`` at failure probability
  ``delta + delta_R_failure`` (its bound needs ``Setup.R_old``; whether it certifies
  ``R(f_new) < R(f_old)`` does not);
* ``any_route`` -- "some route certifies", a claim about the union of the failure events
  of the routes it may pick (shared events, e.g. ``E_S``, counted once). A route takes
  part iff its own failure probability is at most the level; that probability depends
  on ``Delta_R``, ``K``, ``B`` and the levels only, which are all fixed before ``S`` and
  ``T`` are drawn, so the selection costs nothing (this project's **Choice**).

Sample sizes. Both closed-form costs scale as ``eps_n = c_n / sqrt(n)`` with a scale
``c_n`` that does not depend on ``n`` (THEORY §4), so the smallest certifying sizes solve
``margin(c_M / sqrt(M)) = 0`` in closed form (``min_M_expression``). When the user
overrides ``eps_M``/``eps_K`` with a measured value, the same ``1/sqrt(n)`` scaling is
assumed for the solve (this project's **Choice**; the report says so).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from bounds import _symbols as s
from bounds._statement import evaluate
from bounds.parameters import BLOCK_PARAMETERS, OPTIONAL, PARAMETERS
from plumbing.validation import check_values, InputError, LEVEL, MISSING
from bounds.generalisation import eps_expression
from bounds.routes._union import ANY_OF, AnyRouteResult, any_route  # noqa: F401  (re-exported)
from bounds.theorems import THEOREM_2, THEOREM_3, THEOREM_POPULATION_RISK

from bounds import _route_expressions
from bounds._route_expressions import (POPULATION_RISK, ROUTES, THEOREMS, _REFERENCE, _route, c_K,  # noqa: F401
                                      c_M, improvement_expression, min_K_expression, min_M_expression)

#: The symbol of the user's level in ``min_K_expression`` (re-exported).
level_symbol = _route_expressions.level


# ---------------------------------------------------------------------------- setup
@dataclasses.dataclass(frozen=True)
class Setup:
    """One setup (or a batch of setups, as numpy arrays) of THEORY §5-§6.

    Attributes:
        L_test_old, delta_R, delta_erm, delta_test_R, M, K, delta, delta_prime, B,
            L_loss: the config's top-level keys (``delta_erm`` relative to ``f~_pop``).
        family: "readout" or "full" (THEORY §4).
        block: the family's parameters (readout: d, L_top, rho_phi, nu_V; full: d,
            L_top, rho, nu_U, nu_V).
        delta_erm_S: ``Delta_ERM`` relative to ``f~_S`` for the direct route (default:
            ``delta_erm``).
        eps_M, eps_K: measured costs overriding the closed forms (e.g. empirical
            Rademacher); ``None`` to use the closed forms.
        n_grid: number of caps in the post-hoc cap grid (union bound, level/n_grid).
        delta_R_failure: when ``delta_R`` is an estimate, the probability that it exceeds
            the true ``Delta_R`` (e.g. the level of
            :func:`bounds.confidence.empirical_bernstein_lower`); added to the population route's failure
            probability (union bound; this project's **Choice**). Default: exact ``Delta_R``.
        R_old: population risk of ``f_old`` (e.g. a Monte-Carlo estimate); only the
            numeric bound of the ``population_risk`` route needs it.
    """

    L_test_old: object
    delta_R: object
    delta_erm: object
    delta_test_R: object
    M: object
    K: object
    delta: object
    delta_prime: object
    B: object
    L_loss: object
    family: str = "readout"
    block: Mapping[str, object] = dataclasses.field(default_factory=dict)
    delta_erm_S: object = None
    eps_M: object = None
    eps_K: object = None
    n_grid: object = 1
    delta_R_failure: object = None
    R_old: object = None

    def validate(self) -> "Setup":
        """Check every value against :data:`~bounds.parameters.PARAMETERS`.

        Raises:
            InputError: naming the key, the allowed range and the value.
        """
        if self.family not in BLOCK_PARAMETERS:
            raise InputError("block.family", f"one of {sorted(BLOCK_PARAMETERS)}", self.family)
        for key, interval in PARAMETERS.items():
            check_values(key, interval, getattr(self, key))
        for key, interval in OPTIONAL.items():
            if getattr(self, key) is not None:
                check_values(key, interval, getattr(self, key))
        extra = sorted(set(self.block) - set(BLOCK_PARAMETERS[self.family]))
        if extra:
            raise InputError(f"block.{extra[0]}", f"one of {sorted(BLOCK_PARAMETERS[self.family])} for family "
                             f"{self.family!r}", self.block[extra[0]])
        for key, interval in BLOCK_PARAMETERS[self.family].items():
            if key not in self.block:
                raise InputError(f"block.{key}", interval.describe(), MISSING)
            check_values(f"block.{key}", interval, self.block[key])
        return self

    def values(self) -> dict[str, np.ndarray]:
        keys = list(PARAMETERS) + ["n_grid"]
        out = {k: np.asarray(getattr(self, k), dtype=np.float64) for k in keys}
        out["delta_R_failure"] = np.asarray(0.0 if self.delta_R_failure is None else self.delta_R_failure,
                                            dtype=np.float64)
        out["R_old"] = np.asarray(np.nan if self.R_old is None else self.R_old, dtype=np.float64)
        # only the family's own keys: a block entry can never shadow a top-level quantity
        out.update({k: np.asarray(self.block[k], dtype=np.float64)
                    for k in BLOCK_PARAMETERS.get(self.family, {}) if k in self.block})
        return out


# ---------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True)
class RouteResult:
    """Evaluation of one route on a setup (arrays for a batch of setups).

    ``improvement = L_test_old - bound``; ``certified`` needs ``improvement > 0`` and
    ``failure_probability <= level``; ``min_M``/``min_K`` are NaN (``None`` in
    :meth:`to_dict`) where no finite value certifies.
    """

    route: str
    theorem: str
    bound: np.ndarray
    failure_probability: np.ndarray
    improvement: np.ndarray
    certified: np.ndarray
    margin_shortfall: np.ndarray
    failure_excess: np.ndarray
    vacuous: np.ndarray
    min_M: np.ndarray
    min_K: np.ndarray

    def to_dict(self) -> dict:
        out = {f.name: _py(getattr(self, f.name)) for f in dataclasses.fields(self)}
        out["message"] = _message(self)
        return out


@dataclasses.dataclass(frozen=True)
class RoutesReport:
    """Both routes on one setup, with the costs they share, the population-level
    consequence (``population_risk``) and "some route certifies" (``any_route``)."""

    eps_M: np.ndarray
    eps_K: np.ndarray
    level: float
    population: RouteResult
    direct: RouteResult
    notes: tuple[str, ...] = ()
    population_risk: RouteResult | None = None
    any_route: AnyRouteResult | None = None

    def to_dict(self) -> dict:
        out = {
            "eps_M": _py(self.eps_M),
            "eps_K": _py(self.eps_K),
            "level": self.level,
            "population_route": self.population.to_dict(),
            "direct_route": self.direct.to_dict(),
            "notes": list(self.notes),
        }
        if self.population_risk is not None:
            out["population_risk_route"] = self.population_risk.to_dict()
        if self.any_route is not None:
            out["any_route"] = self.any_route.to_dict()
        return out


def _py(x):
    arr = np.asarray(x)
    if arr.ndim == 0:
        v = arr.item()
        return None if isinstance(v, float) and not np.isfinite(v) else v
    return [None if isinstance(v, float) and not np.isfinite(v) else v for v in arr.tolist()]


def _message(r: RouteResult) -> str:
    if np.ndim(r.certified):
        return f"{int(np.sum(r.certified))} of {np.size(r.certified)} setups certified"
    if r.certified:
        return f"certified: improvement {float(r.improvement):.6g} at failure probability {float(r.failure_probability):.4g}"
    parts = []
    if r.margin_shortfall > 0:
        what = "R_old" if r.route == POPULATION_RISK else "L_test_old"
        parts.append(f"bound exceeds {what} by {float(r.margin_shortfall):.6g}")
    if r.failure_excess > 0:
        parts.append(f"failure probability exceeds the level by {float(r.failure_excess):.4g}")
    if r.vacuous:
        parts.append(f"VACUOUS guarantee: failure probability {float(r.failure_probability):.4g} >= 1")
    return "not certified: " + "; ".join(parts)


# ---------------------------------------------------------------------------- evaluation
def costs(setup: Setup) -> tuple[np.ndarray, np.ndarray]:
    """``(eps_M, eps_K)``: the overrides if given, else the closed forms of THEORY §4."""
    v = setup.values()
    out = []
    for override, n_sym, lvl in ((setup.eps_M, s.M, s.delta), (setup.eps_K, s.K, s.delta_prime)):
        if override is not None:
            out.append(np.asarray(override, dtype=np.float64))
        else:
            out.append(evaluate(eps_expression(setup.family, n_sym, lvl, grid=True), v))
    return out[0], out[1]


def _setup_notes(setup: Setup) -> list[str]:
    """What the setup's overrides and cap grid change in the routes' reading."""
    notes = []
    if setup.eps_M is not None or setup.eps_K is not None:
        notes.append("eps overridden by measured values: min_M/min_K assume eps_n ∝ 1/sqrt(n).")
    if np.any(np.asarray(setup.n_grid) > 1) and (setup.eps_M is None or setup.eps_K is None):
        notes.append("caps chosen after training: delta and delta' are split over the cap grid (union bound).")
    if np.any(np.asarray(setup.n_grid) > 1):
        notes.append("cap grid: the population route's Hoeffding tails (at t = Delta_R/4, which depends on the cap) "
                     "hold given S and pay no grid, so the cap must be chosen with S (after training), never with "
                     "T; the direct route and the variants stay valid whichever data the cap is chosen with.")
    return notes


def evaluate_routes(setup: Setup, level: float = 0.05, *, validate: bool = True) -> RoutesReport:
    """Both routes of Paper A on ``setup`` at the user's failure ``level``.

    Args:
        setup: a :class:`Setup` (fields may be numpy arrays of a common shape).
        level: the largest acceptable failure probability, in (0, 1].
        validate: check every value first (skip only for trusted batches).

    Returns:
        A :class:`RoutesReport`.

    Raises:
        InputError: a value is outside its allowed range (the key is named).

    Example:
        >>> st = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085,
        ...            M=2e5, K=1e5, delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5,
        ...            family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
        >>> rep = evaluate_routes(st, level=0.1)
        >>> round(float(rep.eps_M), 6), bool(rep.population.certified)
        (0.088649, False)
    """
    level = LEVEL.check("level", level)
    if validate:
        setup.validate()
    eps_M, eps_K = costs(setup)
    v = {**setup.values(), "eps_M": eps_M, "eps_K": eps_K, "level": np.float64(level)}
    notes = _setup_notes(setup)
    pop = _population(v)
    v_dir = dict(v)
    if setup.delta_erm_S is not None:
        v_dir["delta_erm"] = np.asarray(setup.delta_erm_S, dtype=np.float64)
    else:
        notes.append("direct route: delta_erm_S not given, so Delta_ERM relative to f~_pop (delta_erm) stands in "
                     "for Delta_ERM relative to f~_S (THEORY §6); give delta_erm_S when it is measured.")
    dire = _direct(v_dir)
    if setup.delta_R_failure is not None:
        notes.append("delta_R is an estimate: the probability that it exceeds the true Delta_R is added to the "
                     "population route's failure probability.")
    if np.any(v["delta_R"] <= 0):
        notes.append("Delta_R <= 0: Theorem 2 does not apply (failure probability set to its limit delta + 2).")
    pop_risk = _population_risk(v)
    if setup.R_old is None:
        notes.append("population_risk: R_old not given, so its bound on R(f_new) is not evaluated (whether it "
                     "certifies R(f_new) < R(f_old) does not depend on R_old).")
    both = any_route({"population": pop, "direct": dire}, v, level)
    return RoutesReport(eps_M=eps_M, eps_K=eps_K, level=level, population=pop, direct=dire, notes=tuple(notes),
                        population_risk=pop_risk, any_route=both)


def _shape(v) -> tuple:
    return np.broadcast_shapes(*(np.shape(x) for x in v.values()))


def _finish(route, theorem, bound, fail, v, min_M, min_K, improvement=None) -> RouteResult:
    # every field has the batch shape, whichever inputs were batched
    shape = _shape(v)
    bound, fail, min_M, min_K = (np.broadcast_to(np.asarray(a, dtype=np.float64), shape)
                                 for a in (bound, fail, min_M, min_K))
    improvement = v["L_test_old"] - bound if improvement is None else \
        np.broadcast_to(np.asarray(improvement, dtype=np.float64), shape)
    lvl = v["level"]
    return RouteResult(
        route=route, theorem=theorem.name, bound=bound, failure_probability=fail,
        improvement=improvement,
        certified=(improvement > 0) & (fail <= lvl),
        margin_shortfall=np.maximum(0.0, -improvement),
        failure_excess=np.maximum(0.0, fail - lvl),
        vacuous=fail >= 1.0,
        min_M=min_M, min_K=min_K,
    )


def _population(v) -> RouteResult:
    T = THEOREM_2
    bound = evaluate(T.bound, v)
    extra = v["delta_R_failure"]   # the estimated delta_R may exceed the true one (union bound)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        fail = np.where(v["delta_R"] > 0, evaluate(T.failure_probability, v), v["delta"] + 2.0) + extra
        gain = v["delta_R"] / 2 + v["delta_erm"]
        ok_fail = fail <= v["level"]
        min_M = np.where((gain > 0) & ok_fail & (v["delta_R"] > 0),
                         evaluate(min_M_expression("population"), {**v, "c_M": v["eps_M"] * np.sqrt(v["M"])}), np.nan)
        improvement = v["L_test_old"] - bound
        # the extra failure term acts as a larger delta in delta + 2 exp(...) = level
        min_K = np.where((v["level"] > v["delta"] + extra) & (v["delta_R"] > 0) & (improvement > 0),
                         evaluate(min_K_expression("population"), {**v, "delta": v["delta"] + extra}), np.nan)
    return _finish("population", T, bound, fail, v, min_M, min_K)


def _direct(v) -> RouteResult:
    T = THEOREM_3
    bound = evaluate(T.bound, v)
    fail = evaluate(T.failure_probability, v)
    ok_fail = fail <= v["level"]
    gain = v["delta_test_R"] + v["delta_erm"]
    scales = {**v, "c_M": v["eps_M"] * np.sqrt(v["M"]), "c_K": v["eps_K"] * np.sqrt(v["K"])}
    with np.errstate(divide="ignore", invalid="ignore"):
        min_M = np.where((gain - 2 * v["eps_K"] > 0) & ok_fail, evaluate(min_M_expression("direct"), scales), np.nan)
        min_K = np.where((gain - 2 * v["eps_M"] > 0) & ok_fail, evaluate(min_K_expression("direct"), scales), np.nan)
    return _finish("direct", T, bound, fail, v, min_M, min_K)


def _population_risk(v) -> RouteResult:
    """``R(f_new) <= R(f_old) - Delta_R - Delta_ERM + 2 eps_M`` (THEORY §5 steps 1-4)."""
    T = THEOREM_POPULATION_RISK
    bound = evaluate(T.bound, v)          # NaN without R_old
    fail = evaluate(T.failure_probability, v)
    improvement = evaluate(improvement_expression(POPULATION_RISK), v)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = v["delta_R"] + v["delta_erm"]
        min_M = np.where((gain > 0) & (fail <= v["level"]),
                         evaluate(min_M_expression(POPULATION_RISK), {**v, "c_M": v["eps_M"] * np.sqrt(v["M"])}),
                         np.nan)
    return _finish(POPULATION_RISK, T, bound, fail, v, min_M, np.nan, improvement=improvement)


def __getattr__(name: str):
    if name == "level":   # the symbol, as it was importable before (the functions' argument shadows it)
        return _route_expressions.level
    raise AttributeError(f"module 'bounds.routes._paper' has no attribute {name!r}")
