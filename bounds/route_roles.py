"""Which sample fixed what in each route, and how much a certificate certifies (THEORY §6b "Which sample pays").

Every row of a certificate's route table (``dc.certify_insertion``'s ``Certificate.rows``,
``depthcert run``'s ``result.json`` ``routes``) is annotated here, by one code path
(:func:`annotate_row`), with

* ``roles``: per sample role (:data:`ROLE_ORDER`) the stage at which it was read and what the
  route read of it, or ``"not read"``. Derived from the route's theorem object (its one
  definition: :mod:`bounds.theorems`, :mod:`bounds.variants`, :mod:`bounds.localised`): the
  symbols its improvement ``L_test_old - bound`` and its failure probability read, each the
  quantity of one sample (:data:`MEASURED_ON`), and its events' tails;
* ``S_only``: true only where the route reads no statistic of ``T`` beyond its size ``K``
  (and the sure range, which is no statistic): a Bernstein tail on ``T`` reads ``T``'s variance,
  so such a route is a *train-and-test* route however small its ``T`` term;
  ``T_statistics`` lists what of ``T`` it read;
* ``realised_gain`` (``L_T_old - L_T_new``: the trained ``f_new`` on the same ``T``),
  ``improvement_over_loss`` (``improvement / L_T_old``) and ``improvement_over_gain``
  (``improvement / realised_gain``; None where that gain is ``<= 0``: undefined), beside the row's
  ``improvement = L_test_old - bound`` (with its sign; meaningful where certified); ``share_note``
  says it in words. **Choice**: a certified step below :data:`NEGLIGIBLE_SHARE` (1%) of the
  block's realised gain "covers a negligible step".
"""
from __future__ import annotations

import math

import sympy as sp

__all__ = ["MEASURED_ON", "NEGLIGIBLE_SHARE", "ROLE_ORDER", "STAGES", "annotate_row", "certified_share",
           "describe_roles", "explicit_roles", "merge_roles", "route_roles", "route_theorem", "theorem_roles"]

#: The sample roles a row names (:mod:`numerics.roles`), in order.
ROLE_ORDER = ("signal", "S", "T", "population", "monte_carlo", "probe")
#: When each role's sample is read.
STAGES = {"signal": "before S (fixes what the class and the levels need)",
          "S": "training (after the signal; f_new chosen on S)",
          "T": "test (after S, f_new fixed)",
          "population": "an independent Monte-Carlo sample",
          "monte_carlo": "sign draws, with S",
          "probe": "diagnostics only"}
#: The placeholder of ``Delta_R``'s role: the caller says which sample gave its lower bound.
DELTA_R = "<delta_R>"
#: Symbol name -> ``(role, what the route reads of that sample)``; every other symbol is a constant or a
#: level fixed before the data.
MEASURED_ON = {
    "L_test_old": ("T", "L_test(f_old), the bound's anchor (it cancels in the improvement)"),
    "K": ("T", "its size K"),
    "eps_K": ("T", "its size K (eps_K, a sure uniform deviation)"),
    "delta_test_R": ("T", "Delta_test^R = L_test(f_old) - L_test(f~_S) (means)"),
    "V_T_new": ("T", "the variance of f_new's losses (Bernstein tail)"),
    "V_T_old": ("T", "the variance of f_old's losses (Bernstein tail)"),
    "V_T_jump": ("T", "the variance of f~_S's losses (Bernstein tail)"),
    "V_T_dnew": ("T", "the variance of d_new = l(f_new) - l(f_old) (Bernstein tail)"),
    "M": ("S", "its size M"),
    "eps_M": ("S", "its size M (eps_M, a sure uniform deviation)"),
    "delta_erm": ("S", "Delta_ERM (the (C2) selection's means)"),
    "delta_train": ("S", "Delta_train = R_S(f_old) - R_S(f_new) (means)"),
    "delta_erm_pop": ("S", "Delta_ERM_pop = R_S(f~_pop) - R_S(f_new) (means)"),
    "V_S_jump": ("S", "the variance of f~_pop's losses (Bernstein tail)"),
    "V_S_dpop": ("S", "the variance of d_pop (Bernstein tail)"),
    "rad_S_jensen": ("S", "the empirical Rademacher bound of its features (Jensen)"),
    "rad_S_mc": ("monte_carlo", "the sign Monte Carlo's estimate of rad_S (E_MC)"),
    "rad_S_mc_err": ("monte_carlo", "its McDiarmid error"),
    "delta_R": (DELTA_R, "Delta_R's lower confidence bound (E_R)"),
    "R_old": ("population", "R(f_old)'s Monte-Carlo estimate (the bound's anchor)"),
    "nu_V": ("signal", "the cap nu_V (the ball)"),
    "rad_M": ("signal", "the cap in rad_M = nu_V sqrt(d) rho_phi / sqrt(M)"),
    "sigma2_ub": ("signal", "sigma^2's upper bound (or the sure b_xi^2)"),
    "tr_ub": ("signal", "E||phi||^2's upper bound (or the sure rho_phi^2)"),
    "Sigma_ub": ("signal", "||Sigma_phi||'s upper bound (or the sure rho_phi^2)"),
}
#: What every route's class reads of the signal sample (or the config), before ``S``.
SIGNAL_FIXES = "the direction, step and cap (f~_pop, the ball of V)"
#: What of ``T`` an S-only route may read: its size (the sure range is a constant, no statistic).
T_SIZE = ("K", "eps_K", "L_test_old")
#: **Choice**: a certified improvement below this share of the block's realised gain covers a negligible step.
NEGLIGIBLE_SHARE = 0.01
_TAIL_WORDS = {"hoeffding": "Hoeffding tail (size and sure range only)",
               "bernstein": "Bernstein tail (mean and variance)",
               "uniform": "uniform deviation (size and sure constants)",
               "uniform_empirical": "uniform deviation (empirical Rademacher of the sample)",
               "uniform_linearised": "uniform deviation (linearised)", "uniform_exact": "uniform deviation (exact)",
               "monte_carlo": "Monte-Carlo error of rad_S"}


