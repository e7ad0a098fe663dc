"""The localised certificates (THEORY §6b, **Choice**) and the held-out paired test in the validity study.

Per draw (:func:`localised_records`): each route ``localised_<chain>_<uniform>_<tail>`` of
:func:`numerics.studies.run._localised_draw.certify_localised` becomes a record route with its
verdict and every value of its chain, the risks of the localised ``f_new`` included: ``D_new =
R(f_new) - R(f_old)`` and ``D_pop = R(f~_pop) - R(f_old)`` by the truth, ``D_S`` on ``S``,
``L_test(f_new)`` and ``DT_new`` on ``T``. The study then checks each route like the others
(:data:`numerics.studies.validity._routes.LOCALISED_ROUTE_SPECS`): its conclusion, and each event.
``E_U`` -- ``sup_{||V|| <= nu} (D - D_S)(V) > U_S`` -- is checked *exactly* in case (c)'s class
(readout at the top, squared loss): ``(D - D_S)(V) = (R - R_S)(V) - (R - R_S)(0)`` is the
difference quadratic of the population moments of the exact teacher and the moments of ``S``,
its supremum over the ball the trust-region problem (:func:`numerics.estimators.sup_deviation`
minus its constant). Elsewhere ``E_U`` is checked at the chain's function ``f_new`` only: a
necessary condition. The truth's own Monte-Carlo error (``truth.moment_error``) applies.

``routes.heldout_paired`` (the baseline): certified per draw, violated when the true
``R(f_new) - R(f_old)`` exceeds its bound (:func:`heldout_routes`); :func:`localised_comparison`
sets the route fixed before the data (``[localised] use``) beside the paper's routes and the baseline.
"""
from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["E_U_deviation", "gap_summary", "heldout_routes", "localised_comparison", "localised_records"]


def E_U_deviation(truth, moments_S, A, nu: float) -> dict:
    """``{"upper": sup_{||V||_F <= nu} (D - D_S)(V), "nu": nu, "truth_error": ...}`` exactly (docstring of ``numerics.studies.validity._localised``).

    ``truth_error`` (when the truth has its two half-sample moments ``a, b``): the truth's own
    Monte-Carlo error on this ball, ``sup_{||V|| <= nu} |(D_a - D_b)(V)| / 2`` -- the scale of the
    supremum checked here, on the localised ball (the truth's ``moment_error`` is on the paper's cap,
    in risk units, far larger than ``U_S``); a weakened ``U_S`` counts as failed only beyond it.
    """
    from numerics.estimators import sup_deviation

    s = sup_deviation(truth.moments, moments_S, A, nu)
    c0 = truth.moments.m0 - moments_S.m0          # (R - R_S)(0): the constant of the difference quadratic
    out = {"upper": s["upper"] - c0, "nu": nu}
    if len(getattr(truth, "halves", ())) == 2:
        a, b = truth.halves
        h = sup_deviation(a, b, A, nu)
        out["truth_error"] = max(h["upper"] - (a.m0 - b.m0), h["lower"] + (a.m0 - b.m0)) / 2
    return out


#: The risk symbols of the localised chains: a record gets them from the truth and the measurement.
_RISKS = frozenset(("DT_new", "D_new", "DS_new", "DS_pop", "D_pop", "L_test_new", "L_test_old"))


def _chain_symbols(theorem) -> set[str]:
    exprs = [theorem.conclusion, theorem.failure_probability] + [p.relation for p in theorem.premises]
    exprs += [e.probability for e in theorem.events] + [e.tail.deviation for e in theorem.events if e.tail]
    return {x.name for e in exprs for x in e.free_symbols} - _RISKS


def localised_records(loc, risks: Mapping[str, float], L_test_old: float) -> dict:
    """Record routes of a draw's localised certificate; ``risks``: the truth's ``R_old``, ``R_new``, ``R_jump_pop``."""
    from bounds.localised import LOCALISED

    m = loc.measure
    if m is None:
        return {}
    D_new = risks["R_new"] - risks["R_old"]
    own = {"L_test_new": m.L_test_new, "L_test_old": L_test_old, "DT_new": m.mean_T_dnew, "D_new": D_new,
           "DS_new": m.D_S[m.returned], "DS_pop": m.D_S["jump_pop"], "D_pop": risks["R_jump_pop"] - risks["R_old"]}
    out = {}
    for name, r in loc.report.routes.items():
        v = r.values
        values = {k: float(v[k]) for k in _chain_symbols(LOCALISED[name]) if k in v}
        out[name] = {"bound": float(r.bound), "failure_probability": float(r.failure_probability),
                     "certified": bool(r.certified), "improvement": float(r.improvement), "values": {**values, **own}}
        g = ((loc.gap or {}).get("routes") or {}).get(name)
        if g is not None:       # the smallest certifying M, the scan's n_needed_improvable, their ratio
            out[name].update(M_needed=g["M_needed"], n_needed_improvable=g["n_needed_improvable"], ratio=g["ratio"])
    h = loc.heldout
    out["heldout_paired"] = {"bound": h["bound"], "failure_probability": h["failure_probability"],
                             "certified": h["certified"], "improvement": h["improvement"], "D_new": D_new,
                             "mean_T": float(m.mean_T_dnew)}
    return out


