"""Evaluate this project's tighter variants next to Paper A's routes (THEORY §6, **Choice**).

Everything is read from the theorem objects of :mod:`bounds.variants`: each event's
:class:`~bounds._statement.Tail` gives the numeric value of its slack (the formula is
written once), the theorem's bound and failure probability give the rest. The paper's
routes (:func:`bounds.routes.evaluate_routes`) are not touched; their bounds are only
decomposed into terms here, for the figure.

Levels (fixed before any data is seen). By default each variant's failure probability
equals the paper's direct route's, ``delta + delta'``: the uniform term keeps ``delta``
(with the empirical Rademacher value, ``delta - delta_mc`` for the uniform deviation and
``delta_mc`` for the Monte-Carlo error), the one-function tails split ``delta'`` equally
(population: three tails at ``delta'/3``; direct: two at ``delta'/2``). Each level may be
set instead (:class:`VariantInputs`). A variant needing an input that is not given
(sample variances for Bernstein, ``rad_hat`` for the empirical term) is skipped, and the
report says which key it needs.

``min_M``/``min_K`` of a variant: the ``M`` (``K``) at which its margin is 0 when every
cost on ``S`` (on ``T``) scales as ``1/sqrt(n)`` from its value here, the others fixed
(exact for Hoeffding tails and the closed-form term; for Bernstein tails and the
empirical term an approximation, with the variances and ``rad_hat sqrt(M)`` held fixed;
this project's **Choice**, stated in the notes).
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds import variants as var
from bounds._statement import evaluate
from bounds._validation import LEVEL, MISSING, Interval, InputError
from bounds.generalisation import rad_vec_closed_form
from bounds.routes import RouteResult, Setup, _check_all, _message, _py, costs
from bounds.theorems import THEOREM_2, THEOREM_3

_unit_open = Interval(0, 1, closed_low=False, closed_high=False)
_nonneg = Interval(0)

#: ``[variants]`` keys of the config and their allowed ranges (beyond these, variances are
#: at most ``B^2 n / (4 (n - 1))``, the largest unbiased sample variance of values in
#: ``[0, B]``, and ``delta_mc < delta``).
VARIANT_PARAMETERS: Mapping[str, Interval] = {
    "var_S_jump_pop": _nonneg, "var_T_new": _nonneg, "var_T_old": _nonneg, "var_T_jump_S": _nonneg,
    "rad_hat": _nonneg, "rad_hat_mc_error": _nonneg, "delta_mc": _unit_open,
    "delta_S_jump": _unit_open, "delta_T_new": _unit_open, "delta_T_old": _unit_open, "delta_T_jump": _unit_open,
}
#: variance key -> (symbol of the theorem objects, sample it is measured on)
_VARIANCES = {"var_S_jump_pop": ("V_S_jump", "M"), "var_T_new": ("V_T_new", "K"), "var_T_old": ("V_T_old", "K"),
              "var_T_jump_S": ("V_T_jump", "K")}
_TAIL_LEVELS = {"population": ("delta_S_jump", "delta_T_new", "delta_T_old"),
                "direct": ("delta_T_new", "delta_T_jump")}


@dataclasses.dataclass(frozen=True)
class VariantInputs:
    """What the variants need beyond a :class:`~bounds.routes.Setup` (config table ``[variants]``).

    Attributes:
        var_S_jump_pop: unbiased sample variance (``ddof=1``) of the losses of ``f~_pop`` on ``S``.
        var_T_new, var_T_old, var_T_jump_S: the same for ``f_new``, ``f_old``, ``f~_S`` on ``T``.
        rad_hat: Monte-Carlo value of the empirical vector Rademacher complexity on ``S``,
            ``(nu_V / M) E_s ||s^T phi||_F`` (e.g. ``numerics.estimators.rademacher_readout_mc``).
        rad_hat_mc_error: its McDiarmid error at level ``delta_mc``.
        delta_mc: the level at which ``rad_hat_mc_error`` was computed, in ``(0, delta)``.
        delta_S_jump, delta_T_new, delta_T_old, delta_T_jump: levels of the one-function
            tails (defaults in the module docstring).
    """

    var_S_jump_pop: object = None
    var_T_new: object = None
    var_T_old: object = None
    var_T_jump_S: object = None
    rad_hat: object = None
    rad_hat_mc_error: object = None
    delta_mc: object = None
    delta_S_jump: object = None
    delta_T_new: object = None
    delta_T_old: object = None
    delta_T_jump: object = None

    def validate(self, setup: Setup) -> "VariantInputs":
        """Check every given value (keys ``variants.<name>``).

        Raises:
            InputError: naming the key, the allowed range and the value.
        """
        for key, interval in VARIANT_PARAMETERS.items():
            if getattr(self, key) is not None:
                _check_all(f"variants.{key}", interval, getattr(self, key))
        for key, (_, size) in _VARIANCES.items():
            if getattr(self, key) is not None:
                n = np.asarray(getattr(setup, size), dtype=np.float64)
                cap = np.asarray(setup.B, dtype=np.float64) ** 2 * n / (4 * np.maximum(n - 1, 1e-300))
                _check_mask(f"variants.{key}", f"in [0, B^2 {size}/(4({size}-1))] (values in [0, B])",
                            getattr(self, key), np.asarray(getattr(self, key)) <= cap)
        given = [k for k in ("rad_hat", "rad_hat_mc_error", "delta_mc") if getattr(self, k) is not None]
        if given and len(given) < 3:
            missing = next(k for k in ("rad_hat", "rad_hat_mc_error", "delta_mc") if getattr(self, k) is None)
            raise InputError(f"variants.{missing}", "given together with variants.rad_hat, rad_hat_mc_error and "
                             "delta_mc (the level of the Monte-Carlo error)", MISSING)
        if self.delta_mc is not None:
            _check_mask("variants.delta_mc", "in (0, delta) (carved out of delta)", self.delta_mc,
                        np.asarray(self.delta_mc) < np.asarray(setup.delta))
        return self

    def missing(self, route: str, tail: str, uniform: str) -> list[str]:
        """The ``[variants]`` keys a variant needs and that are not given."""
        need = []
        if tail == "bernstein":
            need += ["var_T_new"] + (["var_S_jump_pop", "var_T_old"] if route == "population" else ["var_T_jump_S"])
        if uniform == "empirical":
            need += ["rad_hat", "rad_hat_mc_error", "delta_mc"]
        return [f"variants.{k}" for k in need if getattr(self, k) is None]

    def levels(self, route: str, setup: Setup) -> dict[str, np.ndarray]:
        """Levels of the route's one-function tails: given ones, else ``delta'`` split equally."""
        names = _TAIL_LEVELS[route]
        share = np.asarray(setup.delta_prime, dtype=np.float64) / len(names)
        return {k: np.asarray(share if getattr(self, k) is None else getattr(self, k), dtype=np.float64)
                for k in names}


def _check_mask(key, allowed, value, ok) -> None:
    ok = np.asarray(ok)
    if not np.all(ok):
        arr = np.asarray(value)
        raise InputError(key, allowed, arr[~ok].flat[0].item() if arr.ndim else value)


# ---------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True)
class VariantResult(RouteResult):
    """A :class:`~bounds.routes.RouteResult` of one variant, with its terms and event levels.

    ``terms``: the bound as ``L_test_old`` + gains (negative) + costs (positive), each a
    dict ``term, role, value`` (and ``event``, ``level`` for a cost); ``levels``: every
    event's probability.
    """

    terms: tuple = ()
    levels: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)
    origin: str = var.ORIGIN

    def to_dict(self) -> dict:
        out = {f.name: _py(getattr(self, f.name)) for f in dataclasses.fields(RouteResult)}
        out["message"] = _message(self)
        out.update(origin=self.origin, terms=[{k: _py(x) if k in ("value", "level") else x for k, x in t.items()}
                                              for t in self.terms],
                   levels={k: _py(x) for k, x in self.levels.items()})
        return out


@dataclasses.dataclass(frozen=True)
class VariantsReport:
    """Every evaluable variant on one setup, the skipped ones, and the paper routes' terms."""

    level: float
    variants: Mapping[str, VariantResult]
    skipped: Mapping[str, str]
    paper_terms: Mapping[str, tuple]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        terms = lambda ts: [{k: _py(x) if k in ("value", "level") else x for k, x in t.items()} for t in ts]  # noqa
        return {"level": self.level, "routes": {k: r.to_dict() for k, r in self.variants.items()},
                "skipped": dict(self.skipped), "paper_terms": {k: terms(v) for k, v in self.paper_terms.items()},
                "notes": list(self.notes)}