def describe_roles(reads: dict) -> dict:
    """``{role: "stage: what; what"}`` for every role of :data:`ROLE_ORDER` (``"not read"`` where ``reads`` has none)."""
    out = {}
    for role in ROLE_ORDER:
        items = list(dict.fromkeys(reads.get(role, ())))
        out[role] = f"{STAGES[role]}: " + "; ".join(items) if items else "not read"
    if not reads.get("probe"):
        out["probe"] = "not read (diagnostics and the scan's n_needed only; they certify nothing)"
    return out


def _expressions(theorem):
    """The route's improvement (its anchor minus the bound, tails as their formulas) and failure probability."""
    sub = {e.tail.symbol: e.tail.deviation for e in theorem.events if e.tail is not None}
    bound = theorem.bound
    for _ in range(3):      # a tail's formula may use another tail's symbol
        bound = bound.subs(sub)
    anchor = next((sp.Symbol(n) for n in ("L_test_old", "R_old") if n in {x.name for x in bound.free_symbols}), 0)
    return sp.expand(anchor - bound), bound, theorem.failure_probability


def theorem_roles(theorem, delta_R_role: str = "signal") -> dict:
    """``{"roles", "S_only", "T_statistics"}`` of a route given as its theorem object (module docstring).

    Example:
        >>> from bounds.localised import LOCALISED
        >>> r = theorem_roles(LOCALISED["localised_train_linearised_bernstein"])
        >>> r["S_only"], r["T_statistics"]
        (False, ['V_T_dnew'])
        >>> theorem_roles(LOCALISED["localised_train_linearised_hoeffding"])["S_only"]
        True
    """
    improvement, bound, fail = _expressions(theorem)
    read = {x.name for x in improvement.free_symbols | fail.free_symbols}
    anchored = {x.name for x in bound.free_symbols} & {"L_test_old", "R_old"}
    reads: dict[str, list[str]] = {"signal": [SIGNAL_FIXES]}
    for name in sorted(read | anchored, key=lambda n: list(MEASURED_ON).index(n) if n in MEASURED_ON else 99):
        if name in MEASURED_ON:
            role, what = MEASURED_ON[name]
            reads.setdefault(delta_R_role if role == DELTA_R else role, []).append(what)
    for e in theorem.events:
        kind = e.tail.kind if e.tail is not None else "hoeffding" if e.hoeffding is not None else None
        if e.sample in ("S", "T") and kind is not None:
            reads.setdefault(e.sample, []).append(f"{e.name}: {_TAIL_WORDS[kind]}")
    t_stats = sorted(n for n in read if MEASURED_ON.get(n, ("",))[0] == "T" and n not in T_SIZE)
    return {"roles": describe_roles(reads), "S_only": not t_stats, "T_statistics": t_stats}


