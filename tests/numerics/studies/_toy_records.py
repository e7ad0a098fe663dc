"""Validity records of the toy world (``tests/bounds/_toy_world.py``), in the validity study's format.

In the toy world losses are ``B * Bernoulli``, so a one-function Hoeffding tail is nearly tight,
and ``f_new`` is the empirical risk minimiser over ``n_class`` functions of equal risk: selection
on ``S`` matters as much as one likes. Feeding these records to
:func:`numerics.studies.validity.summarize` runs the validity study's own statistics (events,
routes, power) on a world where the fixed-tail mutant of THEORY §6 is wrong *visibly* -- which a
network with a sure loss range ``B`` far above its losses' spread cannot show (README).
``E_S`` is checked as a supremum over the class: ``sup_f (R - R_S) = r - min_f R_S(f)`` (at the
ERM) and ``sup_f (R_S - R) = max_f R_S(f) - r``.
"""
from __future__ import annotations

import numpy as np

from bounds.routes import evaluate_routes
from bounds.variant_routes import evaluate_variants
from numerics.studies.validity._draws import _chain_symbols
from bounds.variants import VARIANTS
from tests.bounds._toy_world import draw, with_levels


def _at(x, i):
    a = np.asarray(x)
    return float(a) if a.ndim == 0 else float(a.reshape(-1)[i] if a.size > 1 else a.reshape(-1)[0])


def toy_records(draws: int, *, level: float = 0.2, delta: float = 0.05, delta_prime: float = 0.05, seed: int = 0,
                **world) -> list[dict]:
    """``draws`` validity records of the toy world (module docstring)."""
    setup, inputs, observed, truth = draw(draws, seed=seed, **world)
    setup = with_levels(setup, delta, delta_prime)
    inputs = inputs.__class__(**{**inputs.__dict__, "delta_mc": None if inputs.delta_mc is None else delta / 10})
    paper, var = evaluate_routes(setup, level), evaluate_variants(setup, level, inputs)
    r = float(truth["R_new"])
    out = []
    for i in range(draws):
        v = {"L_test_old": _at(truth["L_test_old"], i), "L_test_new": _at(truth["L_test_new"], i),
             "L_test_jump_S": _at(truth["L_test_jump_S"], i), "R_S_new": _at(truth["RS_new"], i),
             "R_S_jump_pop": _at(truth["RS_pop"], i), "R_S_jump_S": _at(truth["RS_jump_S"], i),
             "R_old": _at(truth["R_old"], i), "R_new": r, "R_jump_pop": r, "R_jump_S": r,
             "delta_R": _at(setup.delta_R, i), "delta_R_true": _at(setup.delta_R, i), "delta_R_hat": _at(setup.delta_R, i),
             "delta_R_stderr": 0.0, "delta_R_failure": 0.0, "delta_erm_pop": _at(setup.delta_erm, i),
             "delta_erm_S": _at(setup.delta_erm_S, i), "delta_test_R": _at(setup.delta_test_R, i),
             "eps_M": _at(paper.eps_M, i), "eps_K": _at(paper.eps_K, i), "B": float(setup.B), "M": float(setup.M),
             "K": float(setup.K), "delta": delta, "delta_prime": delta_prime}
        routes = {name: {k: _at(getattr(rr, k), i) if k != "certified" else bool(np.asarray(rr.certified).reshape(-1)[
            i if np.size(rr.certified) > 1 else 0]) for k in ("bound", "failure_probability", "certified", "improvement")}
                  for name, rr in (("population", paper.population), ("direct", paper.direct),
                                   ("population_risk", paper.population_risk))}
        a = paper.any_route
        routes["any"] = {"certified": bool(np.asarray(a.certified).reshape(-1)[i]),
                         "failure_probability": _at(a.failure_probability, i),
                         "routes_included": {k: bool(np.asarray(x).reshape(-1)[i]) for k, x in a.included.items()},
                         "events": list(a.events)}
        for name, rr in var.variants.items():
            if name.endswith("_empirical"):   # the toy's rad_S is only bounded (Massart): no exact E_S threshold
                continue
            vals = {k: _at(rr.values[k], i) for k in _chain_symbols(VARIANTS[name]) if k in rr.values}
            routes[name] = {"bound": _at(rr.bound, i), "failure_probability": _at(rr.failure_probability, i),
                            "certified": bool(np.asarray(rr.certified).reshape(-1)[i]),
                            "improvement": _at(rr.improvement, i), "values": vals}
        rec = {"data_seed": i, "seconds": 0.0, "values": v, "routes": routes, "index": i}
        if truth["max_RS"] is not None:
            up, low = r - v["R_S_new"], _at(truth["max_RS"], i) - r
            rec["deviations"] = {"E_S": {"sup": max(up, low), "upper": up, "lower": low}}
        out.append(rec)
    return out
