"""Wrong versions of the localised certificates (THEORY §6b, **Choice**); each must be rejected.

Built by transforming the objects of :mod:`bounds.localised` (never re-typed), each with its
record and formula changed together so that only the ledger's tables
(:mod:`bounds.dependence`) and re-derivations (:mod:`proofs_check._localised_tails`) can
reject it. :data:`LOCALISED_MUTANT_SPECS` is appended to :data:`proofs_check.mutants.MUTANTS`.
"""
from __future__ import annotations

import dataclasses

import sympy as sp

from bounds import _symbols as s
from bounds import dependence as dep
from bounds import localised as loc
from bounds._statement import Premise

_t_S_dnew = sp.Symbol("t_S_dnew", positive=True)
_delta_S_dnew = sp.Symbol("delta_S_dnew", positive=True)


def _with_event(theorem, name: str, event):
    return tuple(event if e.name == name else e for e in theorem.events)


def _tail(theorem, name: str, **changes):
    e = theorem.event_map[name]
    return dataclasses.replace(e, tail=dataclasses.replace(e.tail, **changes))


def d_new_tail_on_S():
    """S-chain whose uniform step is a Bernstein tail on S for d_new with d_new's variance on S (d_new depends on S)."""
    T = loc.LOCALISED["localised_train_sure_bernstein"]
    ev = loc.difference_event("H_S_dnew", "bernstein", "S", "d_new", _t_S_dnew, _delta_S_dnew, loc.V_S_dnew)
    premises = tuple(Premise("tail_S_dnew", sp.Le(loc.D_new, loc.DS_new + _t_S_dnew),
                             "(wrong) one-function Bernstein tail on S for d_new", "H_S_dnew")
                     if p.name == "uniform_S" else p for p in T.premises)
    c = T.conclusion
    return T.replace(name="loc_d_new_tail_on_S", premises=premises,
                     events=tuple(e for e in T.events if e.name != "E_U") + (ev,),
                     conclusion=c.func(c.lhs, c.rhs - loc.U_S + _t_S_dnew),
                     failure_probability=T.failure_probability - loc.delta_U + _delta_S_dnew,
                     side_conditions=T.side_conditions + (_t_S_dnew > 0, _delta_S_dnew < 1))


def pop_tail_with_d_new_variance():
    """Paper-shaped chain whose Bernstein tail of d_pop on S uses the variance of d_new on S."""
    T = loc.LOCALISED["localised_paper_sure_bernstein"]
    dev = loc.bernstein_difference(s.M, loc.V_S_dnew, loc.delta_S_pop, s.n_grid)
    ev = _tail(T, "H_S_pop", variance=loc.V_S_dnew, deviation=dev)
    return T.replace(name="loc_pop_tail_with_d_new_variance", events=_with_event(T, "H_S_pop", ev))


def cap_after_S_unpaid():
    """S-chain (a) whose uniform term is paid at one cap (copies 1) though the cap may be chosen after S."""
    T = loc.LOCALISED["localised_train_sure_hoeffding"]
    return T.replace(name="loc_cap_after_S_unpaid", events=_with_event(T, "E_U", loc.uniform_event("sure", copies=1)))


def remainder_dropped():
    """S-chain (b) with U_S = nu e_G: the remainder term of the linearisation dropped."""
    T = loc.LOCALISED["localised_train_linearised_bernstein"]
    ev = _tail(T, "E_U", deviation=loc.nu * loc.e_G(loc.delta_G, s.n_grid))
    return T.replace(name="loc_remainder_dropped", events=_with_event(T, "E_U", ev))


def sigma2_on_S():
    """S-chain (b) with e_G at the plain mean of ||m phi^T||^2 on S (no level) instead of the signal sample's bound."""
    T = loc.LOCALISED["localised_train_linearised_bernstein"]
    p = loc.delta_G + loc.delta_q
    e = T.event_map["E_U"]
    ev = dataclasses.replace(e, probability=p, tail=dataclasses.replace(
        e.tail, variance=loc.sigma2_S, level=p, deviation=loc.linearised_uniform(s.n_grid, loc.sigma2_S)))
    return T.replace(name="loc_sigma2_on_S", events=_with_event(T, "E_U", ev),
                     failure_probability=T.failure_probability - loc.delta_sigma)


def range_other_cap():
    """S-chain whose tail of d_new on T uses r_d at half the cap (the grid's previous cap), not at nu_V."""
    T = loc.LOCALISED["localised_train_sure_hoeffding"]
    rng = dep.difference_range(s.nu_V / 2)
    ev = _tail(T, "H_T_diff", range=rng, deviation=loc.hoeffding_difference(s.K, loc.delta_T_d, s.n_grid, rng))
    return T.replace(name="loc_range_other_cap", events=_with_event(T, "H_T_diff", ev))


def bernstein_range_r_d():
    """S-chain with Maurer--Pontil's range term 7 r_d/(3(n-1)) (range r_d) for 14 r_d/(3(n-1)) (range 2 r_d)."""
    T = loc.LOCALISED["localised_train_exact_bernstein"]
    dev = loc.bernstein_difference(s.K, loc.V_T_dnew, loc.delta_T_d, s.n_grid, value_range=loc.RANGE / 2)
    return T.replace(name="loc_bernstein_range_r_d", events=_with_event(T, "H_T_diff", _tail(T, "H_T_diff",
                                                                                             deviation=dev)))


