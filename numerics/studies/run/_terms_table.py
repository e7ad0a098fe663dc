"""The text report's per-term table: every route's bound decomposed into its terms (issue 17).

Each route of ``result.json`` that carries ``terms`` (the §6 variants, the §6b localised routes,
``heldout_paired``; Paper A's two routes through ``variants.paper_terms``) becomes one line:
the bound, then each term ``name = value`` with its role (``reference``: the starting risk,
``gain``: subtracted, ``cost``: a confidence or uniform term, with the event it pays for).
"""
from __future__ import annotations

from typing import Mapping

from bounds.routes._route import LiveMapping, paper_rows

__all__ = ["roles_lines", "route_terms", "terms_lines"]

#: Paper A's routes: their terms live in ``variants.paper_terms`` under these names (``{route: row}``, read from
#: the route registry's ``paper`` group, :func:`bounds.routes._route.paper_rows`).
_PAPER = LiveMapping(lambda: {name: row for row, (name, _) in paper_rows().items()})


def route_terms(result: Mapping) -> dict[str, list[Mapping]]:
    """``{route: terms}`` of every route of ``result`` that has a term decomposition (report order)."""
    routes, out = result.get("routes", {}), {}
    paper = (result.get("variants") or {}).get("paper_terms") or {}
    for name, key in _PAPER.items():
        if name in routes and paper.get(key):
            out[name] = paper[key]
    for name, r in routes.items():
        if isinstance(r, Mapping) and r.get("terms"):
            out[name] = r["terms"]
    return out


def _fmt(v) -> str:
    return f"{v:.6g}" if isinstance(v, float) else "—" if v is None else str(v)


def _term(t: Mapping) -> str:
    name = t.get("term", t.get("name", "?"))
    event = f" [{t['event']}]" if t.get("event") else ""
    role = {"reference": "", "gain": "gain ", "cost": "cost "}.get(t.get("role"), f"{t.get('role')} ")
    return f"{role}{name} = {_fmt(t.get('value'))}{event}"


def terms_lines(result: Mapping) -> list[str]:
    """The per-term table's lines (empty when no route has terms).

    Example:
        >>> res = {"routes": {"x": {"bound": 1.0, "certified": False,
        ...                         "terms": [{"term": "L", "role": "reference", "value": 1.0}]}}}
        >>> terms_lines(res)[-1]
        '  x                                        bound 1  no: L = 1'
    """
    table = route_terms(result)
    if not table:
        return []
    lines = ["", "each route's terms (routes.<name>.terms; Paper A's routes: variants.paper_terms): "
                 "bound = reference - gains + costs, [event] the failure event a cost pays for"]
    for name, terms in table.items():
        r = result["routes"][name]
        verdict = "CERTIFIED" if r.get("certified") else "no"
        lines.append(f"  {name:<40} bound {_fmt(r.get('bound'))}  {verdict}: " + "; ".join(_term(t) for t in terms))
    return lines


def _reads(r: Mapping) -> str:
    if r.get("S_only") is None:
        return "roles not derived"
    if r["S_only"]:
        t_read = (r.get("roles") or {}).get("T", "") != "not read"
        return "S-only (T: " + ("its size and the sure range" if t_read else "not read") + ")"
    return "train-and-test (T: " + ", ".join(r.get("T_statistics") or []) + ")"


def roles_lines(result: Mapping) -> list[str]:
    """Per route: which samples it read (``routes.<name>.roles``, ``S_only``) and how much it certifies
    (``improvement`` = L_test(f_old) - bound, its share of L_test(f_old) and of the trained f_new's realised gain).

    Example:
        >>> res = {"routes": {"x": {"certified": True, "improvement": 1e-6, "improvement_over_loss": 2.5e-5,
        ...                         "S_only": False, "T_statistics": ["V_T_dnew"],
        ...                         "share_note": "a negligible step"}}}
        >>> print(roles_lines(res)[-1])
          x                                        train-and-test (T: V_T_dnew); improvement 1e-06 (0.0025% of the loss): a negligible step
    """
    rows = {k: r for k, r in result.get("routes", {}).items() if isinstance(r, Mapping) and "share_note" in r}
    if not rows:
        return []
    lines = ["", "which samples each route read (routes.<name>.roles; S-only: no statistic of T beyond its size and the "
                 "sure range) and how much it certifies (improvement = L_test(f_old) - bound, against the trained "
                 "f_new's realised gain L_T_old - L_T_new on the same T)"]
    for name, r in rows.items():
        loss = r.get("improvement_over_loss")
        share = "" if loss is None else f" ({100 * loss:.3g}% of the loss)"
        imp = r.get("improvement")
        lines.append(f"  {name:<40} {_reads(r)}; improvement {_fmt(imp)}{share}: {r['share_note']}")
    return lines
