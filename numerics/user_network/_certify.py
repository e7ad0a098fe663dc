"""``dc.certify_insertion``: would one block at ``site`` provably lower the test loss? (Paper A, THEORY §3-§6, §10).

Samples by role, independent and checked disjoint (:mod:`numerics.user_network._roles`):

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
evaluable). The localised routes of THEORY §6b (:mod:`numerics.user_network._localised`) need
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
from bounds.families import RESIDUAL_FAMILIES
from bounds.route_roles import annotate_row
from bounds.routes import Setup
from bounds.variant_routes import VariantInputs
from numerics.user_network._certify_notes import cert_notes, class_check, nothing_to_certify, phi_seen
from numerics.user_network._constants import after_block, from_constants
from numerics.user_network._data import as_stream
from numerics.user_network._gap import certificate_gap
from numerics.user_network._given_scan import check_given_scan
from numerics.user_network._insert import family_block
from numerics.user_network._loss import as_loss
from numerics.user_network._roles import check_disjoint
from numerics.user_network._routes import DEFAULT_ROUTE, TableInputs, default_text, evaluate_table, route_names, select_rows
from numerics.user_network._saturation import check_model, saturation
from numerics.user_network._scan import accumulate, eval_mode
from numerics.distributed import refuse as refuse_distributed
from numerics.residual_families import block_family
from numerics.sites import add_at_site

__all__ = ["Certificate", "certified_family", "certify_insertion"]
_class_check = class_check   # its former name (tests read it here)


@dataclasses.dataclass(frozen=True)
class Certificate:
    """The answer of :func:`depthcert.certify_insertion`.

    Attributes
    ----------
    certified : bool
        Whether the chosen ``route`` certifies (bound below ``L_test(f_old)`` at the level).
    route : str
        The chosen row (:data:`depthcert.DEFAULT_ROUTE` unless asked otherwise).
    bound : float or None
        Its bound on ``L_test(f_new)`` (None: not evaluable).
    rows : list of dict
        Every route of the table: ``route``, ``certified``, ``bound``, ``improvement`` (``L_T_old - bound``,
        with its sign; meaningful where certified), ``failure_probability``, ``missing``, ``message``; which
        samples it read: ``roles`` (per role of ``signal``, ``S``, ``T``, ``population``, ``monte_carlo``,
        ``probe``: the stage and what it read, or ``"not read"``), ``S_only`` (no statistic of ``T`` beyond its
        size and the sure range), ``T_statistics``; how much it certifies: ``realised_gain`` (``L_T_old -
        L_T_new`` of the trained ``f_new``), ``improvement_over_loss``, ``improvement_over_gain`` (None where
        the realised gain is ``<= 0``), ``negligible`` and ``share_note`` (:mod:`bounds.route_roles`).
    quantities : dict
        What each role sample measured (``L_T_old``, ``delta_R``, ``delta_erm``, ...).
    constants : dict
        The constants used (``B``, ``L_loss``, ``L_top``, ``kappa``, ``A_norm``).
    notes : list of str
        Which sample fixed what; the last: how much the chosen route certifies (its ``share_note``).
    M_needed : int or None
        The smallest ``|S|`` at which the chosen route would certify, every other statistic held at
        its measured value (None: no size would, with the terms that do not shrink named in ``gap``).
    n_needed_improvable : int or None
        The probe size at which the scan (of the signal sample, or the given one) would call the site improvable.
    M_needed_ratio : float or None
        ``M_needed / n_needed_improvable``: how many more samples the certificate needs than the scan.
    gap : dict
        Per route (also in each row) ``M_needed`` with each term's value and exponent in ``M``, and
        what the scan measured.

    Examples
    --------
    ``dc.certify_insertion`` returns one (its page runs it on a network); the record itself:

        >>> import depthcert as dc
        >>> row = {"route": "direct_route", "certified": False, "bound": 1.2, "missing": []}
        >>> cert = dc.Certificate(certified=False, route="direct_route", bound=1.2, rows=[row],
        ...                       quantities={"L_T_old": 0.7}, constants={"B": 5.0}, notes=[])
        >>> cert.bound > cert.quantities["L_T_old"], list(cert.table()["route"])   # a bound above the old loss
        (True, ['direct_route'])
    """

    certified: bool
    route: str
    bound: float | None
    rows: list
    quantities: dict
    constants: dict
    notes: list
    M_needed: float | None = None
    n_needed_improvable: int | None = None
    M_needed_ratio: float | None = None
    gap: dict = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        """The default certificate table: the paper's two routes and the route fixed before the data (the rest on request)."""
        return default_text(self)

    def table(self, routes=None):
        """``pandas.DataFrame``, one row per route (``missing`` lists the constants it lacks).

        ``routes``: None or ``"all"``: every row; ``"default"``: the paper's two and ``route`` (the chosen row); or a list of rows.
        """
        import pandas as pd

        return pd.DataFrame(select_rows(self.rows, routes, self.route))


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