# ---------------------------------------------------------------------------- terms
def bound_terms(theorem, values: Mapping[str, object]) -> tuple[dict, ...]:
    """The bound of ``theorem`` split into ``L_test_old``, gains and costs, evaluated at ``values``.

    Each entry: ``term`` (its sympy text), ``role`` (reference / gain / cost), ``value``;
    a cost whose symbol is the slack of an event's :class:`~bounds._statement.Tail` also
    names the ``event`` and its ``level``.

    Example:
        >>> from bounds.theorems import THEOREM_3
        >>> vals = dict(L_test_old=1.0, delta_test_R=0.2, delta_erm=0.1, eps_M=0.01, eps_K=0.02)
        >>> [(t["term"], t["role"], round(float(t["value"]), 6)) for t in bound_terms(THEOREM_3, vals)]
        [('L_test_old', 'reference', 1.0), ('-delta_erm', 'gain', -0.1), ('-delta_test_R', 'gain', -0.2), ('2*eps_K', 'cost', 0.04), ('2*eps_M', 'cost', 0.02)]
    """
    by_symbol = {e.tail.symbol: e for e in theorem.events if e.tail is not None}
    order = {"reference": 0, "gain": 1, "cost": 2}
    out = []
    for term in sp.Add.make_args(sp.expand(theorem.bound)):
        coeff, rest = term.as_coeff_Mul()
        role = "reference" if term == s.L_test_old else ("gain" if coeff < 0 else "cost")
        entry = {"term": str(term), "role": role, "value": evaluate(term, values)}
        ev = by_symbol.get(rest)
        if ev is not None and role == "cost":
            entry.update(event=ev.name, level=evaluate(ev.probability, values))
        out.append(entry)
    return tuple(sorted(out, key=lambda t: (order[t["role"]], t["term"].lstrip("-"))))


