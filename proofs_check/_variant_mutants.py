"""Wrong versions of the tighter variants (THEORY §6, **Choice**); each must be rejected.

Built by transforming the objects of :mod:`bounds.variants` (never re-typed). The first
ones are the mistakes the variants invite: a one-function tail for a function that depends
on its sample (``f_new`` or ``f~_S`` on ``S``), a one-sided uniform term used in both
directions, a tail on ``T`` computed with the training size, a wrong Bernstein constant, a
level left out of the union bound, the cap grid or the Monte-Carlo error not paid. The
``*_consistently``/``declared``/``relabelled`` ones change a record and its formula
together (or the theorem's own dependence data), so that only the tables of
:mod:`bounds.dependence` can reject them.
:data:`VARIANT_MUTANT_SPECS` is appended to :data:`proofs_check.mutants.MUTANTS`.
"""
from __future__ import annotations

import dataclasses

import sympy as sp

from bounds import _symbols as s
from bounds import variants as v
from bounds._statement import Event, Hoeffding, Tail
from bounds.theorems import THEOREM_2_GENERAL

_t_S_new = sp.Symbol("t_S_new", positive=True)
_delta_S_new = sp.Symbol("delta_S_new", positive=True)
_t_S_jump_S = sp.Symbol("t_S_jumpS", positive=True)
_delta_S_jump_S = sp.Symbol("delta_S_jumpS", positive=True)


def _premise(theorem, name: str, **changes):
    return tuple(dataclasses.replace(p, **changes) if p.name == name else p for p in theorem.premises)


def _events(theorem, name: str, event: Event | None = None, **tail_changes):
    """The events with ``name`` replaced by ``event`` (or its tail changed)."""
    out = []
    for e in theorem.events:
        if e.name == name:
            e = event if event is not None else dataclasses.replace(e, tail=dataclasses.replace(e.tail, **tail_changes))
        out.append(e)
    return tuple(out)


def _fixed_tail_event(name, function, symbol, level) -> Event:
    dev = v.hoeffding_deviation(s.M, level)
    return Event(name, level, f"(wrong) one-sided Hoeffding for {function} on S", sample="S", functions=(function,),
                 tail=Tail("hoeffding", symbol, dev, s.M, level, s.B))


def _conclusion(theorem, old, new):
    c = theorem.conclusion
    return c.func(c.lhs, sp.expand(c.rhs - old + new))


def fixed_tail_f_new_on_S(variant: str = "population_tight_hoeffding"):
    """``variant`` with a one-function Hoeffding tail for f_new on S (f_new depends on S) for its uniform step.

    The premise ``R(f_new) <= R_S(f_new) + eps`` becomes ``... + t_S_new`` on an event
    ``H_S_new`` at level ``delta_S_new``; the bound pays ``t_S_new`` for that step instead of
    ``eps``; in the population variants ``E_S`` is then used by no premise and its level
    leaves the failure probability. Everything else stays consistent, so only the
    dependence check can reject it.
    """
    T = v.VARIANTS[variant]
    route = v.VARIANT_SPECS[variant][0]
    computed = v.eps_M1 if route == "population" else s.eps_M
    ev = _fixed_tail_event("H_S_new", "f_new", _t_S_new, _delta_S_new)
    fail = T.failure_probability + _delta_S_new - (s.delta if route == "population" else 0)
    return T.replace(
        name=f"{variant}/fixed_tail_f_new_on_S",
        premises=_premise(T, "uniform_S_new", relation=sp.Le(s.R_new, s.RS_new + _t_S_new), event="H_S_new"),
        events=T.events + (ev,), conclusion=_conclusion(T, computed, _t_S_new), failure_probability=fail,
        side_conditions=T.side_conditions + (_t_S_new > 0, _delta_S_new < 1))


def fixed_tail_f_new_on_S_population():
    """The population variant (Hoeffding, closed form) with a one-function tail for f_new on S."""
    return fixed_tail_f_new_on_S("population_tight_hoeffding")


def fixed_tail_jump_S_on_S():
    """Direct variant with a one-function Hoeffding tail on S for ``f~_S`` (which depends on S)."""
    T = v.DIRECT_TIGHT_HOEFFDING
    premise, t, lvl, ev_name = "uniform_S_jump", _t_S_jump_S, _delta_S_jump_S, "H_S_jumpS"
    rel = next(p.relation for p in T.premises if p.name == premise)
    ev = _fixed_tail_event(ev_name, "f~_S", t, lvl)
    return T.replace(
        name="dv_fixed_tail_jump_S_on_S",
        premises=_premise(T, premise, relation=rel.func(rel.lhs, rel.rhs - s.eps_M + t), event=ev_name),
        events=T.events + (ev,), conclusion=_conclusion(T, s.eps_M, t),
        failure_probability=T.failure_probability + lvl, side_conditions=T.side_conditions + (t > 0, lvl < 1))


