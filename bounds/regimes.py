"""The degenerate regime (``Delta_R -> 0``) and the deepest-model regime (THEORY §6).

As ``Delta_R -> 0`` the population route's failure probability
``delta + 2 exp(-K Delta_R^2 / (8 B^2))`` tends to ``delta + 2`` (vacuous) unless
``K >= 8 B^2 ln(2 / (level - delta)) / Delta_R^2``; the direct route does not depend on
``Delta_R``. :func:`degenerate_regime` reports, for one setup, which route certifies,
the smallest ``Delta_R`` at which the population route still certifies (the crossover),
and the ``Delta_R`` at which the two bounds are equal. Picking the route that certifies
after seeing the data is a choice, so "some route certifies" is the claim of
:attr:`~bounds.routes.RoutesReport.any_route` (the union of both routes' failure events),
and that is what :func:`degenerate_regime` and :func:`deepest_certified_depth` report.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds._statement import evaluate
from bounds.routes import Setup, evaluate_routes, improvement_expression, min_K_expression
from bounds.theorems import THEOREM_2


def failure_limit_expression() -> sp.Expr:
    """``lim_{Delta_R -> 0+}`` of Theorem 2's failure probability (``delta + 2``)."""
    return sp.limit(THEOREM_2.failure_probability, s.delta_R, 0, "+")


def delta_R_threshold_expressions() -> tuple[sp.Expr, sp.Expr]:
    """The two ``Delta_R`` thresholds of the population route, others held fixed.

    Returns ``(margin_threshold, failure_threshold)``: the route certifies iff
    ``Delta_R > margin_threshold`` (so that ``Delta_R/2 + Delta_ERM > 2 eps_M``) and
    ``Delta_R >= failure_threshold`` (so that the failure probability <= level).
    """
    margin = sp.solve(sp.Eq(improvement_expression("population"), 0), s.delta_R)[0]
    roots = sp.solve(sp.Eq(min_K_expression("population"), s.K), s.delta_R)
    failure = [r for r in roots if r.could_extract_minus_sign() is False][0]
    return margin, failure


@dataclasses.dataclass(frozen=True)
class DegenerateRegime:
    """Which route certifies one setup, and where the population route stops."""

    population_certified: bool
    direct_certified: bool
    delta_R_margin_threshold: float
    delta_R_failure_threshold: float
    delta_R_crossover: float
    delta_R_equal_bounds: float
    failure_limit: float
    summary: str
    any_certified: bool = False
    any_failure_probability: float = float("nan")

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                for k, v in dataclasses.asdict(self).items()}


def degenerate_regime(setup: Setup, level_value: float = 0.05) -> DegenerateRegime:
    """Analyse the ``Delta_R -> 0`` regime for a scalar ``setup`` at ``level_value``.

    ``delta_R_crossover`` is the smallest ``Delta_R`` above which the population route
    certifies (with ``M``, ``K`` and the rest fixed); below it only the direct route can.
    ``delta_R_equal_bounds`` is where both bounds coincide (the population bound is the
    smaller one above it).
    """
    rep = evaluate_routes(setup, level_value)
    v = {**setup.values(), "eps_M": rep.eps_M, "eps_K": rep.eps_K, "level": level_value}
    delta_eff = float(setup.delta) + float(v["delta_R_failure"])   # extra failure term acts as a larger delta
    margin_e, failure_e = delta_R_threshold_expressions()
    m_thr = float(evaluate(margin_e, v))
    f_thr = float(evaluate(failure_e, {**v, "delta": delta_eff})) if level_value > delta_eff else float("inf")
    crossover = max(m_thr, f_thr, 0.0)
    # the direct route of evaluate_routes: Delta_ERM relative to f~_pop stands in when delta_erm_S is absent (stated)
    erm_S = setup.delta_erm if setup.delta_erm_S is None else setup.delta_erm_S
    # L_old - dR/2 - dERM + 2 eps_M == L_old - dTR - dERM_S + 2 eps_M + 2 eps_K
    equal = 2 * (setup.delta_test_R + erm_S - setup.delta_erm - 2 * float(rep.eps_K))
    pop, dire = bool(rep.population.certified), bool(rep.direct.certified)
    any_ok, any_fail = bool(rep.any_route.certified), float(rep.any_route.failure_probability)
    which = {(True, True): "both routes certify", (True, False): "only the population route certifies",
             (False, True): "only the direct route certifies", (False, False): "neither route certifies"}
    some = (f"some route certifies (union of their failure events: {any_fail:.4g})" if any_ok
            else f"'some route certifies' is not certified ({rep.any_route.to_dict()['message']})")
    summary = (f"{which[(pop, dire)]}; {some}; the population route needs Delta_R > {crossover:.4g} "
               f"(margin: {m_thr:.4g}, failure probability: {f_thr:.4g}) at K={float(setup.K):g}; "
               f"as Delta_R -> 0 its failure probability -> {delta_eff + 2:.4g} (vacuous).")
    if setup.delta_erm_S is None:
        summary += (" The direct route (and delta_R_equal_bounds) uses Delta_ERM relative to f~_pop for the one "
                    "relative to f~_S: delta_erm_S is not given (optimistic whenever R_S(f~_S) < R_S(f~_pop)).")
    return DegenerateRegime(pop, dire, m_thr, f_thr, crossover, float(equal), delta_eff + 2.0, summary,
                            any_ok, any_fail)


def deepest_certified_depth(depths: Sequence[int], setups: Sequence[Setup], level_value: float = 0.05):
    """The depth beyond which neither route certifies an insertion (THEORY §6).

    Args:
        depths: increasing depths ``D_1 < D_2 < ...``.
        setups: the setup of the insertion into the depth-``D_i`` model.

    Returns:
        ``(deepest, certified)``: the largest ``D_i`` at which some route certifies
        (``routes.any``: the union of both routes' failure events at ``level_value``;
        ``None`` if none does) and the per-depth flags ``(population, direct)``.
    """
    if len(depths) != len(setups):
        raise ValueError(f"expected as many depths as setups, got {len(depths)} and {len(setups)}")
    flags, some = [], []
    for st in setups:
        rep = evaluate_routes(st, level_value)
        flags.append((bool(rep.population.certified), bool(rep.direct.certified)))
        some.append(bool(rep.any_route.certified))
    certified_depths = [D for D, ok in zip(depths, some) if ok]
    return (max(certified_depths) if certified_depths else None), flags
