"""``dc.certify_insertion``: would one block at ``site`` provably lower the test loss? (Paper A, THEORY §3-§6, §10).

Samples by role, independent and checked disjoint (:mod:`depthcert.api._roles`):

* ``signal`` -- everything fixed before ``S``: its first two thirds are scanned at ``site``
  (``G``, ``beta``, the features), giving the population jumpboard ``f~_pop`` (``V_pop``,
  Theorem 1's step) and the cap ``nu_V = 2 ||V_pop||`` (**Choice**); its last third
  estimates ``Delta_R = R(f_old) - R(f~_pop)`` by an empirical-Bernstein lower bound
  (:func:`bounds.confidence.empirical_bernstein_lower`, range ``2B``, at ``delta_R_failure``);
* ``S`` (``M`` samples) -- ``f~_S`` (``V_S = -eta G_S``, ``eta = 1/beta`` inside the cap) and
  ``f_new``, the best on ``S`` of ``V_pop``, ``V_S`` and ``erm_steps`` projected gradient steps
  (step ``1/beta``) in the ball ``||V|| <= nu_V``: ``Delta_ERM >= 0`` relative to both jumpboards;
* ``T`` (``K`` samples) -- ``L_test`` of ``f_old``, ``f~_S`` and ``f_new``, and their variances.

**Choice** (levels): ``delta = delta' = delta_R_failure = level / 4``. Constants: ``L_loss =
sqrt(2)`` for cross-entropy (sure, THEORY §1); ``B`` and ``L_top`` cannot be derived for an
arbitrary network and are the user's to give (routes without them are listed, not
evaluable). The localised routes of THEORY §6b (:mod:`depthcert.api._localised`) need
``kappa`` (or ``A_norm`` with a named loss) for (b), squared loss and ``A_norm`` for (c).

**Choice** (``rho_phi``): given, a sure bound; else the plug-in largest whole-state ``||phi||``
on the signal sample's scan (THEORY §10: the norm over all ``P`` positions) -- fixed before
``S`` and ``T``, so the class does not depend on them. ``S`` and ``T`` are then checked against
it (the event ``rho_phi_exceeded``: some ``||phi||`` on ``S`` or ``T`` above the plug-in): on that
event the class condition is known to fail and *no* route certifies (its rows say so); off it the
certificate is conditional on ``||phi|| <= rho_phi`` holding on the whole distribution (a plug-in
is no sure bound; said in the notes).
"""
from __future__ import annotations

import copy
import dataclasses
import math


import torch

from bounds.confidence import empirical_bernstein_lower
from bounds.routes import Setup
from bounds.variant_routes import VariantInputs
from depthcert.api._data import as_stream
from depthcert.api._insert import family_block
from depthcert.api._loss import as_loss
from depthcert.api._roles import check_disjoint
from depthcert.api._routes import DEFAULT_ROUTE, TableInputs, evaluate_table, route_names
from depthcert.api._saturation import check_model, saturation
from depthcert.api._scan import accumulate, eval_mode
from numerics.sites import add_at_site

__all__ = ["Certificate", "certify_insertion"]