def two_sided_paid_one_sided():
    """Direct variant whose uniform term is paid one-sided (ln(1/delta)) though both directions are used."""
    T = v.DIRECT_TIGHT_HOEFFDING
    dev = v.uniform_deviation(s.M, s.delta, v.rad_M, sides=1, copies=s.n_grid)
    return T.replace(name="dv_two_sided_paid_one_sided", events=_events(T, "E_S", sides=1, deviation=dev))


def tail_T_new_with_M():
    """Direct variant whose tail for f_new on T is computed with the training size M for K."""
    T = v.DIRECT_TIGHT_HOEFFDING
    return T.replace(name="dv_tail_T_new_with_M",
                     events=_events(T, "H_T_new", n=s.M, deviation=v.hoeffding_deviation(s.M, v.delta_T_new)))


def bernstein_constant():
    """Population Bernstein variant with 7B/(6(n-1)) for 7B/(3(n-1)) in the tail of f_new on T."""
    T = v.POPULATION_TIGHT_BERNSTEIN
    log = sp.log(2 / v.delta_T_new)
    dev = sp.sqrt(2 * v.V_T_new * log / s.K) + 7 * s.B * log / (6 * (s.K - 1))
    return T.replace(name="pv_bernstein_constant", events=_events(T, "H_T_new", deviation=dev))


def bernstein_one_log():
    """Population Bernstein variant with ln(1/delta) for ln(2/delta) (variance estimate not paid)."""
    T = v.POPULATION_TIGHT_BERNSTEIN
    dev = v.bernstein_deviation(s.K, v.V_T_old, 2 * v.delta_T_old)   # ln(2/(2 delta)) = ln(1/delta)
    return T.replace(name="pv_bernstein_one_log", events=_events(T, "H_T_old", deviation=dev))


def hoeffding_quarter():
    """Population variant with t = B sqrt(ln(1/delta)/(4n)) for f~_pop on S (the tail is sqrt(delta))."""
    T = v.POPULATION_TIGHT_HOEFFDING
    dev = s.B * sp.sqrt(sp.log(s.n_grid / v.delta_S_jump) / (4 * s.M))
    return T.replace(name="pv_hoeffding_quarter", events=_events(T, "H_S_jump", deviation=dev))


def grid_not_paid():
    """Population variant whose tail for f~_pop on S ignores the cap grid (n_grid copies)."""
    T = v.POPULATION_TIGHT_HOEFFDING
    return T.replace(name="pv_grid_not_paid",
                     events=_events(T, "H_S_jump", deviation=v.hoeffding_deviation(s.M, v.delta_S_jump)))


def empirical_two_B():
    """Empirical population variant with 2B for the Bartlett-Mendelson 3B confidence term."""
    T = v.VARIANTS["population_tight_hoeffding_empirical"]
    e = T.event_map["E_S"].tail
    dev = e.deviation - s.B * sp.sqrt(sp.log(2 * s.n_grid / s.delta) / (2 * s.M))
    mc = T.event_map["E_MC"].tail
    events = _events(T, "E_S", deviation=dev)
    events = tuple(dataclasses.replace(x, tail=dataclasses.replace(mc, deviation=dev.subs(v.rad_S, mc.estimate)))
                   if x.name == "E_MC" else x for x in events)
    return T.replace(name="pv_empirical_two_B", events=events)


def no_symmetrisation():
    """Population variant with rad_M for 2 rad_M (symmetrisation factor dropped)."""
    T = v.POPULATION_TIGHT_HOEFFDING
    e = T.event_map["E_S"].tail
    dev = e.deviation - sp.sqrt(2) * s.L_loss * s.L_top * v.rad_M
    return T.replace(name="pv_no_symmetrisation", events=_events(T, "E_S", deviation=dev))


def mc_error_dropped():
    """Empirical population variant whose computed cost uses the Monte-Carlo value without its error."""
    T = v.VARIANTS["population_tight_hoeffding_empirical"]
    dev = T.event_map["E_S"].tail.deviation.subs(v.rad_S, v.rad_S_mc)
    return T.replace(name="pv_mc_error_dropped", events=_events(T, "E_MC", deviation=dev))


# ---- wrong data declared consistently: only the tables of bounds.dependence can reject these
def declared_f_new_independent():
    """f_new's one-function tail on S, with the theorem declaring f_new independent of S."""
    T = fixed_tail_f_new_on_S("population_tight_hoeffding")
    return T.replace(name="pv_declared_f_new_independent",
                     functions=tuple((f, () if f == "f_new" else d) for f, d in T.functions))