def route_theorem(name: str):
    """The statement of a route-table row or registered route (its first proof, :attr:`bounds.routes.Route.proof_chain`;
    ``None``: no route of the registry :data:`bounds.routes.REGISTRY`)."""
    from bounds.routes._route import route

    try:
        return route(name).proof_chain[0]
    except KeyError:
        return None


def route_roles(name: str, delta_R_role: str = "signal") -> dict | None:
    """:func:`theorem_roles` of the row ``name`` (None for a route registered outside the theorem objects)."""
    theorem = route_theorem(name)
    return None if theorem is None else theorem_roles(theorem, delta_R_role)


def explicit_roles(reads: dict, t_statistics: list) -> dict:
    """The roles of a row that is no theorem object (a baseline such as ``heldout_paired``), from what it reads."""
    return {"roles": describe_roles(reads), "S_only": not t_statistics, "T_statistics": sorted(t_statistics)}


def merge_roles(rows: list) -> dict:
    """The roles of a union of routes ("some route certifies"): every role each read; S-only iff each is."""
    reads: dict[str, list[str]] = {}
    for r in rows:
        for role, text in r["roles"].items():
            if not text.startswith("not read"):
                reads.setdefault(role, []).extend(text.split(": ", 1)[1].split("; "))
    t_stats = sorted({t for r in rows for t in r["T_statistics"]})
    return {"roles": describe_roles(reads), "S_only": all(r["S_only"] for r in rows), "T_statistics": t_stats}


def _pct(x: float) -> str:
    """A share as a percentage, or as a multiple where it is 10 times or more (either sign)."""
    return f"{100 * x:.3g}% of" if abs(x) < 10 else f"{x:.3g} times"


def certified_share(improvement, certified: bool, loss_old: float, loss_new: float) -> dict:
    """How much a row certifies: ``realised_gain``, ``improvement_over_loss``, ``improvement_over_gain``,
    ``negligible`` and ``share_note`` (module docstring).

    Example:
        >>> d = certified_share(5e-6, True, 0.04, 0.04 - 1e-3)
        >>> round(d["improvement_over_gain"], 6), d["negligible"], d["share_note"]
        (0.005, True, "the certificate covers a negligible step (0.5% of the block's realised gain)")
        >>> certified_share(5e-6, True, 0.04, 0.05)["improvement_over_gain"] is None
        True
    """
    gain = None if loss_old is None or loss_new is None else float(loss_old) - float(loss_new)
    if gain is None or improvement is None or not math.isfinite(float(improvement)):
        return {"realised_gain": gain, "improvement_over_loss": None, "improvement_over_gain": None,
                "negligible": None, "share_note": "not evaluable: no improvement or no realised gain to compare"}
    imp = float(improvement)
    over_loss = imp / float(loss_old) if float(loss_old) > 0 else None
    over_gain = imp / gain if gain > 0 else None
    negligible = bool(certified and over_gain is not None and over_gain < NEGLIGIBLE_SHARE)
    if over_gain is None:
        note = (f"the trained f_new realised no gain on T (L_T_old - L_T_new = {gain:.3g} <= 0): the ratio to the "
                "realised gain is undefined")
    elif negligible:
        note = f"the certificate covers a negligible step ({_pct(over_gain)} the block's realised gain)"
    elif certified:
        note = f"the certificate covers {_pct(over_gain)} the block's realised gain"
    else:
        note = f"not certified: improvement {imp:.3g} ({_pct(over_gain)} the block's realised gain)"
    return {"realised_gain": gain, "improvement_over_loss": over_loss, "improvement_over_gain": over_gain,
            "negligible": negligible, "share_note": note}


def annotate_row(name: str, row: dict, loss_old: float, loss_new: float, delta_R_role: str = "signal",
                 roles=None) -> dict:
    """``row`` plus ``roles``, ``S_only``, ``T_statistics`` (:func:`route_roles` of the row ``name``, or the
    given ``roles``) and :func:`certified_share`'s fields: the one path both ``certify_insertion`` and
    ``run`` take. A route registered outside the theorem objects gets ``roles`` None and says so."""
    r = roles if roles is not None else route_roles(name, delta_R_role)
    if r is None:
        r = {"roles": None, "S_only": None, "T_statistics": None,
             "roles_note": "not derived: a route registered outside this project's theorem objects"}
    share = certified_share(row.get("improvement"), bool(row.get("certified")), loss_old, loss_new)
    return {**row, **r, **share}