def _paper_terms(setup: Setup) -> dict[str, tuple]:
    eps_M, eps_K = costs(setup)
    v = {**setup.values(), "eps_M": eps_M, "eps_K": eps_K}
    v_dir = dict(v)
    if setup.delta_erm_S is not None:
        v_dir["delta_erm"] = np.asarray(setup.delta_erm_S, dtype=np.float64)
    return {"population_route": bound_terms(THEOREM_2, v), "direct_route": bound_terms(THEOREM_3, v_dir)}


# ---------------------------------------------------------------------------- evaluation
def evaluate_variants(setup: Setup, level: float = 0.05, inputs: VariantInputs | None = None, *,
                      validate: bool = True) -> VariantsReport:
    """Every THEORY §6 variant whose inputs are given, on ``setup`` at failure ``level``.

    Args:
        setup: a :class:`~bounds.routes.Setup` (fields may be numpy arrays).
        level: the largest acceptable failure probability, in (0, 1].
        inputs: variances, empirical Rademacher value, levels (:class:`VariantInputs`).
        validate: check every value first.

    Returns:
        A :class:`VariantsReport`: ``variants`` keyed by name (e.g.
        ``population_tight_hoeffding``), each a :class:`VariantResult`.

    Raises:
        InputError: a value is outside its allowed range (the key is named).

    Example:
        >>> st = Setup(L_test_old=0.62, delta_R=0.09, delta_erm=0.004, delta_test_R=0.085,
        ...            M=2e5, K=1e5, delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5,
        ...            family="readout", block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
        >>> rep = evaluate_variants(st, level=0.1)
        >>> sorted(rep.variants), round(float(rep.variants["direct_tight_hoeffding"].bound), 6)
        (['direct_tight_hoeffding', 'population_tight_hoeffding'], 0.744374)
    """
    level = LEVEL.check("level", level)
    inputs = VariantInputs() if inputs is None else inputs
    if validate:
        setup.validate()
        inputs.validate(setup)
    results, skipped = {}, {}
    for name, (route, tail, uniform) in var.VARIANT_SPECS.items():
        missing = inputs.missing(route, tail, uniform)
        if missing:
            skipped[name] = "needs " + ", ".join(missing)
            continue
        results[name] = evaluate_chain(var.VARIANTS[name], route, variant_values(setup, inputs, route, uniform, level))
    return VariantsReport(level, results, skipped, _paper_terms(setup), _notes(setup, skipped))


def _values(base: dict, setup: Setup, inputs: VariantInputs, route: str, uniform: str) -> dict:
    v = {**base, **inputs.levels(route, setup)}
    v.update({sym: np.asarray(getattr(inputs, key), dtype=np.float64)
              for key, (sym, _) in _VARIANCES.items() if getattr(inputs, key) is not None})
    if uniform == "empirical":
        dmc = np.asarray(inputs.delta_mc, dtype=np.float64)
        v.update(delta_mc=dmc, delta=base["delta"] - dmc, rad_S_mc=np.asarray(inputs.rad_hat, dtype=np.float64),
                 rad_S_mc_err=np.asarray(inputs.rad_hat_mc_error, dtype=np.float64))
    if route == "direct" and setup.delta_erm_S is not None:
        v["delta_erm"] = np.asarray(setup.delta_erm_S, dtype=np.float64)
    return v