def risk_terms_relabelled():
    """f_new's one-function tail on S, with R_S(f_new), R(f_new) declared as f~_pop's (and the event too)."""
    T = fixed_tail_f_new_on_S("population_tight_hoeffding")
    risks = tuple((k, ("f~_pop", w) if k in ("RS_new", "R_new") else (f, w)) for k, (f, w) in T.risk_terms)
    events = tuple(dataclasses.replace(e, functions=("f~_pop",)) if e.name == "H_S_new" else e for e in T.events)
    return T.replace(name="pv_risk_terms_relabelled", risk_terms=risks, events=events)


def grid_not_paid_consistently():
    """Population variant with no cap grid on S, record and formula agreeing (copies = 1 on H_S_jump and E_S)."""
    T = v.POPULATION_TIGHT_HOEFFDING
    one = sp.Integer(1)
    T = T.replace(events=_events(T, "H_S_jump", copies=one, deviation=v.hoeffding_deviation(s.M, v.delta_S_jump)))
    dev = v.uniform_deviation(s.M, s.delta, v.rad_M, sides=1)
    return T.replace(name="pv_grid_not_paid_consistently", events=_events(T, "E_S", copies=one, deviation=dev))


def grid_not_paid_on_T():
    """Direct variant whose tail of f_new on T ignores the cap grid, record and formula agreeing."""
    T = v.DIRECT_TIGHT_HOEFFDING
    dev = v.hoeffding_deviation(s.K, v.delta_T_new)
    return T.replace(name="dv_grid_not_paid_on_T", events=_events(T, "H_T_new", copies=sp.Integer(1), deviation=dev))


def mc_error_dropped_consistently():
    """Empirical population variant whose estimate is the Monte-Carlo value alone, record and formula agreeing."""
    T = v.VARIANTS["population_tight_hoeffding_empirical"]
    dev = T.event_map["E_S"].tail.deviation.subs(v.rad_S, v.rad_S_mc)
    return T.replace(name="pv_mc_error_dropped_consistently",
                     events=_events(T, "E_MC", estimate=v.rad_S_mc, deviation=dev))


def empirical_value_closed_term():
    """Closed-form population variant fed the empirical value (Monte Carlo + error) with the 1B term, no E_MC."""
    T = v.POPULATION_TIGHT_HOEFFDING
    est = v.rad_S_mc + v.rad_S_mc_err
    dev = v.uniform_deviation(s.M, s.delta, est, sides=1, copies=s.n_grid)
    return T.replace(name="pv_empirical_value_closed_term", events=_events(T, "E_S", rademacher=est, deviation=dev))


def rademacher_quartered():
    """Closed-form population variant with rad_M/4 for rad_M, record and formula agreeing."""
    T = v.POPULATION_TIGHT_HOEFFDING
    dev = v.uniform_deviation(s.M, s.delta, v.rad_M / 4, sides=1, copies=s.n_grid)
    return T.replace(name="pv_rademacher_quartered", events=_events(T, "E_S", rademacher=v.rad_M / 4, deviation=dev))


def bernstein_wrong_variance():
    """Bernstein tail of f_new on T computed with f_old's sample variance V_T_old, record and formula agreeing."""
    T = v.POPULATION_TIGHT_BERNSTEIN
    dev = v.bernstein_deviation(s.K, v.V_T_old, v.delta_T_new, s.n_grid)
    return T.replace(name="pv_bernstein_wrong_variance",
                     events=_events(T, "H_T_new", variance=v.V_T_old, deviation=dev))


def paper_hoeffding_f_new_on_S():
    """Theorem 2 (any t) with a one-function Hoeffding tail on S for f_new in place of the uniform step.

    ``R(f_new) <= R_S(f_new) + t`` on an event ``H_S`` (``exp(-2 M t^2/B^2)``); bound and failure
    probability follow, so only the dependence check (on a Hoeffding record of a paper theorem)
    can reject it.
    """
    T = THEOREM_2_GENERAL
    h = Hoeffding(s.M, s.t, s.B)
    ev = Event("H_S", h.tail(), "(wrong) one-sided Hoeffding on S for f_new", h, sample="S", functions=("f_new",))
    return T.replace(
        name="t2_hoeffding_f_new_on_S",
        premises=_premise(T, "uniform_S_new", relation=sp.Le(s.R_new, s.RS_new + s.t), event="H_S"),
        events=T.events + (ev,), conclusion=_conclusion(T, s.eps_M, s.t),
        failure_probability=T.failure_probability + h.tail())


def level_dropped(name: str, variant: str, level):
    T = v.VARIANTS[variant]
    return T.replace(name=name, failure_probability=T.failure_probability - level)


def bound_changed(name: str, variant: str, old, new):
    T = v.VARIANTS[variant]
    return T.replace(name=name, conclusion=_conclusion(T, old, new))


