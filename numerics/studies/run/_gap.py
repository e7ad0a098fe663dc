"""The gap in the run study: each route's ``M_needed`` beside the scan's ``n_needed_improvable``.

* ``n_needed_improvable`` (:func:`site_scan`): the saturation scan's betting test
  (:func:`numerics.estimators.adaptive_test`, 16 chunks, at the run's ``level``: one site) at the
  run's own site and block features (so its ``G`` is the certificate's), on a probe sample of its
  own (the role ``scan_probe``, :func:`scan_seed`, from ``seed``: fixed with the setup, independent of ``S``, ``T`` and the
  signal sample; ``min(sizes.population, SCAN_N)`` samples with sampled labels, as a user's
  probe would have: not the signal sample's exact ``y``-expectation), and the probe size at
  which it calls the site improvable (:func:`numerics.estimators.n_needed_improvable`: the
  wealth growing at its observed rate). A planning number about the site, computed once per
  stage 1 (it certifies nothing; no role of the certificate is used).
* ``M_needed`` (:func:`bounds.sample_size.localised_sizes`): per localised route, the smallest
  ``M`` at which the route's own bound certifies, every other statistic held at its measured
  value; Paper A's routes keep their closed-form ``min_M`` (:mod:`bounds.routes`).
* ``ratio = M_needed / n_needed_improvable`` (the target: at most 2).
"""
from __future__ import annotations

import torch

from numerics.studies.run._localised import once_per_fixed

__all__ = ["SCAN_N", "SCAN_CHUNKS", "localised_gap", "paper_gap", "scan_seed", "site_scan"]

#: The probe size of the scan and its betting chunks (those of ``dc.saturation``).
SCAN_N, SCAN_CHUNKS = 200_000, 16
@once_per_fixed
def site_scan(fixed) -> dict:
    """The betting test at the run's site on the probe sample and its ``n_needed_improvable`` (module docstring)."""
    return _scan(fixed)


def scan_seed(fixed) -> int:
    """The scan's probe stream: the role ``scan_probe`` (:mod:`numerics.roles`), derived from ``seed``, so one setup
    has one ``n_needed_improvable`` whichever draw of a validity study computes it first (the ``probe`` role
    follows ``data_seed``)."""
    from numerics.roles import SCAN_PROBE
    from numerics.seeding import role_seed

    return role_seed(SCAN_PROBE, int(fixed.cfg.seed))


def _scan(fixed) -> dict:
    from numerics.estimators import SiteAccumulator, activation_gradients_on_states, adaptive_test, n_needed_improvable

    blk, level = fixed.expanded.block, float(fixed.cfg.level)
    n = int(min(fixed.cfg.sizes.population, SCAN_N))
    acc = SiteAccumulator(blk.d, blk.r, n, SCAN_CHUNKS, None, device=blk.V.device)
    for x, y in fixed.task.sample_chunks(n, scan_seed(fixed)):
        with torch.no_grad():
            u = fixed.net.bottom(x, fixed.at)
        m = activation_gradients_on_states(fixed.expanded, u, y, fixed.loss)
        with torch.no_grad():
            phi = blk.features(u.reshape(u.shape[0], -1))
        acc.update(m.reshape(m.shape[0], 1, -1), phi.reshape(phi.shape[0], 1, -1))
    test = adaptive_test(acc, level)
    n_bet = int(acc.z.numel())
    return {"n_probe": acc.n, "sample": "the scan_probe role's own sample (from seed), labels sampled", "level": level,
            "n_chunks": SCAN_CHUNKS, "log_wealth": test.statistic, "threshold": test.threshold,
            "improvable": bool(test.reject), "n_bet": n_bet,
            "rate_per_sample": test.statistic / n_bet if n_bet else None,
            "G_norm_probe": float(acc.G.norm()), "sigma2_probe": acc.x_sq / acc.n,
            "lower_bound_G": test.lower_bound, "b_violations": test.b_violations,
            "n_needed_improvable": n_needed_improvable(test.statistic, n_bet, level, SCAN_CHUNKS),
            "definition": "probe size at which the scan's betting test (16 chunks, level = the run's level, one "
                          "site) reaches ln(1/level), its wealth growing at the observed rate log W / n_bet "
                          "(numerics.estimators.n_needed_improvable)"}


def localised_gap(fixed, setup, report, *, terms: bool = True) -> dict:
    """``{"scan", "n_needed_improvable", "routes": {name: M_needed record + ratio}}`` of one draw's localised routes."""
    from bounds.sample_size import localised_sizes, size_ratio

    scan = site_scan(fixed)
    n_imp = scan["n_needed_improvable"]
    sizes = localised_sizes(setup, report.level, list(report.routes), terms=terms)
    routes = {}
    for name, sz in sizes.items():
        routes[name] = {**sz.to_dict(), "n_needed_improvable": n_imp, "ratio": size_ratio(sz.M_needed, n_imp)}
    return {"n_needed_improvable": n_imp, "scan": scan, "routes": routes,
            "held": "every statistic measured on S, T and the signal sample held at its measured value; only M varies"}


def paper_gap(routes: dict, n_imp) -> dict:
    """Paper A's routes (``population``, ``direct``): ``M_needed = ceil(min_M)`` of :mod:`bounds.routes` and the ratio."""
    import math

    from bounds.sample_size import size_ratio

    out = {}
    for name in ("population", "direct"):
        r = routes.get(name)
        if r is None:
            continue
        m = r.get("min_M")
        need = None if m is None else float(math.ceil(m))
        out[name] = {"M_needed": need, "method": "closed_form (bounds.routes min_M)", "n_needed_improvable": n_imp,
                     "ratio": size_ratio(need, n_imp)}
    return out