def variant_values(setup: Setup, inputs: VariantInputs, route: str, uniform: str, level: float) -> dict:
    """Every symbol value a variant of ``route`` needs (before its tails are evaluated).

    Levels follow the module docstring; ``delta`` is ``delta - delta_mc`` when ``uniform``
    is "empirical". Used by :func:`evaluate_variants` and by studies that evaluate a chain
    of their own (e.g. a deliberately wrong one, to show a test has power).
    """
    base = {**setup.values(), "level": np.float64(level)}
    base["rad_M"] = evaluate(rad_vec_closed_form(setup.family, s.M), base)
    return _values(base, setup, inputs, route, uniform)


def evaluate_chain(theorem, route: str, v: dict) -> VariantResult:
    """Evaluate a chain whose costs are slacks of events with a :class:`~bounds._statement.Tail`.

    Args:
        theorem: a variant of :mod:`bounds.variants` (or a transformed one).
        route: "population" (adds ``delta_R_failure``) or "direct".
        v: symbol values (:func:`variant_values`), updated with the tails' values.
    """
    needed = theorem.bound.free_symbols
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for ev in theorem.events:   # the slack values, from the tails' formulas
            if ev.tail is not None and ev.tail.symbol in needed:
                v[ev.tail.symbol.name] = evaluate(ev.tail.deviation, v)
        bound = evaluate(theorem.bound, v)
        fail = evaluate(theorem.failure_probability, v) + (v["delta_R_failure"] if route == "population" else 0.0)
    terms = bound_terms(theorem, v)
    shape = np.broadcast_shapes(*(np.shape(x) for x in v.values()))
    bound, fail = (np.broadcast_to(np.asarray(a, dtype=np.float64), shape) for a in (bound, fail))
    return _result(theorem, route, bound, fail, v, terms, shape)


def _result(theorem, route, bound, fail, v, terms, shape) -> VariantResult:
    lvl = v["level"] * (1 + 1e-12)   # the levels' float sum (e.g. delta + 3 delta'/3) may round up
    improvement = v["L_test_old"] - bound
    sample = {e.name: e.sample for e in theorem.events}
    cost = {"S": 0.0, "T": 0.0}
    for t in terms:   # every cost of a variant is the slack of an event on S or on T
        if t["role"] == "cost":
            cost[sample[t["event"]]] = cost[sample[t["event"]]] + t["value"]
    ok = fail <= lvl
    with np.errstate(divide="ignore", invalid="ignore"):   # Bernstein at n = 1: infinite costs
        avail = improvement + cost["S"] + cost["T"]
        min_M = np.where(ok & (avail - cost["T"] > 0), v["M"] * (cost["S"] / (avail - cost["T"])) ** 2, np.nan)
        min_K = np.where(ok & (avail - cost["S"] > 0), v["K"] * (cost["T"] / (avail - cost["S"])) ** 2, np.nan)
    levels = {e.name: evaluate(e.probability, v) for e in theorem.events}
    return VariantResult(
        route=route, theorem=theorem.name, bound=bound, failure_probability=fail, improvement=improvement,
        certified=(improvement > 0) & (fail <= lvl), margin_shortfall=np.maximum(0.0, -improvement),
        failure_excess=np.maximum(0.0, fail - lvl), vacuous=fail >= 1.0,
        min_M=np.broadcast_to(min_M, shape), min_K=np.broadcast_to(min_K, shape), terms=terms, levels=levels)


def _notes(setup: Setup, skipped: Mapping[str, str]) -> tuple[str, ...]:
    notes = ["variants (THEORY §6) are this project's Choice, not Paper A's statements: one-function tails for "
             "premises about a function independent of the sample (f~_pop on S; f_new, f_old, f~_S on T), a "
             "supremum only for f_new / f~_S on S.",
             "the population variant needs f_old and f~_pop fixed before S is drawn (reference trained on its own "
             "sample; G and beta estimated on an independent sample).",
             "variants' min_M/min_K scale every cost on S (on T) as 1/sqrt(n) from its value here (exact for "
             "Hoeffding and closed-form terms, approximate for Bernstein and the empirical Rademacher term)."]
    if np.any(np.asarray(setup.n_grid) > 1):
        notes.append("cap grid: the uniform term and the tail of f~_pop on S are paid over the n_grid caps.")
    if skipped:
        notes.append("skipped variants: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()))
    return tuple(notes)
