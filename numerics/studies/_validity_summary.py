"""``validity.json`` from the stored draw records (routes, events, slack, power, timing)."""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from numerics.studies._validity_power import VARIANTS, variant_failures
from numerics.studies._validity_routes import (EXACT_EVENTS, ROUTE_SPECS, UNIFORM_EVENTS, conclusion_holds,
                                              event_failures, premise_allowances, premise_slacks)
from numerics.studies._validity_stats import (certification_entry, merge_events, rate_entry, route_entry,
                                              slack_summary)

__all__ = ["summarize"]


def _routes(records, level, specs) -> dict:
    out, violated_by = {}, {}
    for spec in specs:
        rs = [r["routes"][spec.name] for r in records]
        violated_by[spec.name] = [not conclusion_holds(spec, r["values"]) for r in records]
        out[spec.name] = route_entry([x["certified"] for x in rs], violated_by[spec.name],
                                     [min(1.0, x["failure_probability"]) for x in rs], level,
                                     [e.name for e in spec.theorem.events])
        out[spec.name]["bounds_on"] = "L_test(f_new)" if spec.kind == "test" else "R(f_new)"
    test_routes = [s.name for s in specs if s.kind == "test"]
    anys = [r["routes"]["any"] for r in records]
    viol = [any(a["routes_included"].get(n, False) and violated_by[n][i] for n in test_routes)
            for i, a in enumerate(anys)]
    events = sorted({e for a in anys for e in a["events"]})
    out["any"] = route_entry([a["certified"] for a in anys], viol, [min(1.0, a["failure_probability"]) for a in anys],
                             level, events)
    out["any"]["bounds_on"] = "L_test(f_new) < L_test(f_old) by some route (union of their events)"
    return out


def _events(records, level, specs) -> dict:
    merged = merge_events([event_failures(r, specs) for r in records])
    out = {}
    for name, d in merged.items():
        e = rate_entry(d["failed"], d["stated"], level)
        if not d["failed"]:
            e["checked"] = "never claimed: no route using it applied at any draw"
        elif name not in UNIFORM_EVENTS:
            e["checked"] = "the event itself (a deviation of one function fixed before its sample)"
        elif all(d["exact"]):
            e["checked"] = "supremum over the capped class (exact)"
            e["failures_at_functions"] = int(np.sum(d["at_functions_failed"]))
        else:
            e["checked"] = "at the functions the chains use (a necessary condition only)"
        out[name] = e
    return out


def _slack(records, specs) -> tuple[dict, dict]:
    """Slack of every premise over draws, and the share of its allowance used (deviation / allowance)."""
    values: dict[str, list] = {}
    used: dict[str, list] = {}
    for r in records:
        for spec in specs:
            allow = premise_allowances(spec, r["values"])
            for premise, (event, slack) in premise_slacks(spec, r["values"]).items():
                key = f"{spec.name}.{premise} [{event}]"
                values.setdefault(key, []).append(slack)
                if allow[premise] is not None:
                    used.setdefault(key, []).append(1.0 - slack / allow[premise])
        for event, (dev, threshold) in EXACT_EVENTS.items():
            if dev in (r.get("deviations") or {}):
                key = f"{event}: {threshold} - sup|R - R_n| (class)"
                values.setdefault(key, []).append(r["values"][threshold] - r["deviations"][dev]["sup"])
                used.setdefault(key, []).append(r["deviations"][dev]["sup"] / r["values"][threshold])
    return ({k: slack_summary(v) for k, v in values.items()},
            {k: {kk: vv for kk, vv in slack_summary(v).items() if kk != "violations"} for k, v in used.items()})


def _power(records, level, variants) -> dict:
    fails = variant_failures(records, variants)
    out = {}
    for var in variants:
        e = rate_entry(fails[var.name]["failed"], fails[var.name]["stated"], level)
        out[var.name] = {**e, "event": var.event, "weakened": var.weakened, "description": var.description,
                         "flagged": e["significant"]}
    return out


#: Per-draw quantities whose distribution over draws the summary reports.
QUANTITIES = ("delta_R_hat", "delta_R_true", "delta_R", "delta_test_R", "delta_erm_pop", "delta_erm_S", "eps_M",
              "eps_K", "L_test_old", "L_test_new", "R_old", "R_new", "B", "eta")


def _quantities(records) -> dict:
    out = {k: slack_summary([r["values"][k] for r in records]) for k in QUANTITIES if k in records[0]["values"]}
    for v in out.values():
        v.pop("violations")
    return out


def _timing(records) -> dict:
    secs = [r["seconds"] for r in records]
    return {"draw_seconds_total": float(np.sum(secs)), "draw_seconds_median": float(np.median(secs))}


def summarize(records: Sequence[Mapping], level: float, *, vary: str = "data", config: Mapping | None = None,
              specs=None, variants=None) -> dict:
    """The study's summary from its records (``None`` entries: missing draws, ignored).

    Returns:
        dict with ``draws``, ``routes``, ``events``, ``slack``, ``power``, ``significant``,
        ``certification`` (rates per route), ``truth``, ``timing``, ``config`` ...
    """
    specs = ROUTE_SPECS if specs is None else specs
    variants = VARIANTS if variants is None else variants
    present = [r for r in records if r is not None]
    ok = [r for r in present if "values" in r]
    not_run = [r for r in present if "values" not in r]
    if not ok:
        raise ValueError("no draw could be evaluated, nothing to summarise.")
    routes, events = _routes(ok, level, specs), _events(ok, level, specs)
    slack, slack_used = _slack(ok, specs)
    significant = any(r["significant"] for r in routes.values()) or any(e["significant"] for e in events.values())
    truth = [r.get("truth") or {} for r in ok]
    errs = [t.get("moment_error") for t in truth if t.get("moment_error") is not None]
    return {
        "draws": len(ok), "draws_requested": len(records), "draws_not_run": len(not_run),
        "not_run_reasons": sorted({r["not_run"] for r in not_run}),
        "vary": vary, "test_level": level, "significant": significant,
        "certification": {name: certification_entry([r["routes"][name]["certified"] for r in ok], level)
                          for name in [s.name for s in specs] + ["any"]},
        "routes": routes, "events": events, "slack": slack, "slack_used": slack_used,
        "power": _power(ok, level, variants),
        "quantities": _quantities(ok),
        "truth": {"exact_class": all(t.get("exact") for t in truth), "check_population": truth[0].get("n"),
                  "moment_error_max": max(errs) if errs else None},
        "timing": _timing(ok), "config": dict(config) if config is not None else None,
        "data_seeds": [r["data_seed"] for r in ok][:5] + (["..."] if len(ok) > 5 else []),
    }
