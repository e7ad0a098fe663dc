"""Outputs of the run study: ``result.json``, ``bounds_config.toml``, the figure, the table.

Written from the result dict of :func:`numerics.studies.run.run_experiment` only (figures
and reports come from saved results, never from re-running).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from bounds.parameters import BLOCK_PARAMETERS
from plumbing.figures import pyplot, save_figure
from plumbing.io import atomic_write_text, dumps, to_toml, versions
from plumbing.store import load_result
from numerics.studies.run._names import QUANTITY_OF, setup_values

__all__ = ["QUANTITY_OF", "bounds_config", "format_table", "plot_bound_vs_observed", "setup_of_quantities", "to_json",
           "to_toml", "write_outputs"]

#: The routes whose bound is on ``L_test(f_new)`` (the figure's bars).
TEST_RISK_ROUTES = ("population", "direct")


def setup_of_quantities(q: Mapping, L_test_old: float, R_old: float):
    """The :class:`bounds.routes.Setup` of a run's measured quantities ``q``: the one place where
    the run's names become the setup's (:func:`~numerics.studies.run._names.setup_values`).

    Every setup of a run's numbers is built here: each draw's certificate, ``bounds_config.toml`` and the
    figures over stored run records (:mod:`numerics.studies.figures`). The other places that build a
    ``Setup`` read other sources, with other names: a user's ``depthcert bounds`` file
    (:func:`depthcert.config.setup_from_dict`, validated, the inverse of :func:`bounds.setup_io.setup_to_dict`),
    the API's measurements on a user's network (``numerics.user_network._certify``: the level split in four, the
    family's certificate block) and the run's plan before any data (:func:`numerics.studies.run.setup_report`:
    no measured term, for the costs only).
    """
    from bounds.routes import Setup

    family = q.get("family", "readout")
    block = setup_values(q, BLOCK_PARAMETERS[family])
    return Setup(L_test_old=L_test_old, delta_R=q["delta_R"], **setup_values(q, ("delta_erm",)),
                 delta_test_R=q["delta_test_R"], M=q["M"], K=q["K"], delta=q["delta"], delta_prime=q["delta_prime"],
                 B=q["B"], L_loss=q["L_loss"], family=family, block=block, delta_erm_S=q["delta_erm_S"],
                 delta_R_failure=q["delta_R_failure"], R_old=max(R_old, 0.0), n_grid=q.get("n_grid", 1))


def bounds_config(result: Mapping) -> dict:
    """The ``depthcert bounds --config`` setup of ``result`` (same numbers, same formula)."""
    from bounds.setup_io import setup_to_dict

    setup = setup_of_quantities(result["quantities"], result["L_test_old"], result["R_old"])
    out = setup_to_dict(setup, level=result["level"])
    table = _variants_table(result)
    if table:
        out["variants"] = table
    from numerics.studies.run._localised_result import localised_table

    loc = localised_table(result)     # THEORY §6b's measured inputs (Choice)
    if loc:
        out["localised"] = loc
    return out


#: The measured ``[variants]`` inputs a run writes into ``bounds_config.toml`` (the McDiarmid error is
#: recomputed there from ``phi_sq_sum`` and ``n_draws`` by the same formula).
_MEASURED = ("var_S_jump_pop", "var_T_new", "var_T_old", "var_T_jump_S", "rad_hat", "delta_mc", "phi_sq_sum",
             "n_draws")
_LEVELS = ("delta_S_jump_pop", "delta_T_new", "delta_T_old", "delta_T_jump_S", "use")


def _variants_table(result: Mapping) -> dict:
    """``[variants]``: the measured inputs and the config's levels (fixed before the data) and ``use``."""
    q, cfg = result["quantities"], result.get("config", {}).get("variants", {})
    out = {k: q[k] for k in _MEASURED if q.get(k) is not None}
    out.update({k: cfg[k] for k in _LEVELS if k in cfg})
    return out


def format_table(result: Mapping) -> str:
    """Plain-text report: each quantity, then each route's bound vs observed ``L_test(f_new)``."""
    q, lines = result["quantities"], []
    keys = ["delta_R", "delta_R_hat", "delta_R_stderr", "delta_R_lower", "beta", "eta", "eta_capped", "G_norm",
            "delta_erm_pop", "delta_erm_S", "delta_test_R", "eps_M", "eps_K", "B", "L_loss", "L_top_certified",
            "L_top_empirical", "rho_phi", "nu_V", "V_norm", "M", "K", "delta", "delta_prime", "returned"]
    vals = {**q, "eps_M": result["eps_M"], "eps_K": result["eps_K"]}
    lines.append(f"L_test(f_old) = {result['L_test_old']:.6g}   L_test(f_new) = {result['L_test_new']:.6g}   "
                 f"R(f_old) = {result['R_old']:.6g} ± {result['R_old_stderr']:.2g}   "
                 f"R(f_new) = {result['R_new']:.6g} ± {result['R_new_stderr']:.2g}")
    lines += [f"  {k:<18} {_fmt(vals[k])}" for k in keys]
    lines += _theorem1_lines(result.get("theorem1"))
    lines += ["", f"{'route':<20} {'bound':>12} {'observed':>12} {'fail. prob':>12}  verdict"]
    for name in TEST_RISK_ROUTES + ("population_risk",):
        if name not in result["routes"]:
            continue
        r = result["routes"][name]
        verdict = ("CERTIFIED improvement of " + _fmt(r["improvement"]) if r["certified"]
                   else "not certified: " + r["message"].removeprefix("not certified: "))
        what = " (R)" if name == "population_risk" else ""
        lines.append(f"{name + what:<20} {_fmt(r['bound']):>12} {_fmt(r['observed']):>12} "
                     f"{_fmt(r['failure_probability']):>12}  {verdict}")
    if "any" in result["routes"]:
        a = result["routes"]["any"]
        lines.append(f"{'any route':<20} {'':>12} {'':>12} {_fmt(a['failure_probability']):>12}  "
                     + (a["message"].replace("certified by", "CERTIFIED by", 1) if a["certified"] else a["message"]))
    lines += _variant_lines(result)
    from numerics.studies.run._localised_result import localised_lines

    lines += localised_lines(result)
    from numerics.studies.run._terms_table import roles_lines, terms_lines

    lines += terms_lines(result)     # every route's bound decomposed into its terms
    lines += roles_lines(result)     # which samples each route read, and how much it certifies
    lines += _diagnostics_lines(result.get("diagnostics"))
    lines += ["", f"total time {result['timings']['total_s']:.1f} s"] + [f"note: {n}" for n in result["notes"]]
    return "\n".join(lines)


def _variant_lines(result: Mapping) -> list[str]:
    """The paper's routes ("paper") and this project's THEORY §6 variants ("Choice") in one table."""
    var = result.get("variants")
    if not var:
        return []
    rows = [("population (Thm 2)", "paper", result["routes"]["population"]),
            ("direct (Thm 3)", "paper", result["routes"]["direct"])]
    rows += [(name, "Choice", result["routes"][name]) for name in var["names"]]
    lines = ["", "tighter variants (THEORY §6): 'paper' = Paper A's statement, 'Choice' = this project's variant",
             f"{'route':<36} {'statement':>9} {'bound':>10} {'observed':>10} {'fail. prob':>10}  verdict (alone*)"]
    for label, origin, r in rows:
        verdict = "CERTIFIED by " + _fmt(r["improvement"]) if r["certified"] else "not certified"
        lines.append(f"{label:<36} {origin:>9} {_fmt(r['bound']):>10} {_fmt(r['observed']):>10} "
                     f"{_fmt(r['failure_probability']):>10}  {verdict}")
    lines.append("* each row alone: valid only for a route fixed before the data ([variants] use).")
    a = result["routes"].get("any_with_variants")
    if a is not None:
        c = a.get("scale")
        scale = "" if c is None else f", every level times {c:.4g}"
        lines.append(f"any route with the variants (union of the distinct events of {len(a['routes_included'])} routes"
                     f"{scale}): " + (a["message"].replace("certified by", "CERTIFIED by", 1) if a["certified"]
                                      else a["message"]))
    if var.get("use"):
        u = var["use"]
        lines.append(f"route fixed before the data (use = {u['name']}): " + u["message"])
    lines += [f"skipped: {k}: {why}" for k, why in var.get("skipped", {}).items()]
    return lines


def _theorem1_lines(t1: Mapping | None) -> list[str]:
    if not t1:
        return []
    return ["", f"Theorem 1: guaranteed gain {_fmt(t1['guaranteed_gain_at_step'])} ({t1['statement']}) "
                "[estimated: G, beta on the signal sample] "
                f"(measured gain {_fmt(t1['measured_gain'])} ± {_fmt(t1['measured_gain_stderr'])}"
                + ("" if t1["optimal_step_applies"] else
                   f"; ||G||^2/(2 beta) = {_fmt(t1['gain_at_optimal_step'])} does not apply: step capped") + ")"]


def _diagnostics_lines(diag: Mapping | None) -> list[str]:
    if not diag:
        return []
    cov, pb = diag["covariance"], diag["paper_b"]
    lines = ["", f"diagnostics on an independent probe sample (n = {diag['n_probe']}):"]
    for key, what in (("c1_test", "data-free b, level holds"), ("c1_test_approx", "b = sample max, level approximate")):
        if key in diag:
            c1 = diag[key]
            verdict = "signal detected (C1 holds)" if c1["signal_detected"] else "no signal detected at this n"
            lines.append(f"  (C1) U-statistic test at level {c1['level']:g} ({what}, b = {_fmt(c1['b'])}): "
                         f"S_hat = {_fmt(c1['s_hat'])} vs threshold {_fmt(c1['threshold'])}: {verdict}")
    return lines + [
        f"  (A3) ||Sigma_m||_2 = {_fmt(cov['spectral_norm'])}, off-diagonal mass ratio {_fmt(cov['offdiag_ratio'])}",
        f"  (A-norm) min pre-norm RMS = {_fmt(diag['norms']['r_min_overall'])}",
        f"  Paper B: AG_max = {_fmt(pb['ag_max'])}, ||G||^2 = {_fmt(pb['cross_gradient_score'])}, "
        f"projection score = {_fmt(pb['projection_score'])}, realisability = {_fmt(pb['realisability_ratio'])}"]


def to_json(obj) -> str:
    """Indented JSON; non-finite floats become ``null`` (JSON has no inf/nan)."""
    return dumps(obj, indent=2) + "\n"


def write_outputs(result: dict, out_dir: str | Path) -> dict:
    """Write ``result.json``, ``bounds_config.toml`` (atomically), ``bound_vs_observed.png`` and
    ``bound_terms.png`` (every route and variant decomposed into its terms) and, with the localised
    routes, ``localised_terms.png``.

    Returns:
        ``{"result": path, "bounds_config": path, "figure": path, "terms_figure": path}``.
    """
    out = Path(out_dir)
    result.setdefault("versions", versions())
    paths = {"result": atomic_write_text(out / "result.json", to_json(result)),
             "bounds_config": atomic_write_text(out / "bounds_config.toml", to_toml(bounds_config(result)))}
    paths["figure"] = plot_bound_vs_observed(result, out / "bound_vs_observed.png")
    if result.get("variants"):
        from numerics.studies.run._plot_terms import plot_bound_terms

        paths["terms_figure"] = plot_bound_terms(result, out / "bound_terms.png")
    if any(k.startswith("localised_") for k in result["routes"]):     # THEORY §6b (Choice): a figure of its own
        from numerics.studies.run._plot_localised import plot_localised_terms

        paths["localised_terms_figure"] = plot_localised_terms(result, out / "localised_terms.png")
    return paths


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return "—" if v is None else str(v)


def plot_bound_vs_observed(result: Mapping | str | Path, path: str | Path) -> Path:
    """Bar chart per route: the bound on ``L_test(f_new)`` vs the observed ``L_test(f_new)``,
    with ``L_test(f_old)`` as a line (a route certifies when its bar is below the line).

    Returns:
        The written PNG path.
    """
    res = load_result(result)
    plt = pyplot()
    names = [n for n in TEST_RISK_ROUTES if n in res["routes"]]
    bounds = [res["routes"][n]["bound"] for n in names]
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    xs = range(len(names))
    colors = ["tab:green" if res["routes"][n]["certified"] else "tab:red" for n in names]
    ax.bar([x - 0.2 for x in xs], bounds, width=0.4, color=colors, label="bound (green: certified)")
    ax.bar([x + 0.2 for x in xs], [res["L_test_new"]] * len(names), width=0.4, color="tab:blue",
           label="observed L_test(f_new)")
    ax.axhline(res["L_test_old"], color="k", ls="--", lw=1, label="L_test(f_old)")
    ax.set_xticks(list(xs), [f"{n}\n(Thm {2 if n == 'population' else 3})" for n in names])
    ax.set_ylabel("test loss")
    ax.set_title("bound vs observed test loss after insertion")
    ax.set_ylim(0, 1.3 * max(bounds + [res["L_test_old"], res["L_test_new"]]))
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    return save_figure(fig, path)