def _signal(model, site, signal, loss, family, layout, seed, B, level, output=None, given=None):
    n = len(signal)
    if given is None:   # the signal sample's first 2/3 is the scan's; a given scan read its own samples
        scan = saturation(model, signal.part(0, 2 * n // 3), loss, sites=[site], layout=layout, seed=seed,
                          families=[family], batch_size=signal.batch_size, output=output)
    scan = given or scan
    block, beta = family_block(model, site, family, "jumpboard", scan)
    if beta is None or not float(block.V.detach().norm()) > 0:
        return scan, None, beta, {"n_signal": n, "scan_given": given is not None}   # no descent direction: nothing to certify
    held = signal if given is not None else signal.part(2 * n // 3, n)
    loss_fn = as_loss(loss, output)
    z = _losses(model, held, loss_fn) - _losses(model, held, loss_fn, site, block)
    dR = None if B is None else float(empirical_bernstein_lower(float(z.mean()), float(z.var()), z.numel(),
                                                                2 * B, level / 4))
    acc = accumulate(model, held, {site: block}, loss_fn)[site]   # ||Sigma_phi||'s bound (THEORY §6b (c))
    return scan, block, beta, {"delta_R": dR, "delta_R_hat": float(z.mean()), "n_signal": n, "scan_given": given is not None,
                               "dR_mean": float(z.mean()), "dR_var": float(z.var()), "n_held": z.numel(),
                               "rho_phi_held": acc.phi_max, "n_Sigma": acc.n,
                               "Sigma_top": float(torch.linalg.eigvalsh(acc.S_sum / max(acc.n, 1)).max())}


def _constants(loss, B, L_loss, L_top, kappa, A_norm=None) -> dict:
    if L_loss is None and loss == "cross_entropy":
        L_loss = math.sqrt(2.0)   # THEORY §1: sure for cross-entropy on any logits
    for name, v in (("B", B), ("L_loss", L_loss), ("L_top", L_top), ("kappa", kappa), ("A_norm", A_norm)):
        if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} == {v!r}, must be a finite number > 0 (or None: the routes needing it are listed as not evaluable).")
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


def certified_family(name: str):
    """The registered family (:data:`bounds.families.RESIDUAL_FAMILIES`) named ``name``, with a certificate block.

    Raises:
        ValueError: an unknown family, or one whose torch part gives no ``certificate_block`` (named).
    """
    fam = RESIDUAL_FAMILIES.get(name) if isinstance(name, str) else None
    if fam is None or block_family(name) is None or fam.torch.certificate_block is None:
        ok = [n for n, f in RESIDUAL_FAMILIES.items() if f.torch is not None and f.torch.certificate_block is not None]
        raise ValueError(f"family == {name!r}, must be one of {ok} (the registered families with a certificate "
                         "block: 'full' trains its features, which the API's ERM on V does not).")
    return fam


def _setup(q: dict, c: dict, level: float, fam) -> Setup:
    """The certificate's setup: the family's ``[block]`` from what the API measured on its tangent block.

    The API's own names (``L_T_old``, ``delta_erm``) and level split (``level / 4`` each); a run's quantities
    have theirs, built by :func:`numerics.studies.run.setup_of_quantities`."""
    return Setup(L_test_old=q["L_T_old"], delta_R=q["delta_R"], delta_erm=q["delta_erm"],
                 delta_test_R=q["delta_test_R"], M=q["M"], K=q["K"], delta=level / 4, delta_prime=level / 4,
                 B=c["B"], L_loss=c["L_loss"], family=fam.name, block=fam.torch.certificate_block(q, c),
                 delta_erm_S=q["delta_erm_S"], delta_R_failure=level / 4)


def certify_insertion(model, site: str, signal, S, T, loss="cross_entropy", level: float = 0.05, route=None, *,
                      B=None, L_loss=None, L_top=None, kappa=None, A_norm=None, rho_phi=None, layout=None,
                      seed: int = 0,
                      erm_steps: int = 20, batch_size: int = 256, output=None, constants=None,
                      family: str = "readout", scan=None) -> Certificate:
    """Certify (or not) that one block (by default a readout block) at ``site`` lowers the test loss (Paper A).

    From three independent samples by role (THEORY §3-§6, §10): ``signal`` fixes everything before
    ``S`` (the direction ``G``, the step, the cap, and a lower confidence bound on ``Delta_R``);
    ``S`` trains the block (the best on ``S`` of both jumpboards and ``erm_steps`` projected steps:
    ``Delta_ERM >= 0``); ``T`` measures the test losses. Every route of :data:`depthcert.ROUTES` is
    evaluated; a route whose constants are missing is listed as not evaluable, with what it lacks.

    Parameters
    ----------
    model : torch.nn.Module
        Any network (never changed).
    site : str
        One insertion site (a module path whose output is the residual stream).
    signal, S, T : data
        The role samples (any kind :func:`depthcert.saturation` takes), pairwise disjoint.
    loss : str or callable, default "cross_entropy"
        A name or a per-sample callable.
    level : float, default 0.05
        The largest acceptable failure probability of the certificate, in (0, 1).
    route : str or None, default None
        The row of the table that ``certified`` and ``bound`` report; None: :data:`depthcert.DEFAULT_ROUTE`
        (``"direct_route"``, Theorem 3, fixed before the data).
    B : float, keyword-only
        A bound on the loss (the range of every per-sample loss); None: the routes needing it are
        not evaluated.
    L_loss : float, keyword-only
        The loss's Lipschitz constant; None: ``sqrt(2)`` for cross-entropy.
    L_top : float, keyword-only
        The Lipschitz constant of the network above ``site``; None: not given.
    kappa : float, keyword-only
        The curvature constant of THEORY §6b(b); None: not given.
    A_norm : float, keyword-only
        ``||A||_2`` when the network above ``site`` is linear (``z = A h + c``): gives ``kappa`` for a
        named loss, and the exact localised routes.
    rho_phi : float, keyword-only
        A sure bound on the whole-state ``||phi||``; None: the largest value on the signal sample,
        checked on ``S``, ``T`` and the signal's held part (**Choice**).
    layout : str or None, keyword-only
        The site's state layout (None: inferred).
    seed : int, keyword-only, default 0
        Seed of the block's frozen features.
    erm_steps : int, keyword-only, default 20
        Projected gradient steps on ``S``.
    batch_size : int, keyword-only, default 256
        Samples per batch.
    output : int, str or callable, keyword-only
        For a model returning a tuple or a dict: the index, key or callable that picks the logits
        (as in :func:`depthcert.saturation`); None: the model returns the logits.
    constants : Constants, keyword-only
        The result of ``dc.constants(model, site, data)``: fills every constant not given here (given
        ones win), the sure ``rho_phi`` of the block's features and, for a block right below an affine
        head, ``B`` at the cap fixed on the signal sample.
    family : str, keyword-only, default "readout"
        The certified residual block family: any family of :data:`bounds.families.RESIDUAL_FAMILIES` whose
        torch part gives a ``certificate_block``. The scan, the jumpboards and the ERM use the features of
        its tangent space (:attr:`~bounds.families.ResidualFamily.tangent`); its ``certificate_block``
        states the block they produce as a member of the family's class (its ``[block]`` caps), and the
        setup carries the family's Rademacher term.
    scan : SaturationReport or None, keyword-only, default None
        None: the first 2/3 of ``signal`` is scanned here (``dc.saturation`` at ``site``) and fixes ``G``,
        ``beta``, ``V_pop``, the cap and the plug-in ``rho_phi``; the last 1/3 estimates ``Delta_R``. A report
        of :func:`depthcert.saturation`: its samples (probe and curvature sample) fix those instead and the
        whole ``signal`` estimates ``Delta_R``. Refused (named) unless it scanned this model as it is now (a
        checksum of every parameter and buffer; the architecture is not checked), ``site`` and the family's
        tangent family with the same named loss, and its samples share no row with ``signal``, ``S`` or ``T``;
        the scan's own ``seed``, ``layout`` and ``width`` are then used (``seed`` and ``layout`` here are not);
        the certificate's notes say which sample fixed what.

    Returns
    -------
    Certificate
        ``certified``, ``route`` and ``bound`` of the chosen row; ``table()``: every route with its
        bound, improvement, failure probability, missing constants and message.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, samples of two roles that share a row, an unknown route or family (named).

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
        >>> def draw(n, seed):                      # one independent sample per role
        ...     g = torch.Generator().manual_seed(seed)
        ...     x = torch.randn(n, 3, generator=g, dtype=torch.float64)
        ...     return x, (x[:, 0] > 0).long()
        >>> cert = dc.certify_insertion(net, "1", signal=draw(600, seed=1), S=draw(400, seed=2),
        ...                             T=draw(400, seed=3), B=5.0, L_top=5.0, erm_steps=2)
        >>> cert.route, isinstance(cert.certified, bool), len(cert.table()) == len(cert.rows)
        ('direct_route', True, True)
    """
    refuse_distributed("dc.certify_insertion", "its ERM on S, its evaluation on T and its signal scan are not split across ranks")
    _check_call(model, level, route)
    fam = certified_family(family)
    c = _constants(loss, **from_constants(constants, site, dict(B=B, L_loss=L_loss, L_top=L_top, kappa=kappa,
                                                                  A_norm=A_norm), rho_phi))
    roles = {k: as_stream(v, k, model, batch_size) for k, v in (("signal", signal), ("S", S), ("T", T))}
    hashes = check_disjoint(roles)
    if scan is not None:
        check_given_scan(scan, model, site, fam.tangent, roles, loss, hashes)
    loss_fn = as_loss(loss, output)
    scan, block, beta, q = _signal(model, site, roles["signal"], loss, fam.tangent, layout, seed, B, level, output, scan)
    if block is None:
        rows, notes = nothing_to_certify(route or DEFAULT_ROUTE)
        return Certificate(False, route or DEFAULT_ROUTE, None, rows, q, c, notes)
    rho_phi, c, q = after_block(constants, block, rho_phi, c, q, level)
    q.update(_measure_S_T(model, site, block, beta, roles["S"], roles["T"], loss_fn, erm_steps))
    q["rho_phi"] = rho_phi if rho_phi is not None else scan._stats[site].phi_max   # fixed before S and T
    q["rho_phi_exceeded"] = rho_phi is None and phi_seen(q) > q["rho_phi"]   # S, T and the signal's held part
    q["beta"], q["family"] = beta, fam.name
    inputs = VariantInputs(var_S_jump_pop=q["var_S_jump_pop"], var_T_new=q["var_T_new"], var_T_old=q["var_T_old"],
                           var_T_jump_S=q["var_T_jump_S"], phi_sq_sum=q["phi_sq_sum"])
    rows = class_check(evaluate_table(lambda: _setup(q, c, level, fam), level, TableInputs(inputs, q, loss), c), q)
    rows, gap = certificate_gap(rows, scan, site, lambda: _setup(q, c, level, fam), q, c, loss, level)
    rows = [annotate_row(r["route"], r, q["L_T_old"], q["L_T_new"], "signal") for r in rows]   # roles, how much
    row = _chosen(rows, route)
    return Certificate(bool(row["certified"]), row["route"], row["bound"], rows, q, c,
                       cert_notes(route, rho_phi, q) + [f"{row['route']}: {row['share_note']}"],
                       row["M_needed"], row["n_needed_improvable"], row["M_needed_ratio"], gap)


def _check_call(model, level: float, route) -> None:
    """Before any work: a model with parameters, a level in (0, 1), a known route (or None)."""
    check_model(model)
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level == {level!r}, must be in (0, 1).")
    names = route_names()
    if route is not None and names is not None and route not in names:
        raise ValueError(f"route == {route!r}, must be None or one of {sorted(names)}.")


def _chosen(rows: list, route) -> dict:
    row = next((r for r in rows if r["route"] == (route or DEFAULT_ROUTE)), None)
    if row is None:
        raise ValueError(f"route == {route!r}, must be None or one of {[r['route'] for r in rows]}.")
    return row
