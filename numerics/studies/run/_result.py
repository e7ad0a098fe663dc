"""The ``result.json`` content of one run, assembled from its stages (no computation here)."""
from __future__ import annotations

from typing import Mapping

import dataclasses

from plumbing.results import StudyResult
from numerics.studies.run._draw import DELTA_R_LEVEL, Certificate, Evaluation, SampleGroup, Selection
from numerics.studies.run._stages import Fixed

__all__ = ["DRAWN_WITH_DATA_KEYS", "FIXED_BEFORE_DATA_KEYS", "RunResult", "annotate_routes", "assemble", "route_dicts",
           "variants_section"]


@dataclasses.dataclass(frozen=True)
class RunResult(StudyResult):
    """One run's ``result.json`` as a typed record (:func:`numerics.studies.run.run`).

    Attributes:
        L_test_old, L_test_new: test losses of ``f_old`` and ``f_new`` on ``T``.
        R_old, R_new: their Monte-Carlo population risks.
        any_certified: "some route certifies" (``routes.any.certified``).
        level: the config's level.
        data: the whole content (``to_dict()``: what ``result.json`` holds).
    """

    L_test_old: float = 0.0
    L_test_new: float = 0.0
    R_old: float = 0.0
    R_new: float = 0.0
    any_certified: bool = False
    level: float = 0.0

#: Config keys fixed before ``S`` and ``T`` are drawn (the roles of ``seed``, and every size
#: and setting: a config is written before any data exists).
FIXED_BEFORE_DATA_KEYS = ("seed", "task", "model", "reference", "insertion", "block_training", "sizes", "level",
                          "variants")
#: Config keys whose random draws come with or after ``S`` and ``T`` (the roles of ``data_seed``).
DRAWN_WITH_DATA_KEYS = ("data_seed",)
#: Quantities computed before ``S`` and ``T`` are drawn (identical across data seeds).
FIXED_QUANTITIES = ("B", "L_loss", "L_top_certified", "nu_V", "rho", "rho_phi", "extra_head_input", "G_norm",
                    "beta", "eta", "eta_capped", "delta_R_lower", "delta_R_lower_optimal_step")


def _route(route, observed: float) -> dict:
    d = route.to_dict()
    d["observed"] = observed
    d["observed_minus_bound"] = None if d["bound"] is None else observed - d["bound"]
    return d


def route_dicts(cert: Certificate, L_test_new: float, R_new: float, R_new_stderr: float) -> dict:
    """``routes.{population, direct, any, population_risk}`` of ``result.json``, then every THEORY §6
    variant under its own name (same fields as ``population``, plus ``origin``, ``terms``, ``levels``)
    and ``any_with_variants`` ("some route certifies" over all of them, :mod:`bounds.route_choice`)."""
    rep = cert.report
    pop_risk = _route(rep.population_risk, R_new)
    pop_risk["observed_stderr"] = R_new_stderr
    pop_risk["observed_is"] = "Monte-Carlo estimate of R(f_new) on the population sample"
    out = {"population": _route(rep.population, L_test_new), "direct": _route(rep.direct, L_test_new),
           "any": rep.any_route.to_dict(), "population_risk": pop_risk}
    if cert.variants is not None:
        out.update({name: _route(r, L_test_new) for name, r in cert.variants.variants.items()})
        out["any_with_variants"] = cert.variants.any_route.to_dict()
    return out


#: The rows that are unions of other rows ("some route certifies"): their roles are the union of the included ones.
_UNIONS = ("any", "any_with_variants")


