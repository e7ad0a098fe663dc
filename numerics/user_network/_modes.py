"""What ``dc.saturation(curvature=..., suggest=...)`` measures, and a site's record from its parts (issue 38).

A site's record is its **scores** (:func:`scores`: from the scan alone -- projection scores, ``||G||``,
the betting test) and its **curvature** (``beta`` along ``-G`` and ``beta_natural`` along
``-G Sigma^+`` on the step sample, and the gains that use them: :func:`with_curvature`). The scan's
scores never depend on the curvature, so a call that measures less curvature (``"auto"``, ``"none"``)
or checks no insertion (``suggest=False``) keeps every score of the full call.
"""
from __future__ import annotations

import math

from numerics.user_network._verdict import gain_ucb, n_to_reject, n_to_saturate, verdict
from numerics.estimators import adaptive_test, site_projection_scores

__all__ = ["CURVATURE_MODES", "UNMEASURED", "check_modes", "mode_note", "model_verdict", "scores", "ucb_norm",
           "with_curvature"]

#: the values of ``dc.saturation(curvature=...)``: at every site (the default), only where it can change the
#: verdict, ``best_site`` or its ``predicted_gain`` (``"auto"``), or nowhere (``"none"``: the scan alone).
CURVATURE_MODES = ("all", "auto", "none")


def check_modes(curvature, suggest) -> bool:
    """``suggest`` resolved (None: True unless ``curvature == "none"``); ValueError on a bad value (named)."""
    if curvature not in CURVATURE_MODES:
        raise ValueError(f"curvature == {curvature!r}, must be one of {list(CURVATURE_MODES)}.")
    if suggest is None:
        return curvature != "none"
    if not isinstance(suggest, bool):
        raise ValueError(f"suggest == {suggest!r}, must be True, False or None.")
    if suggest and curvature == "none":
        raise ValueError("suggest == True with curvature == 'none', must be suggest=False or curvature in ['all', 'auto']: "
                         "the suggested insertion's site (best_site) is chosen by the curvature.")
    return suggest


#: a site's curvature fields when its curvature was not measured (``curvature="auto"`` / ``"none"``)
UNMEASURED = {"beta": None, "beta_natural": None, "gain_euclidean": None, "predicted_gain": None, "first_order_gain": None,
               "realised_gain": None, "beta_self_consistent": None}


def scores(site, block, acc, level_site: float) -> dict:
    """A site's scores from the scan alone (no curvature): projection scores, ``||G||`` and the betting test."""
    rec = {"site": site, "layout": block.layout, "d": block.d, "P": block.positions, "r": block.r, "n": acc.n}
    P = site_projection_scores(acc.G, acc.Sigma, block.slices, getattr(acc, "sigma_eig", None))
    rec.update({f"P_{f}": P.get(f) for f in ("linear", "affine", "readout", "block")}, P_all=P["all"])
    rec.update(G_sq=acc.u_statistic, G_norm=float(acc.G.norm()), AG_max=acc.ag_max, rho_phi=acc.phi_max)
    test = adaptive_test(acc, level_site)
    rec.update(log_wealth=test.statistic, threshold=test.threshold, reject=test.reject, b_violations=test.b_violations,
               sigma2=acc.x_sq / acc.n, _lower=test.lower_bound,
               n_to_reject=n_to_reject(test.statistic, acc.z.numel(), acc.chunk, level_site))
    return rec


def with_curvature(scores: dict, curv: dict, level_site: float, eps: float, R0) -> dict:
    """The site's record (the keys in their order since issue 26): its scores and the curvature's gains
    (``curv``: :func:`_curvature`'s dict, or :data:`UNMEASURED`: no upper bound, ``gain_ucb`` inf)."""
    s, beta = scores, curv["beta"]
    rec = {k: s[k] for k in ("site", "layout", "d", "P", "r", "n", "P_linear", "P_affine", "P_readout", "P_block", "P_all",
                             "G_sq", "G_norm", "AG_max", "rho_phi")}
    rec.update(curv, step_loss=curv.get("step_loss", R0))
    rec.update({k: s[k] for k in ("log_wealth", "threshold", "reject", "b_violations", "sigma2")})
    rec.update(certified_gain=min(s["_lower"]**2 / (2 * beta), R0) if beta and s["reject"] else 0.0,
               gain_ucb=gain_ucb(s["G_norm"], s["sigma2"], s["n"], level_site, beta),
               n_to_reject=s["n_to_reject"], n_to_saturate=n_to_saturate(s["G_norm"], s["sigma2"], level_site, beta, eps))
    return rec


def ucb_norm(scores: dict, level_site: float) -> float:
    return scores["G_norm"] + math.sqrt(max(scores["sigma2"], 0.0) / (scores["n"] * level_site))


def model_verdict(records: list, eps: float, curvature: str, rank_by: str | None = None) -> dict:
    """:func:`numerics.user_network._verdict.verdict` ranked by ``rank_by`` (None: ``RANKED_BY``, or ``"G_sq"`` with
    ``curvature="none"``), a site without curvature ranked below every measured one (``predicted_gain``
    None); with ``curvature="none"`` (**Choice**) the default ``best_site`` is the candidate with the largest
    ``G_sq`` (the unbiased estimate of ``||G||^2``; no gain is predicted)."""
    from numerics.user_network._ranking import check_rank_by

    rank_by = check_rank_by(rank_by, ["linear", "affine", "readout", "block"], curvature)
    out = verdict(records, eps, rank_by)
    best = next(r for r in records if r["site"] == out["best_site"])
    out["predicted_gain"] = best["predicted_gain"]
    return out


def mode_note(curvature: str, suggest: bool, records: list, ranked_by: str = "G_sq") -> list[str]:
    """What ``curvature=`` and ``suggest=`` left out (nothing with the defaults); ``ranked_by``: the report's."""
    notes = []
    partial = [r["site"] for r in records if r["gain_euclidean"] is None or r["predicted_gain"] is None]
    if curvature == "none":
        notes.append("curvature='none': no beta was measured; the verdict is 'improvable' where a site's test rejects "
                     "G = 0 (the gain is not compared with eps), else 'undetermined' (never 'saturated'); best_site "
                     f"is the candidate with the largest {ranked_by}; no gain is predicted or certified")
    elif partial:
        notes.append(f"curvature='auto': the sites {partial} lack beta or beta_natural (only what can change the verdict, "
                     "best_site and predicted_gain was measured); a site without beta has gain_ucb inf (no upper bound), "
                     "so the model's gain_ucb and n_needed_saturated are not those of curvature='all', and "
                     "certified_gain is the largest over the rejecting sites with beta")
    if not suggest:
        notes.append("suggest=False: no insertion was checked (insertion and suggestion None)")
    return notes