#: ``(name, description, target, builder)``, appended to the mutant catalogue.
VARIANT_MUTANT_SPECS = tuple(
    (f"{name}/fixed_tail_f_new_on_S", f"{name}: one-function Hoeffding tail for f_new on S (f_new depends on S)",
     "ledger/dependence/H_S_new", (lambda n=name: fixed_tail_f_new_on_S(n))) for name in sorted(v.VARIANTS)) + (
    ("dv_fixed_tail_jump_S_on_S", "direct variant: one-function Hoeffding tail for f~_S on S (f~_S depends on S)",
     "ledger/dependence/H_S_jumpS", fixed_tail_jump_S_on_S),
    ("dv_two_sided_paid_one_sided", "direct variant: uniform term paid one-sided, used in both directions",
     "ledger/dependence/E_S", two_sided_paid_one_sided),
    ("dv_tail_T_new_with_M", "direct variant: tail of f_new on T computed with M for K",
     "ledger/tail/H_T_new", tail_T_new_with_M),
    ("pv_bernstein_constant", "Bernstein variant: 7B/(6(n-1)) for 7B/(3(n-1))", "ledger/tail/H_T_new",
     bernstein_constant),
    ("pv_bernstein_one_log", "Bernstein variant: ln(1/delta) for ln(2/delta)", "ledger/tail/H_T_old",
     bernstein_one_log),
    ("pv_hoeffding_quarter", "population variant: Hoeffding t with 4n for 2n (tail sqrt(delta))",
     "ledger/tail/H_S_jump", hoeffding_quarter),
    ("pv_grid_not_paid", "population variant: f~_pop's tail on S ignores the cap grid", "ledger/tail/H_S_jump",
     grid_not_paid),
    ("pv_empirical_two_B", "empirical variant: 2B for the Bartlett-Mendelson 3B", "ledger/tail/E_S", empirical_two_B),
    ("pv_no_symmetrisation", "population variant: Rademacher term without the symmetrisation factor 2",
     "ledger/tail/E_S", no_symmetrisation),
    ("pv_mc_error_dropped", "empirical variant: Monte-Carlo value used without its McDiarmid error",
     "ledger/tail/E_MC", mc_error_dropped),
    ("pv_level_not_counted", "population variant: delta_T_old left out of the union bound", "ledger/union_bound",
     lambda: level_dropped("pv_level_not_counted", "population_tight_hoeffding", v.delta_T_old)),
    ("dv_mc_level_not_counted", "empirical direct variant: delta_mc left out of the union bound",
     "ledger/union_bound",
     lambda: level_dropped("dv_mc_level_not_counted", "direct_tight_bernstein_empirical", v.delta_mc)),
    ("pv_declared_f_new_independent", "f_new's tail on S with f_new declared independent of S (declared data "
     "weaker than bounds.dependence)", "ledger/declared_data", declared_f_new_independent),
    ("pv_risk_terms_relabelled", "f_new's tail on S with R_S(f_new), R(f_new) declared as f~_pop's",
     "ledger/declared_data", risk_terms_relabelled),
    ("pv_grid_not_paid_consistently", "population variant: no cap grid on S, record and formula agreeing",
     "ledger/dependence/H_S_jump", grid_not_paid_consistently),
    ("dv_grid_not_paid_on_T", "direct variant: no cap grid on the tail of f_new on T (f_new depends on the cap)",
     "ledger/dependence/H_T_new", grid_not_paid_on_T),
    ("pv_mc_error_dropped_consistently", "empirical variant: estimate = Monte-Carlo value alone, record and formula "
     "agreeing", "ledger/tail/E_MC", mc_error_dropped_consistently),
    ("pv_empirical_value_closed_term", "closed-form variant fed the empirical value with the 1B term and no E_MC",
     "ledger/tail/E_S", empirical_value_closed_term),
    ("pv_rademacher_quartered", "closed-form variant with rad_M/4, record and formula agreeing", "ledger/tail/E_S",
     rademacher_quartered),
    ("pv_bernstein_wrong_variance", "Bernstein tail of f_new on T with f_old's variance V_T_old",
     "ledger/dependence/H_T_new", bernstein_wrong_variance),
    ("t2_hoeffding_f_new_on_S", "Theorem 2 (any t): Hoeffding on S for f_new (depends on S) for a uniform step",
     "ledger/dependence/H_S", paper_hoeffding_f_new_on_S),
    ("pv_missing_t_T_old", "population variant without the tail t_T(f_old) in the bound", "entailment/z3",
     lambda: bound_changed("pv_missing_t_T_old", "population_tight_hoeffding", v.t_T_old, 0)),
    ("dv_single_eps_M", "direct variant with eps_M for 2 eps_M", "entailment/z3",
     lambda: bound_changed("dv_single_eps_M", "direct_tight_hoeffding", 2 * s.eps_M, s.eps_M)),
)
