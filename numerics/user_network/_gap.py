"""The gap in ``dc.certify_insertion``: each route's ``M_needed`` beside the scan's ``n_needed_improvable``.

* ``n_needed_improvable``: the signal sample's scan at ``site`` (``dc.saturation`` on its first two
  thirds, the betting test at the scan's level) -- the probe size at which the wealth, growing at
  its observed rate, reaches ``ln(K/level)`` (:func:`numerics.estimators.n_needed_improvable`;
  also given when the scan already calls the site improvable). A planning number.
* ``M_needed`` per row: the localised routes by :func:`bounds.sample_size.localised_sizes` (the
  route's own evaluator with only ``M`` varied, every statistic held), Paper A's by their
  closed-form ``min_M`` (:func:`bounds.sample_size.paper_sizes`); THEORY §6 variants are not
  solved (their empirical Rademacher inputs are sums over ``S``: held, they would not scale
  with ``M``), ``None`` with that reason.
* ``M_needed_ratio = M_needed / n_needed_improvable`` (the target: at most 2).
"""
from __future__ import annotations

__all__ = ["certificate_gap", "scan_n_needed"]

_VARIANT_WHY = ("not solved for the THEORY §6 variants (their empirical Rademacher inputs are sums over S, which held "
                "at their measured values would not scale with M); see the localised and Paper A rows")


def scan_n_needed(scan, site: str) -> tuple[int | None, dict]:
    """``(n_needed_improvable, what the scan measured)`` of the scan's record at ``site``."""
    from numerics.estimators import n_needed_improvable

    rec = next(r for r in scan.sites if r["site"] == site)
    acc = scan._stats[site]
    level = scan.level / len(scan.sites)
    n_bet = int(acc.z.numel())
    n_imp = n_needed_improvable(rec["log_wealth"], n_bet, level, len(acc.ends))
    return n_imp, {"n_probe": acc.n, "level": level, "log_wealth": rec["log_wealth"], "threshold": rec["threshold"],
                   "improvable": bool(rec["reject"]), "n_bet": n_bet, "n_needed_improvable": n_imp,
                   "sample": "signal (its first two thirds: the scan of dc.saturation)"}


def _sizes(setup_fn, q, c, loss, level) -> dict:
    from bounds.routes import evaluate_routes
    from bounds.sample_size import localised_sizes, paper_sizes
    from numerics.user_network._localised import localised_setup

    if any(c.get(k) is None for k in ("B", "L_loss", "L_top")):
        return {}
    out = {f"{k}_route": v for k, v in paper_sizes(evaluate_routes(setup_fn(), level)).items()}
    out.update(localised_sizes(localised_setup(q, c, loss, level), level))
    return out


def certificate_gap(rows: list, scan, site: str, setup_fn, q: dict, c: dict, loss, level: float) -> tuple[list, dict]:
    """``(rows with M_needed, n_needed_improvable and M_needed_ratio, the gap record)`` (module docstring)."""
    from bounds.sample_size import size_ratio

    n_imp, scan_rec = scan_n_needed(scan, site)
    if q.get("scan_given"):   # dc.certify_insertion(scan=...): the scan read its own probe, at its own sites' level
        scan_rec["sample"] = (f"the given scan's probe (dc.saturation over {len(scan.sites)} sites: level / "
                              f"{len(scan.sites)} per site)")
    sizes = _sizes(setup_fn, q, c, loss, level)
    out, per_route = [], {}
    for r in rows:
        sz = sizes.get(r["route"])
        need = None if sz is None else sz.M_needed
        why = (sz.reason if sz is not None else _VARIANT_WHY if r["missing"] == [] else
               f"not evaluable: missing {', '.join(r['missing'])}")
        per_route[r["route"]] = {**({} if sz is None else sz.to_dict()), "M_needed": need, "reason": why,
                                 "ratio": size_ratio(need, n_imp)}
        out.append({**r, "M_needed": need, "n_needed_improvable": n_imp, "M_needed_ratio": size_ratio(need, n_imp)})
    return out, {"n_needed_improvable": n_imp, "scan": scan_rec, "routes": per_route,
                 "held": "every statistic measured on signal, S and T held at its measured value; only M varies"}