@dataclasses.dataclass(frozen=True)
class Certificate:
    """``certified``/``bound`` of the chosen ``route``; ``rows``: every route of the table; ``quantities``:
    what each role sample measured; ``notes``: which sample fixed what."""

    certified: bool
    route: str
    bound: float | None
    rows: list
    quantities: dict
    constants: dict
    notes: list

    def table(self):
        """``pandas.DataFrame``, one row per route (``missing`` lists the constants it lacks)."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def _losses(model, stream, loss, site=None, block=None) -> torch.Tensor:
    """Per-sample losses ``(n,)`` float64 (CPU) of ``model`` (with ``block`` added at ``site``)."""
    out = []
    with torch.no_grad(), eval_mode(model):
        ctx = add_at_site(model, site, block) if block is not None else _null()
        with ctx:
            out = [loss(model(x), y).double().cpu() for x, y in stream]
    return torch.cat(out)


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _with_V(block, V):
    blk = copy.deepcopy(block)
    with torch.no_grad():
        blk.V.copy_(V)
    return blk


def _project(V: torch.Tensor, cap: float) -> torch.Tensor:
    norm = float(V.norm())
    return V * (cap / norm) if norm > cap else V


def _erm(model, site, block, S, loss, starts, beta, cap, steps):
    """``(V, R_S(V))``: the best on ``S`` of ``starts`` and projected gradient steps from the best start."""
    scored = [(float(_losses(model, S, loss, site, _with_V(block, V)).mean()), V) for V in starts]
    best_r, V = min(scored, key=lambda t: t[0])
    best = (best_r, V)
    blk = _with_V(block, V)
    for _ in range(steps):
        grad, total = torch.zeros_like(V), 0.0
        with eval_mode(model), add_at_site(model, site, blk):
            for x, y in S:
                values = loss(model(x), y)
                (g,) = torch.autograd.grad(values.sum() / len(S), blk.V)
                grad, total = grad + g, total + float(values.detach().double().sum())
        if total / len(S) < best[0]:
            best = (total / len(S), blk.V.detach().clone())
        with torch.no_grad():
            blk.V.copy_(_project(blk.V - grad / beta, cap))
    return best[1], best[0]


def _signal(model, site, signal, loss, family, layout, seed, B, level):
    n = len(signal)
    scan = saturation(model, signal.part(0, 2 * n // 3), loss, sites=[site], layout=layout, seed=seed,
                      families=[family], batch_size=signal.batch_size)
    block, beta = family_block(model, site, family, "jumpboard", scan)
    if beta is None or not float(block.V.detach().norm()) > 0:
        return scan, None, beta, {"n_signal": n}   # no descent direction: nothing to certify
    held = signal.part(2 * n // 3, n)
    z = _losses(model, held, as_loss(loss)) - _losses(model, held, as_loss(loss), site, block)
    dR = None if B is None else float(empirical_bernstein_lower(float(z.mean()), float(z.var()), z.numel(),
                                                                2 * B, level / 4))
    acc = accumulate(model, held, {site: block}, as_loss(loss))[site]   # ||Sigma_phi||'s bound (THEORY §6b (c))
    return scan, block, beta, {"delta_R": dR, "delta_R_hat": float(z.mean()), "n_signal": n,
                               "dR_mean": float(z.mean()), "dR_var": float(z.var()), "n_held": z.numel(),
                               "rho_phi_held": acc.phi_max, "n_Sigma": acc.n,
                               "Sigma_top": float(torch.linalg.eigvalsh(acc.S_sum / max(acc.n, 1)).max())}


def _constants(loss, B, L_loss, L_top, kappa, A_norm=None) -> dict:
    if L_loss is None and loss == "cross_entropy":
        L_loss = math.sqrt(2.0)   # THEORY §1: sure for cross-entropy on any logits
    for name, v in (("B", B), ("L_loss", L_loss), ("L_top", L_top), ("kappa", kappa), ("A_norm", A_norm)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} == {v!r}, must be a finite number > 0 (or None: the routes needing it are skipped).")
    return {"B": B, "L_loss": L_loss, "L_top": L_top, "kappa": kappa, "A_norm": A_norm}


def _measure_S_T(model, site, block, beta, S, T, loss, erm_steps):
    cap = 2.0 * float(block.V.detach().norm())
    acc = accumulate(model, S, {site: block}, loss)[site]
    G_S = acc.G.to(block.V.dtype)
    V_S = -_project(G_S / beta, cap) if float(G_S.norm()) > 0 else torch.zeros_like(G_S)
    V_pop = block.V.detach().clone()
    l_old, l_pop, l_jS = (_losses(model, S, loss, site, None if V is None else _with_V(block, V))
                          for V in (None, V_pop, V_S))
    V_new, R_new = _erm(model, site, block, S, loss, [V_pop, V_S], beta, cap, erm_steps)
    lT = {k: _losses(model, T, loss, site, None if V is None else _with_V(block, V))
          for k, V in (("old", None), ("jump_S", V_S), ("new", V_new))}
    q = {"M": len(S), "K": len(T), "nu_V": cap, "layout": block.layout, "d": block.d, "P": block.positions, "rho_phi_S": acc.phi_max,
         "phi_sq_sum": float(torch.trace(acc.S_sum)), "R_S_jump_pop": float(l_pop.mean()),
         "R_S_jump_S": float(l_jS.mean()), "R_S_new": R_new, "var_S_jump_pop": float(l_pop.var()),
         "R_S_old": float(l_old.mean()), "var_S_dpop": float((l_pop - l_old).var()), "r": int(block.V.shape[-1]),
         "var_T_dnew": float((lT["new"] - lT["old"]).var()),
         "rho_phi_T": accumulate(model, T, {site: block}, loss)[site].phi_max,
         **{f"L_T_{k}": float(v.mean()) for k, v in lT.items()}, **{f"var_T_{k}": float(v.var()) for k, v in lT.items()}}
    q["delta_erm"] = max(q["R_S_jump_pop"] - R_new, 0.0)
    q["delta_erm_S"] = max(q["R_S_jump_S"] - R_new, 0.0)
    q["delta_test_R"] = q["L_T_old"] - q["L_T_jump_S"]
    return q


def _setup(q: dict, c: dict, level: float) -> Setup:
    return Setup(L_test_old=q["L_T_old"], delta_R=q["delta_R"], delta_erm=q["delta_erm"],
                 delta_test_R=q["delta_test_R"], M=q["M"], K=q["K"], delta=level / 4, delta_prime=level / 4,
                 B=c["B"], L_loss=c["L_loss"], family="readout",
                 block={"d": q["d"], "L_top": c["L_top"], "rho_phi": q["rho_phi"], "nu_V": q["nu_V"]},
                 delta_erm_S=q["delta_erm_S"], delta_R_failure=level / 4)


def certify_insertion(model, site: str, signal, S, T, loss="cross_entropy", level: float = 0.05, route=None, *,
                      B=None, L_loss=None, L_top=None, kappa=None, A_norm=None, rho_phi=None, layout=None,
                      seed: int = 0,
                      erm_steps: int = 20, batch_size: int = 256) -> Certificate:
    """Certify (or not) that one readout block at ``site`` lowers the test loss (docstring of ``depthcert.api._certify``).

    Args:
        model: any ``nn.Module`` (never changed). site: one insertion site.
        signal, S, T: the role samples (any accepted kind of data; pairwise disjoint).
        loss: a name or a per-sample callable. level: the certificate's failure probability.
        route: a row name of the table (None: ``DEFAULT_ROUTE``, Theorem 3, fixed before the data).
        B, L_loss, L_top, kappa: the constants routes need (THEORY §1, §6b); None = not given.
        A_norm: ``||A||_2`` when ``f_top`` is linear (``z = A h + c``): ``kappa`` for a named loss, and (c).
        rho_phi: a sure bound on the whole-state ``||phi||``; None: the plug-in maximum on the signal
            sample, checked on S, T and the signal's held part (module docstring, **Choice**).

    Returns:
        A :class:`Certificate` (``table()``: every route evaluated, or the constants it lacks).

    Raises:
        TypeError, ValueError: bad arguments, overlapping roles, no descent direction (named).
    """
    check_model(model)
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level == {level!r}, must be in (0, 1).")
    names = route_names()
    if route is not None and names is not None and route not in names:   # before any work
        raise ValueError(f"route == {route!r}, must be None or one of {sorted(names)}.")
    c = _constants(loss, B, L_loss, L_top, kappa, A_norm)
    roles = {k: as_stream(v, k, model, batch_size) for k, v in (("signal", signal), ("S", S), ("T", T))}
    check_disjoint(roles)
    loss_fn = as_loss(loss)
    scan, block, beta, q = _signal(model, site, roles["signal"], loss, "readout", layout, seed, B, level)
    if block is None:
        return _nothing_to_certify(route or DEFAULT_ROUTE, q, c)
    q.update(_measure_S_T(model, site, block, beta, roles["S"], roles["T"], loss_fn, erm_steps))
    q["rho_phi"] = rho_phi if rho_phi is not None else scan._stats[site].phi_max   # fixed before S and T
    q["rho_phi_exceeded"] = rho_phi is None and _phi_seen(q) > q["rho_phi"]   # S, T and the signal's held part
    q["beta"] = beta
    inputs = VariantInputs(var_S_jump_pop=q["var_S_jump_pop"], var_T_new=q["var_T_new"], var_T_old=q["var_T_old"],
                           var_T_jump_S=q["var_T_jump_S"], phi_sq_sum=q["phi_sq_sum"])
    rows = _class_check(evaluate_table(lambda: _setup(q, c, level), level, TableInputs(inputs, q, loss), c), q)
    row = _chosen(rows, route)
    return Certificate(bool(row["certified"]), row["route"], row["bound"], rows, q, c, _cert_notes(route, rho_phi, q))


def _phi_seen(q: dict) -> float:
    """The largest ``||phi||`` on the samples the class must cover beyond the scan's part of the signal sample:
    ``S``, ``T`` and the signal's held third (``Delta_R``'s lower bound uses the class's range there)."""
    return max(q["rho_phi_S"], q["rho_phi_T"], q["rho_phi_held"])


