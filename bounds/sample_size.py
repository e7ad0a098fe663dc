"""``M_needed``: the smallest training-sample size at which a route would certify (**Choice**).

Every statistic measured on the draw is held at its measured value and only ``M`` (the size
of ``S``) is varied: the route's own vectorised bound -- the one object it is evaluated from
(for the localised routes :func:`bounds.localised_routes.evaluate_localised`, so a change of
a constant there changes ``M_needed`` too; no formula is written twice) -- is evaluated on a
geometric grid of ``M`` and the grid refined around the first size from which the route
certifies at every larger grid size (:func:`smallest_certifying`). Held (**Choice**):
``Delta_train = -D_S(V_new)``, ``Delta_ERM_pop``, the sample variances, ``K``, every level,
the cap and the constants; what scales with ``M`` is then exactly what the theorem's tails
on ``S`` say (``U_S``: ``e_G``'s Bernstein form ``~ 1/M`` and ``1/sqrt(M)``, the Rademacher
and McDiarmid terms ``~ 1/sqrt(M)``; ``t_S(d_pop)``: ``1/sqrt(M)`` and ``1/(M - 1)``).
:func:`term_dependence` states, per additive term of each cost, its value at the measured
``M``, its local exponent ``d log(term) / d log(M)`` (finite difference on the same
evaluator) and its value at ``M_needed``. A route that does not certify at ``M_MAX`` says so
(``M_needed = None``) with the reason: the terms that do not shrink with ``M`` (``t_T(d_new)``
on ``T``) against the gains, or a failure probability above the level.

Paper A's two routes keep their closed-form ``min_M`` (:mod:`bounds.routes`): :func:`paper_sizes` only reads it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping

import numpy as np

__all__ = ["M_MAX", "M_MIN", "SizeNeeded", "localised_sizes", "paper_sizes", "size_ratio", "smallest_certifying",
           "term_dependence"]

#: The grid of ``M`` searched (``M_needed`` above ``M_MAX`` is reported as ``None``, with the reason).
M_MIN, M_MAX = 2.0, 1e15
_POINTS, _ROUNDS, _STEP = 257, 3, 1.01


def smallest_certifying(certifies: Callable[[np.ndarray], Mapping[str, np.ndarray]], names, shape=(), *,
                        lo: float = M_MIN, hi: float = M_MAX, points: int = _POINTS, rounds: int = _ROUNDS) -> dict:
    """``{name: M}``: the smallest grid ``M`` from which ``certifies(M)[name]`` holds at every larger grid ``M``.

    Args:
        certifies: ``M`` (an array broadcasting against the batch ``shape``) -> ``{name: bool array}``
            (vectorised: one call evaluates a whole grid).
        names: the routes to solve. shape: the batch shape of the setup (``()`` for one setup).
        lo, hi: the range searched; points, rounds: the grid and its refinements.

    Returns:
        ``{name: float array of shape`` ``shape``\\ ``}``: ``ceil`` of the size found, ``nan`` where no size up
        to ``hi`` certifies (``lo`` where ``lo`` already does).

    Example:
        >>> out = smallest_certifying(lambda M: {"r": 0.1 - 3.0 / np.sqrt(M) > 0}, ["r"])
        >>> int(out["r"]), bool(0.1 - 3.0 / np.sqrt(900.0) > 0), bool(0.1 - 3.0 / np.sqrt(901.0) > 0)
        (901, False, True)
    """
    names, nd = list(names), len(shape)
    t = np.linspace(0.0, 1.0, points).reshape((points,) + (1,) * (nd + 1))
    grid = (lo * (hi / lo) ** t)[:, 0]                        # (P, 1...) : one grid for every route
    ok = {n: np.broadcast_to(certifies(grid)[n], (points,) + tuple(shape)) for n in names}
    low, high, never = {}, {}, {}
    for n in names:
        tail = np.flip(np.logical_and.accumulate(np.flip(ok[n], 0), 0), 0)   # certified at every larger grid M
        k = np.argmax(tail, axis=0)
        never[n] = ~tail[-1]
        g = np.broadcast_to(grid, ok[n].shape)
        high[n] = np.take_along_axis(g, k[None], 0)[0]
        low[n] = np.where(k > 0, np.take_along_axis(g, np.maximum(k - 1, 0)[None], 0)[0], high[n])
    for _ in range(rounds):
        lo_s = np.stack([low[n] for n in names])              # (R, *shape)
        hi_s = np.stack([high[n] for n in names])
        M = lo_s * (hi_s / lo_s) ** t                         # (P, R, *shape)
        res = certifies(M)
        for r, n in enumerate(names):
            okr = np.broadcast_to(res[n], M.shape)[:, r]
            tail = np.flip(np.logical_and.accumulate(np.flip(okr, 0), 0), 0)
            k = np.argmax(tail, axis=0)
            Mr = M[:, r]
            found = tail.any(axis=0)
            new_hi = np.where(found, np.take_along_axis(Mr, k[None], 0)[0], high[n])
            low[n] = np.where(found & (k > 0), np.take_along_axis(Mr, np.maximum(k - 1, 0)[None], 0)[0], low[n])
            high[n] = new_hi
    return {n: np.where(never[n], np.nan, np.ceil(high[n] * (1 - 1e-12))) for n in names}


@dataclasses.dataclass(frozen=True)
class SizeNeeded:
    """``M_needed`` of one route (module docstring): ``None`` with ``reason`` when no ``M`` up to ``M_MAX`` certifies."""

    route: str
    M: float
    M_needed: float | None
    certified_at_M: bool
    reason: str
    terms: tuple = ()
    improvement_at_M_max: float | None = None
    method: str = "solver"

    def to_dict(self) -> dict:
        from plumbing.io import to_plain

        return to_plain(dataclasses.asdict(self))


def _scalar(x):
    v = float(np.asarray(x).reshape(-1)[0]) if np.size(x) else math.nan
    return v if math.isfinite(v) else None


def _additive(expr) -> list:
    """The additive terms of ``expr``, products distributed over sums (logs and roots kept whole)."""
    import sympy as sp

    if isinstance(expr, sp.Add):
        return [t for a in expr.args for t in _additive(a)]
    if isinstance(expr, sp.Mul):
        sums = [a for a in expr.args if isinstance(a, sp.Add)]
        if sums:
            rest = sp.Mul(*[a for a in expr.args if a is not sums[0]])
            return [t for a in sums[0].args for t in _additive(rest * a)]
    return [expr]


def term_dependence(theorem, values_at: Callable[[float], Mapping], M: float, M_needed: float | None) -> list[dict]:
    """Per additive term of the bound's costs: value at ``M``, local exponent in ``M``, value at ``M_needed``.

    ``values_at(M')`` gives the route's symbol values at size ``M'`` (every other statistic held);
    a cost whose event has a :class:`~bounds._statement.Tail` is split into the additive terms of
    its deviation; the exponent is ``log(t(1.01 M)/t(M)) / log(1.01)`` on the same evaluator.
    """
    import sympy as sp

    from bounds._route_terms import bound_terms
    from bounds._statement import evaluate

    v0, v1 = values_at(M), values_at(M * _STEP)
    vn = values_at(M_needed) if M_needed is not None else None
    tails = {e.name: e.tail for e in theorem.events if e.tail is not None}
    out = []
    for t in bound_terms(theorem, v0):
        ev = t.get("event")
        parts = _additive(tails[ev].deviation) if ev in tails else [sp.sympify(t["term"])]
        for p in parts:
            if not p.free_symbols:
                continue
            a, b = _scalar(evaluate(p, v0)), _scalar(evaluate(p, v1))
            expo = 0.0 if not a or b is None or a == b else math.log(b / a) / math.log(_STEP)
            out.append({"term": str(p), "of": t["term"], "role": t["role"], "event": ev, "value": a,
                        "M_exponent": round(expo, 4),
                        "value_at_M_needed": None if vn is None else _scalar(evaluate(p, vn)),
                        "depends_on_M": abs(expo) > 1e-6})
    return out


def _reason(res_M, res_max, level: float, route) -> str:
    if _scalar(res_max.failure_probability) is not None and _scalar(res_max.failure_probability) > level:
        return f"failure probability {_scalar(res_max.failure_probability):.4g} above the level {level:g}: no M helps"
    shrink = [t for t in res_M.terms if t["role"] == "cost"]
    gains = -sum(_scalar(t["value"]) or 0.0 for t in res_M.terms if t["role"] == "gain")   # the bound subtracts them
    at_max = {t["term"]: _scalar(t["value"]) for t in res_max.terms}
    fixed = [f"{t['term']} = {at_max.get(t['term']):.4g}" for t in shrink
             if at_max.get(t["term"]) is not None and _scalar(t["value"]) and
             abs(at_max[t["term"]] - _scalar(t["value"])) <= 1e-9 * abs(_scalar(t["value"]))]
    return (f"not certified even at M = {M_MAX:.0e}: the bound stays above L_test_old by "
            f"{-_scalar(res_max.improvement):.4g}; the terms that do not shrink with M ({', '.join(fixed) or 'none'}) "
            f"against the gains held at their measured values ({gains:.4g})")


def localised_sizes(setup, level: float, names=None, *, terms: bool = True) -> dict[str, SizeNeeded]:
    """``M_needed`` of every localised route of ``setup`` (or of ``names``) by :func:`smallest_certifying`.

    The evaluator is :func:`bounds.localised_routes.evaluate_localised` at ``setup`` with only ``M``
    replaced (``validate=False``: the measured variances stay as measured).

    Example:
        >>> from bounds.localised_routes import LocalisedSetup
        >>> st = LocalisedSetup(M=20000, K=20000, L_test_old=0.03, B=8.1, L_loss=1.0, L_top=1.0, d=8, r=8,
        ...                     rho_phi=3.0, nu_V=0.006, delta_train=6e-5, var_T_dnew=6.4e-7, kappa=2.0,
        ...                     b_xi=0.5, A_norm=1.0, exact_applies=True)
        >>> out = localised_sizes(st, 0.05, ["localised_train_exact_bernstein"], terms=False)
        >>> s = out["localised_train_exact_bernstein"]
        >>> s.M_needed is None or s.M_needed > 20000, s.certified_at_M
        (True, False)
    """
    from bounds.localised import LOCALISED
    from bounds.localised_routes import evaluate_localised

    def report(M):
        return evaluate_localised(dataclasses.replace(setup, M=M), level, validate=False)

    base = report(setup.M)
    names = [n for n in (names or base.routes) if n in base.routes]
    shape = np.broadcast_shapes(*(np.shape(base.routes[n].bound) for n in names)) if names else ()
    found = smallest_certifying(lambda M: {n: r.certified for n, r in report(M).routes.items()}, names, shape)
    at_max = report(np.float64(M_MAX)).routes
    out = {}
    for n in names:
        need = _scalar(found[n]) if shape == () else None
        res = base.routes[n]
        why = ("certifies at the measured M" if bool(np.all(res.certified)) else
               "certifies at a larger M (every statistic held at its measured value)") if need is not None else \
            _reason(res, at_max[n], level, n)
        deps = ()
        if terms and shape == ():
            deps = tuple(term_dependence(LOCALISED[n], lambda m, n=n: report(np.float64(m)).routes[n].values,
                                         float(setup.M), need))
        out[n] = SizeNeeded(n, float(np.asarray(setup.M).reshape(-1)[0]), need if shape == () else found[n],
                            bool(np.all(res.certified)), why, deps, _scalar(at_max[n].improvement))
    return out


def paper_sizes(report) -> dict[str, SizeNeeded]:
    """Paper A's routes: their closed-form ``min_M`` (:func:`bounds.routes.evaluate_routes`), read as ``M_needed``."""
    out = {}
    for name, r in (("population", report.population), ("direct", report.direct)):
        need = _scalar(r.min_M)
        why = ("closed form of bounds.routes (eps_M = c_M / sqrt(M), the gains held)" if need is not None else
               "no finite M certifies at these gains (bounds.routes: the gain minus the M-free costs is not positive "
               "or the failure probability exceeds the level)")
        out[name] = SizeNeeded(name, math.nan, None if need is None else float(math.ceil(need)),
                               bool(np.all(r.certified)), why, method="closed_form")
    return out


def size_ratio(M_needed, n_needed) -> float | None:
    """``M_needed / n_needed_improvable`` (``None`` when either is missing or ``n_needed`` is not positive)."""
    if M_needed is None or n_needed is None or not n_needed > 0:
        return None
    return float(M_needed) / float(n_needed)
