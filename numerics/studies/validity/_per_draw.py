"""Per draw, every route's bound, margin, cap and certified improvement; and their distribution (issue 34, item 2).

* ``bound``: the route's bound (on ``L_test(f_new)`` for a test route, on ``R(f_new)`` for
  ``population_risk``, on ``R(f_new) - R(f_old)`` for ``heldout_paired``);
* ``improvement`` (the *certified improvement*): ``L_test_old - bound`` for a test route (what the
  run reports; ``-bound`` for ``heldout_paired``); > 0 where the route certifies;
* ``margin`` = ``bound - observed`` (**Choice** of sign: >= 0 where the bound held), ``observed`` the
  quantity the bound is on at the route's own ``f_new``: ``L_test(f_new)`` on ``T`` for a test route,
  the truth's ``R(f_new)`` (``population_risk``) or paired ``R(f_new) - R(f_old)`` (``heldout_paired``);
* ``cap``: the cap ``nu_V`` of the class the route's ``f_new`` lives in (the paper's cap for the
  paper routes and variants, the localised ball's for THEORY §6b and ``heldout_paired``);
* ``realised_gain_T``: ``L_test_old - L_test(f_new)`` of the route's own ``f_new`` on ``T``; and per draw
  ``trained_gain_T``, the same for the trained ``f_new`` of the paper's chains (``L_test_old - L_test_new``).
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["MARGIN_IS", "per_draw_records", "per_draw_summary"]

MARGIN_IS = ("bound - observed (>= 0: the bound held): observed = L_test(f_new) on T of the route's own f_new "
             "(test routes), the truth's R(f_new) (population_risk), the truth's paired R(f_new) - R(f_old) "
             "(heldout_paired); improvement = L_test_old - bound (-bound for heldout_paired): the certified improvement")
_NO_BOUND = ("any", "any_with_variants")


def _route_row(name: str, r: Mapping, values: Mapping, localised_cap: float | None = None) -> dict:
    own = r.get("values") or {}
    L_old = float(values["L_test_old"])
    cap = own.get("nu_V", values.get("nu_V"))
    row = {"bound": float(r["bound"]), "certified": bool(r["certified"]), "improvement": float(r["improvement"]),
           "cap": None if cap is None else float(cap)}
    if name == "heldout_paired":      # the localised f_new: the localised ball's cap
        row["margin"] = float(r["bound"]) - float(r["D_new"])
        row["cap"] = localised_cap
        return row
    if name == "population_risk":
        row["margin"] = float(r["bound"]) - float(values["R_new"])
        return row
    L_new = float(own.get("L_test_new", values["L_test_new"]))
    row["margin"] = float(r["bound"]) - L_new
    row["realised_gain_T"] = L_old - L_new
    return row


def per_draw_records(records: Sequence[Mapping]) -> list[dict]:
    """One row per evaluated draw (module docstring); the paired truth of the localised ``f_new`` when stored."""
    from numerics.sampled_task import TRUTH_Z
    from numerics.studies.validity._testable import truth_se

    out = []
    for rec in records:
        v = rec["values"]
        row = {"index": rec.get("index"), "seed": rec.get("seed"), "data_seed": rec.get("data_seed"),
               "L_test_old": float(v["L_test_old"]), "trained_gain_T": float(v["L_test_old"]) - float(v["L_test_new"]),
               "routes": {name: _route_row(name, r, v, _localised_cap(rec)) for name, r in rec["routes"].items()
                          if name not in _NO_BOUND and "bound" in r}}
        if "truth_cov" in v:
            row["truth"] = {"n": int(v["truth_n"]), "z": TRUTH_Z,
                            "R_new_minus_R_old": float(v["R_new"]) - float(v["R_old"]),
                            "R_new_minus_R_old_se_paired": truth_se(v, {"R_new": 1.0, "R_old": -1.0})}
            held = rec["routes"].get("heldout_paired")
            if held is not None and len(v["truth_cov"]) > 4:
                row["truth"].update(D_new_localised=float(held["D_new"]), D_new_localised_se_paired=truth_se(v, {"D_new": 1.0}))
        out.append(row)
    return out


def _localised_cap(rec: Mapping) -> float | None:
    for name, r in rec["routes"].items():
        if name.startswith("localised_") and "nu_V" in (r.get("values") or {}):
            return float(r["values"]["nu_V"])
    return None


def _dist(xs) -> dict | None:
    v = np.asarray([x for x in xs if x is not None], dtype=np.float64)
    if v.size == 0:
        return None
    q = np.quantile(v, (0.0, 0.25, 0.5, 0.75, 1.0))
    return {"min": float(q[0]), "q25": float(q[1]), "median": float(q[2]), "q75": float(q[3]), "max": float(q[4]),
            "draws": int(v.size)}


def per_draw_summary(rows: Sequence[Mapping]) -> dict:
    """Per route: the distribution (min, quartiles, median, max) over draws of bound, margin, cap, certified
    improvement, its ratio to ``L_test_old`` and to the trained ``f_new``'s realised gain on ``T``."""
    names = [n for n in rows[0]["routes"] if all(n in r["routes"] for r in rows)] if rows else []
    out = {}
    for n in names:
        rs = [(row["routes"][n], row) for row in rows]
        out[n] = {k: _dist([x.get(k) for x, _ in rs]) for k in ("bound", "margin", "cap", "improvement", "realised_gain_T")}
        out[n]["improvement_over_loss"] = _dist([x["improvement"] / row["L_test_old"] for x, row in rs])
        out[n]["improvement_over_trained_gain"] = _dist([x["improvement"] / row["trained_gain_T"]
                                                         if row["trained_gain_T"] > 0 else None for x, row in rs])
        out[n]["certified"] = int(sum(x["certified"] for x, _ in rs))
    return {"margin_is": MARGIN_IS, "routes": out}