def _class_check(rows: list, q: dict) -> list:
    """On the event ``rho_phi_exceeded`` (docstring of ``depthcert.api._certify``) no row certifies, and each says why."""
    if not q["rho_phi_exceeded"]:
        return rows
    why = (f"not certified: ||phi|| on S, T or the signal's held part (max {_phi_seen(q):.6g}) exceeds the plug-in "
           f"rho_phi = {q['rho_phi']:.6g} fixed on the signal sample (the class condition fails)")
    return [{**r, "certified": False, "message": why} for r in rows]


def _chosen(rows: list, route) -> dict:
    row = next((r for r in rows if r["route"] == (route or DEFAULT_ROUTE)), None)
    if row is None:
        raise ValueError(f"route == {route!r}, must be None or one of {[r['route'] for r in rows]}.")
    return row


def _nothing_to_certify(route: str, q: dict, c: dict) -> Certificate:
    note = "no first-order descent direction at the site on signal (G = 0 or slope <= 0): nothing to certify"
    rows = [{"route": route, "certified": False, "bound": None, "improvement": None,
             "failure_probability": None, "missing": [], "message": note}]
    return Certificate(False, route, None, rows, q, c, [note])


def _cert_notes(route, rho_phi, q) -> list[str]:
    return [f"route: {'the default, fixed before the data: ' if route is None else ''}{route or DEFAULT_ROUTE}",
            f"signal ({q['n_signal']} samples): first 2/3 fixed G, beta, V_pop and the cap nu_V = 2||V_pop||; "
            "last 1/3 estimated Delta_R (empirical-Bernstein lower bound at level/4)",
            f"S ({q['M']} samples): G_S, f~_S and f_new (ERM in the cap); T ({q['K']} samples): test losses",
            "rho_phi: " + ("given" if rho_phi is not None else "plug-in maximum of the whole-state ||phi|| on the "
                           "signal sample, fixed before S and T (not a sure bound: the certificate is conditional on "
                           f"it); checked on S, T and the signal's held part: {'EXCEEDED, nothing certifies' if q['rho_phi_exceeded'] else 'held'}"),
            "beta is a plug-in (curvature along -G on the signal's curvature part)"]