def annotate_routes(result: dict) -> dict:
    """Every row of ``result["routes"]`` with the samples it read (``roles``, ``S_only``) and how much it
    certifies against the trained ``f_new``'s realised gain on ``T`` (:func:`bounds.route_roles.annotate_row`,
    the path ``dc.certify_insertion`` takes too); ``Delta_R``'s lower bound is the population sample's here.
    ``population_risk`` (a bound on ``R(f_new)``) is measured against the Monte-Carlo ``R(f_old) - R(f_new)``."""
    from bounds.route_roles import annotate_row, merge_roles

    routes = result["routes"]
    for name, row in list(routes.items()):
        if name in _UNIONS or not isinstance(row, dict):
            continue
        old, new = (result["R_old"], result["R_new"]) if name == "population_risk" else (result["L_test_old"],
                                                                                         result["L_test_new"])
        given = {k: row[k] for k in ("roles", "S_only", "T_statistics")} if "roles" in row else None   # its own
        routes[name] = annotate_row(name, row, old, new, "population", roles=given)
    for name in _UNIONS:
        if name in routes:
            included = [routes[k] for k, on in routes[name].get("routes_included", {}).items() if on and k in routes]
            merged = merge_roles([r for r in included if r.get("roles") is not None]) if included else None
            routes[name] = {**routes[name], **(merged or {})}
    return result


def variants_section(cert: Certificate) -> dict | None:
    """``variants`` of ``result.json``: the paper routes' terms, skipped variants, notes, the route fixed
    before the data (``use``) and the measured inputs (the ``[variants]`` table of ``bounds_config.toml``)."""
    if cert.variants is None:
        return None
    d = cert.variants.to_dict()
    keys = ("var_S_jump_pop", "var_T_new", "var_T_old", "var_T_jump_S", "rad_hat", "rad_hat_mc_error", "delta_mc",
            "n_draws", "phi_sq_sum", "rad_S_jensen")
    inputs = {k: cert.quantities[k] for k in keys if k in cert.quantities}
    return {"names": list(d["routes"]), "skipped": d["skipped"], "paper_terms": d["paper_terms"], "notes": d["notes"],
            "use": d["use"], "inputs": inputs}


def _theorem1(q: Mapping) -> dict:
    capped = bool(q["eta_capped"])
    return {"eta": q["eta"], "capped": capped, "beta": q["beta"], "G_norm": q["G_norm"],
            "guaranteed_gain_at_step": q["delta_R_lower"],
            "statement": ("Delta_R >= eta (1 - beta eta / 2) ||G||^2 at the capped step eta = nu_V/||G|| < 1/beta"
                          if capped else "Delta_R >= ||G||^2 / (2 beta) at eta = 1/beta"),
            "gain_at_optimal_step": q["delta_R_lower_optimal_step"],
            "optimal_step_applies": not capped, "jumpboard_risk_bound": q["jumpboard_risk_bound"],
            "guaranteed_gain_is": ("an estimate: Theorem 1 evaluated at G and beta measured on the signal sample "
                                   "(sizes.population points, exact y-expectation, fixed before S and T); it carries "
                                   "that sample's Monte-Carlo error and no confidence level"),
            "measured_gain": q["delta_R_hat"], "measured_gain_stderr": q["delta_R_stderr"]}


def _notes(report, q: Mapping) -> list[str]:
    notes = list(report.notes) + [
        f"delta_R fed to Theorem 2 is the empirical-Bernstein lower bound on the Monte-Carlo estimate at level "
        f"{DELTA_R_LEVEL:g} (paired differences in [-B, B]); that level is included in the population route's "
        "failure probability (event E_R).",
        "roles fixed before S and T (teacher, reference, insertion features, f~_pop's signal sample) come from "
        "`seed`; S, T, the Monte-Carlo sample, block training and the probe from `data_seed` (numerics.seeding).",
        (f"caps chosen after training from a grid of {q['n_grid']} caps (ratio {q['cap_ratio']:g}, largest "
         f"{q['nu_V_max']:.4g}): the smallest holding f_new and both jumpboards, nu_V = {q['nu_V']:.4g}; delta and "
         "delta' are split over the grid (union bound)." if q.get("n_grid", 1) > 1 else
         "nu_V fixed before S is drawn (nu_V = insertion.output_cap / (L_top rho_phi)), so no cap grid (n_grid = 1)."),
        "f_new is the (C2) selection over {trained block, f~_S, f~_pop}: Delta_ERM >= 0 for both routes.",
        "routes.any is the claim 'some route certifies': the union of the failure events of the routes whose own "
        "failure probability is <= level (decided before S and T), shared events (E_S) counted once; "
        "any_certified is routes.any.certified.",
        "routes.population_risk bounds R(f_new) (population) by R(f_old) - Delta_R - Delta_ERM + 2 eps_M with the "
        "Monte-Carlo estimate of R(f_old); its observed value is the Monte-Carlo estimate of R(f_new).",
        "routes.<variant> (population_tight_*, direct_tight_*) are this project's THEORY §6 variants (Choice, not "
        "Paper A's), each valid alone for a route fixed before the data ([variants] use); routes.any_with_variants is "
        "'some route certifies' over the paper's routes and every variant: every level times one factor fixed before "
        "the data so that the union of their distinct events fits the level (bounds.route_choice).",
    ]
    if q["eta_capped"]:
        notes.append("the jumpboard step is capped (eta = nu_V/||G|| < 1/beta): Theorem 1 guarantees "
                     "eta (1 - beta eta / 2) ||G||^2 (delta_R_lower), not ||G||^2/(2 beta).")
    if not q["beta_self_consistent"]:
        notes.append("beta iteration did not converge: Theorem 1's lower bound is not certified.")
    return notes


