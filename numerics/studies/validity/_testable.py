"""Can a check fail? The truth's tolerance beside the bound term each event tests (issue 34, item 3).

A validity study on a sampled task (MNIST-1D: no exact teacher) checks population risks against a
*truth* that is itself a Monte-Carlo mean over the ``check_population`` sample. A premise or
conclusion on population risks therefore counts as violated only when its gap is below
``-tolerance``:

* **paired** (records holding ``truth_cov``, :func:`numerics.studies.validity._draws._check_risks`):
  ``tolerance = z se(c^T R)``, ``c`` the coefficients of the truth's risks in the relation
  (``lhs - rhs`` is linear in them), ``se(c^T R) = sqrt(c^T cov c / n)`` with ``cov`` the
  covariance of the per-sample vector ``(l_old, l_new - l_old, ...)`` on the one shared truth
  sample. A relation about a true *difference* ``R(f_new) - R(f_old)`` gets the standard error of
  the paired differences ``l(f_new) - l(f_old)``, not of two unpaired risk estimates;
* **unpaired** (older records): ``truth_mc_tolerance = z (se_1 + se_2)``
  (:func:`numerics.sampled_task.estimate_tolerance`).

``z`` = :data:`numerics.sampled_task.TRUTH_Z` = 3.29, the two-sided normal quantile at 1e-3
(**Choice**: a truth error beyond it has probability <= 1e-3 per relation, by the CLT); the
tolerance's level is stated in ``validity.json`` (``testability.level``).

The *term* an event tests is the premise's allowance: its slack with every risk set to 0 (the
``eps_M``, ``eps_K``, ``t_T``, ``U_S`` of the chain; :func:`numerics.studies.validity._routes.premise_allowances`);
for ``E_R`` (a lower confidence bound on ``Delta_R``) the confidence width ``delta_R_hat - delta_R``.
Where the tolerance is at least that term at some draw, a violation of the event by the term's
whole size cannot be seen there: the event is reported :data:`NOT_TESTABLE` (with both numbers),
never "0 failures". Exact checks (the supremum over the class from population moments of an
exact teacher) apply the float tolerance only and are testable.
"""
from __future__ import annotations

import functools
import math
from typing import Mapping, Sequence

import numpy as np
import sympy as sp

__all__ = ["NOT_TESTABLE", "TESTABLE", "relation_tolerance", "testability_entry", "truth_se", "truth_vector",
           "verdict"]

TESTABLE = "testable"
NOT_TESTABLE = "not testable at this truth size"

#: A truth value of a record -> its coefficients in the basis ``(l_old, d_new, d_jump_S, d_jump_pop, d_localised)``
#: of ``truth_cov`` (``D_new``: the localised f_new's difference; ``D_pop``: ``f~_pop``'s).
_VECTORS: Mapping[str, Mapping[int, float]] = {
    "R_old": {0: 1.0}, "R_new": {0: 1.0, 1: 1.0}, "R_jump_S": {0: 1.0, 2: 1.0}, "R_jump_pop": {0: 1.0, 3: 1.0},
    "D_pop": {3: 1.0}, "D_new": {4: 1.0}, "delta_R_true": {3: -1.0}}
#: Symbols whose value is the truth's (a Monte-Carlo estimate on a sampled task).
TRUTH_SYMBOLS = frozenset(("R_old", "R_new", "R_jump", "D_new", "D_pop"))


def truth_vector(coefficients: Mapping[str, float], size: int) -> np.ndarray:
    """``c`` in the basis of ``truth_cov`` for ``sum coefficients[name] * value(name)`` (record names).

    Raises:
        KeyError: a name that is not a truth value, or one outside the record's basis.
    """
    c = np.zeros(size)
    for name, a in coefficients.items():
        for i, w in _VECTORS[name].items():
            if i >= size:
                raise KeyError(f"{name} needs basis entry {i}, the record has {size}")
            c[i] += a * w
    return c


def truth_se(values: Mapping, coefficients: Mapping[str, float]) -> float:
    """Standard error of ``sum coefficients[name] * value(name)`` on the paired truth sample of a record."""
    cov = np.asarray(values["truth_cov"], dtype=np.float64)
    c = truth_vector(coefficients, cov.shape[0])
    return float(math.sqrt(max(0.0, float(c @ cov @ c)) / float(values["truth_n"])))


@functools.lru_cache(maxsize=None)
def _derivatives(rel) -> tuple:
    expr = rel.lhs - rel.rhs
    return tuple((x.name, sp.diff(expr, x)) for x in sorted(expr.free_symbols, key=lambda x: x.name)
                 if x.name in TRUTH_SYMBOLS)


def relation_tolerance(rel, vals: Mapping, binding: Mapping[str, str] | None = None) -> float:
    """The truth's tolerance for relation ``rel`` at symbol values ``vals`` (module docstring); 0 when it holds no
    truth symbol or the truth is exact. ``binding``: symbol -> the record's value name (``R_jump`` -> ``R_jump_pop``)."""
    from bounds._statement import evaluate
    from numerics.sampled_task import TRUTH_Z

    ders = _derivatives(rel)
    if not ders:
        return 0.0
    if "truth_cov" not in vals:
        return float(vals.get("truth_mc_tolerance", 0.0))
    binding = binding or {}
    coef = {}
    for name, d in ders:
        rec_name = binding.get(name, name)
        coef[rec_name] = coef.get(rec_name, 0.0) + float(evaluate(d, vals))
    return TRUTH_Z * truth_se(vals, coef)


def verdict(tolerance: float | None, term: float | None) -> str | None:
    """:data:`TESTABLE` when the tolerance is below the term, :data:`NOT_TESTABLE` otherwise (``None``: no term)."""
    if term is None or tolerance is None:
        return None
    return TESTABLE if tolerance < term else NOT_TESTABLE


def testability_entry(pairs: Sequence[tuple[float, float | None]]) -> dict:
    """Over draws ``(tolerance, term)``: the largest tolerance, the smallest term, the draws where it is testable, and
    the verdict -- :data:`TESTABLE` only when the tolerance is below the term at every draw."""
    tols = [float(t) for t, _ in pairs]
    terms = [float(m) for _, m in pairs if m is not None]
    ok = sum(1 for t, m in pairs if m is not None and t < m)
    out = {"tolerance_max": max(tols, default=0.0), "tolerance_median": float(np.median(tols)) if tols else 0.0,
           "smallest_term": min(terms, default=None), "term_median": float(np.median(terms)) if terms else None,
           "testable_draws": ok, "draws": len(pairs),
           # the tolerance falls like 1/sqrt(n): a truth (ratio_max)^2 times larger makes the check testable at every draw
           "tolerance_over_term_max": max((float(t) / float(m) for t, m in pairs if m is not None and m > 0),
                                          default=None)}
    if len(terms) < len(pairs):
        out["verdict"] = TESTABLE if out["tolerance_max"] == 0 else "no term to compare (tolerance only)"
    else:
        out["verdict"] = TESTABLE if ok == len(pairs) and pairs else NOT_TESTABLE
    out["testable"] = out["verdict"] == TESTABLE
    return out