def heldout_routes(records: Sequence[Mapping], level: float) -> dict:
    """``routes.heldout_paired`` of ``validity.json`` (empty when a record lacks it)."""
    from numerics.studies.validity._stats import route_entry

    if not records or not all("heldout_paired" in r["routes"] for r in records):
        return {}
    from numerics.studies.validity._power import truth_tolerance
    from numerics.studies.validity._testable import testability_entry

    hs = [r["routes"]["heldout_paired"] for r in records]
    # a sampled task's truth is an estimate: violated only beyond its Monte-Carlo error (numerics.sampled_task),
    # paired (z se of l(f_new) - l(f_old) on the one truth sample) where the record holds truth_cov
    tol = [max(1e-12 * max(1.0, abs(h["bound"])), _paired_D_new_tolerance(r["values"], truth_tolerance))
           for h, r in zip(hs, records)]
    entry = route_entry([h["certified"] for h in hs], [h["D_new"] > h["bound"] + t for h, t in zip(hs, tol)],
                        [min(1.0, h["failure_probability"]) for h in hs], level, ["H_T_heldout"])
    entry.update(bounds_on="R(f_new) - R(f_old) (the localised f_new; violated when the truth exceeds it)",
                 statement="Choice: the held-out paired test on T (what a user would do without the theory)")
    terms = [_mean_T(r, h) for h, r in zip(hs, records)]
    entry["testability"] = testability_entry([(t, None if m is None else h["bound"] - m)
                                              for t, m, h in zip(tol, terms, hs)])
    entry["testability"]["term_is"] = "t_T(d_new) = bound - mean_T(d_new), the tail the conclusion tests"
    return {"heldout_paired": entry}


def _paired_D_new_tolerance(values: Mapping, truth_tolerance) -> float:
    if "truth_cov" in values and len(values["truth_cov"]) > 4:
        return truth_tolerance(values, {"D_new": 1.0})
    return float(values.get("truth_mc_tolerance", 0.0))


def _mean_T(record: Mapping, held: Mapping) -> float | None:
    """``mean_T(d_new)`` of the localised ``f_new`` (stored with the baseline, else a localised route's ``DT_new``)."""
    if "mean_T" in held:
        return float(held["mean_T"])
    for name, r in record["routes"].items():
        if name.startswith("localised_") and "DT_new" in (r.get("values") or {}):
            return float(r["values"]["DT_new"])
    return None


def localised_comparison(records: Sequence[Mapping], level: float, config: Mapping | None) -> dict | None:
    """The headline of the localised study: the route fixed before the data (``[localised] use``), with its
    Clopper--Pearson interval, beside the paper's routes, the §6 route fixed by ``[variants] use``
    and the held-out paired test, on the same draws."""
    from numerics.studies.run import localised_options
    from numerics.studies.validity._stats import certification_entry

    if config is None or not records or not all("heldout_paired" in r["routes"] for r in records):
        return None         # records of a study without the localised routes (or of another config)
    use = localised_options(config)["use"]
    rate = lambda n: certification_entry([bool(r["routes"].get(n, {}).get("certified")) for r in records],  # noqa
                                         level)
    out = {"use": use, "use_rate": rate(use), "paper": {n: rate(n) for n in ("population", "direct")},
           "heldout_paired_rate": rate("heldout_paired"),
           "note": "use is the localised route fixed before the data (THEORY §6b, Choice); a draw where it was "
                   "skipped counts as not certified; heldout_paired certifies only after T is spent"}
    out["gap"] = gap_summary(records, use)
    v_use = ((config.get("variants") or {}).get("use"))
    if v_use:
        v_use = {"population_route": "population", "direct_route": "direct"}.get(v_use, v_use)
        out["variants_use"], out["variants_use_rate"] = v_use, rate(v_use)
    return out


def gap_summary(records: Sequence[Mapping], route: str) -> dict | None:
    """Issue 29 over the draws: ``route``'s ``M_needed``, the scan's ``n_needed_improvable`` and their ratio
    (medians and ranges; draws where a value is ``None`` -- no size up to ``M_MAX`` certifies, or no
    rejection in sight -- are counted, never dropped silently)."""
    import numpy as np

    rs = [r["routes"].get(route) or {} for r in records]
    if not any("M_needed" in x for x in rs):
        return None         # records of a study before the gap was measured

    def stats(key):
        vals = [x.get(key) for x in rs]
        got = [float(v) for v in vals if v is not None]
        return {"median": float(np.median(got)) if got else None, "min": min(got, default=None),
                "max": max(got, default=None), "none": len(vals) - len(got), "draws": len(vals)}

    return {"route": route, "M_needed": stats("M_needed"), "n_needed_improvable": stats("n_needed_improvable"),
            "ratio": stats("ratio"),
            "note": "M_needed: the smallest |S| at which the route would certify, every statistic of the draw held "
                    "(bounds.sample_size); n_needed_improvable: the probe size at which the scan's betting test "
                    "calls the site improvable (numerics.studies.run._gap); ratio = M_needed / n_needed_improvable"}