def exact_level_unpaid():
    """S-chain (c) whose E_U omits the level of the bound on ||Sigma_phi|| (delta_Sn) from its probability."""
    T = loc.LOCALISED["localised_train_exact_hoeffding"]
    p = T.event_map["E_U"].probability - loc.delta_Sn
    e = T.event_map["E_U"]
    ev = dataclasses.replace(e, probability=p, tail=dataclasses.replace(e.tail, level=p))
    return T.replace(name="loc_exact_level_unpaid", events=_with_event(T, "E_U", ev),
                     failure_probability=T.failure_probability - loc.delta_Sn)


def centred_plugin():
    """S-chain (b) whose e_G uses a plug-in centred variance on the signal sample (mean ||xi||^2 - ||G_n||^2, no level)."""
    T = loc.LOCALISED["localised_train_linearised_bernstein"]
    plug = sp.Symbol("sigma2_plugin_c", nonnegative=True)
    e = T.event_map["E_U"]
    ev = dataclasses.replace(e, tail=dataclasses.replace(e.tail, variance=plug,
                                                         deviation=loc.linearised_uniform(s.n_grid, plug)))
    return T.replace(name="loc_centred_plugin", events=_with_event(T, "E_U", ev))


def centred_range_b_xi():
    """S-chain (b) whose e_G's linear term uses ``||xi - E xi|| <= b_xi`` (the centred range is ``2 b_xi``)."""
    T = loc.LOCALISED["localised_train_linearised_bernstein"]
    L = sp.log(2 * s.n_grid / loc.delta_G)
    eG = 2 * loc.b_xi * L / (3 * s.M) + sp.sqrt(2 * loc.sigma2_ub * L / s.M)
    ev = _tail(T, "E_U", deviation=loc.nu * eG + loc.remainder(loc.delta_q, s.n_grid))
    return T.replace(name="loc_centred_range_b_xi", events=_with_event(T, "E_U", ev))


def trace_on_S():
    """S-chain (b) whose remainder uses the plain mean of ||phi||^2 on S (no level) for E||phi||^2."""
    T = loc.LOCALISED["localised_train_linearised_bernstein"]
    tr_S = sp.Symbol("tr_S", nonnegative=True)
    dev = loc.nu * loc.e_G(loc.delta_G, s.n_grid) + loc.remainder(loc.delta_q, s.n_grid, tr_S)
    p = T.event_map["E_U"].probability - loc.delta_tr
    e = T.event_map["E_U"]
    ev = dataclasses.replace(e, probability=p, tail=dataclasses.replace(e.tail, level=p, deviation=dev))
    return T.replace(name="loc_trace_on_S", events=_with_event(T, "E_U", ev),
                     failure_probability=T.failure_probability - loc.delta_tr)


#: ``(name, description, target, build)`` of each mutant (:class:`proofs_check.mutants.Mutant`).
LOCALISED_MUTANT_SPECS = (
    ("loc_d_new_tail_on_S", "a variance of d_new measured on S used in a (Bernstein) tail on S for d_new",
     "ledger/dependence/H_S_dnew", d_new_tail_on_S),
    ("loc_pop_tail_with_d_new_variance", "the tail of d_pop on S uses the variance of d_new on S",
     "ledger/dependence/H_S_pop", pop_tail_with_d_new_variance),
    ("loc_cap_after_S_unpaid", "the cap chosen after S without paying a grid (E_U at copies 1)",
     "ledger/dependence/E_U", cap_after_S_unpaid),
    ("loc_remainder_dropped", "the remainder term of (b) dropped: U_S = nu e_G", "ledger/tail/E_U",
     remainder_dropped),
    ("loc_sigma2_on_S", "sigma^2 estimated on S (plain mean, no level) instead of the signal sample",
     "ledger/tail/E_U", sigma2_on_S),
    ("loc_range_other_cap", "a difference range computed at another cap (nu_V/2) than the one used",
     "ledger/tail/H_T_diff", range_other_cap),
    ("loc_bernstein_range_r_d", "Bernstein on differences with range r_d (7 r_d/(3(n-1))) instead of 2 r_d",
     "ledger/tail/H_T_diff", bernstein_range_r_d),
    ("loc_exact_level_unpaid", "(c) with the level of the ||Sigma_phi|| bound left out of P(E_U)",
     "ledger/tail/E_U", exact_level_unpaid),
    ("loc_centred_plugin", "e_G at a plug-in centred variance (mean ||xi||^2 - ||G_n||^2 on the signal sample, no "
     "level for ||G_n||)", "ledger/tail/E_U", centred_plugin),
    ("loc_centred_range_b_xi", "e_G's Bernstein range term at ||xi - E xi|| <= b_xi (the centred range is 2 b_xi)",
     "ledger/tail/E_U", centred_range_b_xi),
    ("loc_trace_on_S", "(b)'s remainder at the plain mean of ||phi||^2 on S (no level) instead of the signal "
     "sample's bound on E||phi||^2", "ledger/tail/E_U", trace_on_S),
)
