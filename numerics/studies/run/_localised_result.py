"""The localised routes in ``result.json`` and ``bounds_config.toml`` (THEORY §6b, **Choice**; no computation here).

* ``routes.localised_<chain>_<uniform>_<tail>``: the fields of the other routes
  (:meth:`bounds.variant_routes.VariantResult.to_dict`) plus ``observed`` (``L_test`` of the
  localised ``f_new``) and ``observed_minus_bound``; ``routes.heldout_paired``: the baseline.
* ``localised``: ``use`` (the route fixed before the data, and its verdict), ``levels``,
  ``inputs`` (the ``[localised]`` table of ``bounds_config.toml``: feeding it back to
  ``depthcert bounds`` gives the same bounds), ``roles`` (which sample fixed what),
  ``f_new``, ``skipped``, ``notes``.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

__all__ = ["INPUT_KEYS", "localised_lines", "localised_route_dicts", "localised_section", "localised_table"]

#: The :class:`bounds.localised_routes.LocalisedSetup` fields written as measured inputs.
INPUT_KEYS = ("M", "K", "L_test_old", "B", "L_loss", "L_top", "d", "r", "rho_phi", "nu_V", "n_grid", "kappa", "b_xi",
              "A_norm", "sigma2_ub", "delta_sigma", "Sigma_ub", "delta_Sn", "tr_ub", "delta_tr", "delta_train", "delta_R",
              "delta_R_failure", "delta_erm_pop", "var_T_dnew", "var_S_dpop", "delta_U", "delta_T_d", "delta_S_pop",
              "exact_applies")

ROLES = {
    "signal": "fixed the ball nu (cap = jumpboard: ||G^||/beta^; predicted: the route's predicted margin) and its "
              "grid, V_pop, sigma^2's and ||Sigma_phi||'s upper bounds (before S)",
    "S": "f_new (training, the localised (C2) choice), delta_train = -D_S(V_new), d_pop's mean and variance",
    "T": "d_new's mean and unbiased variance (H_T_diff; heldout_paired), L_test(f_new)",
    "population": "the lower confidence bound on Delta_R from the paired conditional differences (E_R)",
}


def _plain(x):
    return x.item() if hasattr(x, "item") else x


def localised_route_dicts(lc) -> dict:
    """``routes.localised_*`` and ``routes.heldout_paired`` of a :class:`LocalisedCertificate`."""
    if lc.measure is None:
        return {}
    out = {}
    for name, r in lc.report.routes.items():
        d = r.to_dict()
        d["observed"] = lc.measure.L_test_new
        d["observed_minus_bound"] = None if d["bound"] is None else lc.measure.L_test_new - d["bound"]
        g = ((lc.gap or {}).get("routes") or {}).get(name)
        if g is not None:       # the smallest certifying M and its ratio to the scan's n_needed_improvable
            d.update(M_needed=g["M_needed"], n_needed_improvable=g["n_needed_improvable"], M_needed_ratio=g["ratio"])
        out[name] = d
    out["heldout_paired"] = dict(lc.heldout)
    return out


def localised_section(lc) -> dict:
    """``localised`` of ``result.json`` (docstring of ``numerics.studies.run._localised_result``)."""
    use = lc.options["use"]
    chosen = lc.report.routes.get(use)
    verdict = ({"name": use, "certified": bool(chosen.certified), "bound": float(chosen.bound),
                "failure_probability": float(chosen.failure_probability)} if chosen is not None else
               {"name": use, "certified": False, "skipped": lc.report.skipped.get(use)})
    levels = {k: lc.options[k] for k in ("delta_U", "delta_T_d", "delta_S_pop", "delta_sigma", "delta_Sn",
                                         "delta_tr", "delta_R_failure") if k in lc.options}
    out = {"use": verdict, "cap": lc.options["cap"], "levels": levels,
           "class": {k: _plain(v) for k, v in dataclasses.asdict(lc.cls).items()},
           "skipped": dict(lc.report.skipped), "roles": dict(ROLES), "notes": list(lc.report.notes) + _notes(lc)}
    if lc.gap is not None:
        out["gap"] = dict(lc.gap)
        g = lc.gap["routes"].get(use)
        out["use"].update(M_needed=None if g is None else g["M_needed"],
                          n_needed_improvable=lc.gap["n_needed_improvable"], M_needed_ratio=None if g is None else g["ratio"])
    if lc.measure is not None:
        m = lc.measure
        out["inputs"] = {k: _plain(getattr(lc.setup, k)) for k in INPUT_KEYS if getattr(lc.setup, k) is not None}
        out["inputs"]["use"] = use
        out["f_new"] = {"returned": m.returned, "V_norm": float(m.V.norm()), "norms_before_projection": dict(m.norms),
                        "D_S": dict(m.D_S), "mean_T_dnew": m.mean_T_dnew, "L_test_new": m.L_test_new,
                        "V_pop_in_ball": m.pop_in_ball, "nu": m.nu, "caps": list(lc.cls.caps),
                        "train_bounds": None if m.train_bounds is None else list(m.train_bounds)}
    return out


def _notes(lc) -> list[str]:
    notes = ["f_new of the localised class: the run's V_new, V_S and V_pop projected onto ||V||_F <= nu, the smallest "
             "R_S of the three (Choice); its L_test is each localised route's 'observed'.",
             "routes.heldout_paired is the held-out paired test on T (Choice, what a user would do without the "
             "theory): a bound on R(f_new) - R(f_old) at the run's level, reported beside, never as Paper A's.",
             f"sigma^2's bound ({lc.cls.variance}) and ||Sigma_phi||'s (used by (c), at delta_Sn) are from the signal "
             "sample (Choice: every constant of U_S fixed before S)."]
    if len(lc.cls.caps) > 1:
        notes.append(f"cap chosen on S from a grid of {len(lc.cls.caps)} caps fixed before S (D_S + U_S smallest); every "
                     "event about a function depending on the cap pays the grid (n_grid copies); r_d at the cap used.")
    if lc.cls.clipped:
        notes.append(f"the localised cap was clipped at the run's nu_V = {lc.cls.nu:.6g} (its B, L_loss, L_top hold "
                     "for ||V|| <= nu_V only).")
    return notes


def localised_table(result: Mapping) -> dict:
    """The ``[localised]`` table of ``bounds_config.toml`` (empty when the run has no localised inputs)."""
    return dict((result.get("localised") or {}).get("inputs") or {})


def localised_lines(result: Mapping) -> list[str]:
    """The text report's table of the localised routes and the held-out paired test (``depthcert run``)."""
    loc, routes = result.get("localised"), result["routes"]
    if not loc or "f_new" not in loc:
        return []
    lines = ["", f"localised certificates (THEORY §6b, Choice): ball ||V|| <= {loc['class']['nu']:.4g} "
                 f"({loc['class']['nu_source']}), f_new = projected {loc['f_new']['returned']}",
             f"{'route':<38} {'bound':>10} {'observed':>10} {'fail. prob':>10} {'M_needed':>10} {'ratio':>7}  "
             "verdict (alone*)"]
    for name in (k for k in routes if k.startswith("localised_")):
        r = routes[name]
        verdict = f"CERTIFIED by {r['improvement']:.4g}" if r["certified"] else "not certified"
        lines.append(f"{name:<38} {r['bound']:>10.6g} {r['observed']:>10.6g} {r['failure_probability']:>10.4g} "
                     f"{_num(r.get('M_needed'), '.4g'):>10} {_num(r.get('M_needed_ratio'), '.3g'):>7}  " + verdict)
    h = routes.get("heldout_paired")
    if h is not None:
        lines.append(f"{'heldout_paired (R_new - R_old)':<38} {h['bound']:>10.4g} {'':>10} "
                     f"{h['failure_probability']:>10.4g}  " + ("CERTIFIED" if h["certified"] else "not certified"))
    u = loc["use"]
    lines.append(f"* each row alone. Route fixed before the data (use = {u['name']}): "
                 + ("CERTIFIED" if u["certified"] else "not certified"))
    return lines + gap_lines(loc.get("gap")) + [f"skipped: {k}: {why}" for k, why in loc.get("skipped", {}).items()]


def _num(v, spec: str) -> str:
    return "—" if v is None else format(v, spec)


def gap_lines(gap: Mapping | None) -> list[str]:
    """The gap in the text report: the scan's ``n_needed_improvable`` and each route's ``M_needed``."""
    if not gap:
        return []
    sc = gap["scan"]
    lines = [f"gap: the scan's betting test at this site on {sc['n_probe']} probe samples: log W = "
             f"{sc['log_wealth']:.4g} vs {sc['threshold']:.4g} ({'improvable' if sc['improvable'] else 'not improvable'}"
             f" at this n); n_needed_improvable = {_num(gap['n_needed_improvable'], 'd')}; M_needed = the smallest M at "
             "which a route certifies, every other statistic held (ratio = M_needed / n_needed_improvable)"]
    for name, p in (gap.get("paper") or {}).items():
        lines.append(f"    {name:<34} M_needed {_num(p['M_needed'], '.4g'):>10} ratio {_num(p['ratio'], '.3g'):>7}"
                     "  (closed form)")
    for name, r in gap["routes"].items():
        if r["M_needed"] is None:
            lines.append(f"    {name:<34} M_needed {'None':>10}: {r['reason']}")
    return lines