def assemble(fixed: Fixed, group: SampleGroup, sel: Selection, ev: Evaluation, cert: Certificate,
             extras: Mapping, timings: Mapping) -> dict:
    """The run's result dict (``extras``: diagnostics, ``L_top_empirical``)."""
    q = {**cert.quantities, "L_top_empirical": extras["L_top_empirical"]}
    L, R_S, R = ev.L_test, {k: float(v[0]) for k, v in sel.R_S.items()}, ev.R
    risks = {**{f"R_S_{k}": R_S[k] for k in ("old", "new", "jump_pop", "jump_S")},
             **{f"L_test_{k}": L[k] for k in ("old", "new", "jump_pop", "jump_S")}, **R,
             "delta_R_hat": ev.delta_R_hat, "delta_R_stderr": ev.delta_R_stderr}
    routes = route_dicts(cert, L["new"], R["R_new"], R["R_new_stderr"])
    st = group.streams[0]
    train = sel.train
    return {
        "L_test_old": L["old"], "L_test_new": L["new"], "R_old": R["R_old"], "R_new": R["R_new"],
        "R_old_stderr": R["R_old_stderr"], "R_new_stderr": R["R_new_stderr"],
        "quantities": q, "risks": risks, "theorem1": _theorem1(q),
        "eps_M": q["eps_M"], "eps_K": q["eps_K"], "level": cert.report.level,
        "routes": routes, "any_certified": bool(routes["any"]["certified"]),
        "variants": variants_section(cert),
        "training": {"block": {"R_S_trained": R_S["trained"], "R_S_jumpboards": [R_S["jump_S"], R_S["jump_pop"]],
                               "R_S_new": R_S["new"], "returned": sel.returned[0],
                               "jumpboard_returned": sel.returned[0] != "trained",
                               "delta_erm": [R_S["jump_S"] - R_S["new"], R_S["jump_pop"] - R_S["new"]]},
                     "jumpboards": ["f~_S", "f~_pop"], "block_final_loss": R_S["trained"],
                     "block_projections": int(train.projections[0]),
                     "reference_final_loss": fixed.reference.final_loss},
        "diagnostics": extras.get("diagnostics"),
        "streams": st.used(),
        "fixed_before_data": {"config_keys": list(FIXED_BEFORE_DATA_KEYS), "roles": st.fixed_before_data(),
                              "quantities": list(FIXED_QUANTITIES)},
        "drawn_with_data": {"config_keys": list(DRAWN_WITH_DATA_KEYS), "roles": st.drawn_with_data(),
                            "note": "every config key's value is fixed before S and T (data_seed's too); the roles of "
                                    "data_seed are drawn with them: S (sizes.M), T (sizes.K), the Monte-Carlo sample "
                                    "(sizes.population), block training's batches, the probe, the sign Monte Carlo"},
        "timings": dict(timings),
        "notes": _notes(cert.report, q),
        "config": fixed.cfg.to_dict(),
    }
