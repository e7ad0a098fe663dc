"""THEORY §6 variants (Choice) in proofs_check: verified both ways, premises needed, ledger, side algebra."""
import dataclasses

import pytest
import sympy as sp

from bounds import _symbols as s
from bounds import variants as v
from bounds._statement import Event, Premise, Tail
from bounds.generalisation import rad_vec_closed_form
from proofs_check import MUTANTS, verify
from proofs_check import side_algebra_variants as sav

NAMES = sorted(v.VARIANTS)


@pytest.fixture(scope="module")
def results():
    return {name: verify(t) for name, t in v.VARIANTS.items()}


@pytest.mark.parametrize("name", NAMES)
def test_variant_verifies_both_ways_with_every_premise_needed(results, name):
    r = results[name]
    assert r.ok, [c for c in r.checks if not c.ok]
    assert r.engines == {"farkas": "PASS", "z3": "PASS"}
    for p in v.VARIANTS[name].premises:
        assert r.check(f"necessity/{p.name}").status == "PASS"
    for e in v.VARIANTS[name].events:
        assert r.check(f"ledger/tail/{e.name}").status == "PASS"
        if e.tail.kind != "monte_carlo":
            assert r.check(f"ledger/dependence/{e.name}").status == "PASS"
    assert r.check("ledger/union_bound").status == "PASS"


@pytest.mark.parametrize("name", NAMES)
def test_farkas_certificate_reproduces_the_variant(results, name):
    """The printed multipliers, applied by hand, give exactly the conclusion."""
    T = v.VARIANTS[name]
    cert = results[name].check("entailment/farkas").certificate
    premises = {p.name: p.relation for p in T.premises}
    total = sum(sp.Rational(val) * (premises[k].lhs - premises[k].rhs) for k, val in cert.items() if k in premises)
    assert sp.expand(total - (T.conclusion.lhs - T.conclusion.rhs)) == 0


def test_prove_verifies_the_variants_by_default(monkeypatch):
    """``verify_all()`` (what ``depthcert prove`` runs) calls ``verify`` on every variant, and reports them."""
    from proofs_check import _prove, verify_all

    seen = []

    def recording_verify(theorem, **kw):
        seen.append(theorem.name)
        return verify(theorem, necessity=False)

    monkeypatch.setattr(_prove, "verify", recording_verify)
    report = verify_all(mutants=False, side_algebra=False)
    assert set(NAMES) <= set(seen)
    by_name = {r.theorem: r for r in report.theorems}
    assert all(by_name[n].ok for n in NAMES) and report.ok


def test_variant_mutants_are_catalogued():
    names = {m.name for m in MUTANTS}
    assert {f"{n}/fixed_tail_f_new_on_S" for n in NAMES} <= names     # one per variant
    for required in ("dv_fixed_tail_jump_S_on_S",
                     "pv_bernstein_constant", "pv_level_not_counted", "dv_two_sided_paid_one_sided",
                     "dv_tail_T_new_with_M", "pv_mc_error_dropped", "pv_grid_not_paid"):
        assert required in names


# ---------------------------------------------------------------- the dependence check must be able to fail
def _dep(theorem, event):
    return verify(theorem, necessity=False).check(f"ledger/dependence/{event}")


def test_dependence_reads_the_tables_not_the_declared_data():
    """Without declared data the tables of bounds.dependence are used; a risk symbol they do not know fails."""
    T = v.POPULATION_TIGHT_HOEFFDING.replace(risk_terms=(), functions=())
    r = verify(T, necessity=False)
    assert r.ok and r.check("ledger/dependence/H_T_new").status == "PASS"
    mystery = sp.Symbol("L_test_mystery", real=True)
    premises = tuple(dataclasses.replace(p, relation=sp.Le(mystery, s.R_new + v.t_T_new))
                     if p.name == "tail_T_new" else p for p in T.premises)
    c = _dep(T.replace(premises=premises), "H_T_new")
    assert c.status == "FAIL" and "not in bounds.dependence.RISK_TERMS" in c.detail


def test_declared_data_weaker_than_the_tables_fail():
    """Declaring f_old, f~_pop's dependence as in the tables passes; declaring f~_S independent of S fails."""
    from bounds import dependence

    assert dependence.role("f_mystery").samples == ("S", "T") and dependence.role("f_mystery").cap
    T = v.DIRECT_TIGHT_HOEFFDING
    assert _check(T, "ledger/declared_data").status == "PASS"
    weak = T.replace(functions=(("f_old", ()), ("f~_S", ()), ("f_new", ("S",))))
    c = _check(weak, "ledger/declared_data")
    assert c.status == "FAIL" and "f~_S declared independent of ['S']" in c.detail
    relabel = T.replace(risk_terms=tuple((k, ("f_old", w) if k == "R_jump" else (f, w)) for k, (f, w) in T.risk_terms))
    assert _check(relabel, "ledger/declared_data").status == "FAIL"
    stronger = T.replace(functions=(("f_old", ("S",)),) + T.functions[1:])    # more dependence: allowed
    assert _check(stronger, "ledger/declared_data").status == "PASS"


def _check(theorem, name):
    return verify(theorem, necessity=False).check(name)


def test_jumpboard_is_read_from_the_margin():
    from bounds import dependence
    from bounds.theorems import THEOREM_2, THEOREM_3

    assert dependence.jumpboard(v.POPULATION_TIGHT_HOEFFDING) == dependence.jumpboard(THEOREM_2) == "f~_pop"
    assert dependence.jumpboard(v.DIRECT_TIGHT_HOEFFDING) == dependence.jumpboard(THEOREM_3) == "f~_S"
    # a chain using both margins has an unknown jumpboard: its one-function tail on T fails (it may depend on T)
    T = v.DIRECT_TIGHT_HOEFFDING
    extra = Premise("both_margins", sp.Le(s.delta_R, s.B), "a premise mentioning Delta_R")
    both = T.replace(premises=T.premises + (extra,))
    assert dependence.jumpboard(both) == dependence.JUMPBOARD
    assert _dep(both, "H_T_jump").status == "FAIL"


def test_f_new_depending_on_T_rejects_its_test_tail():
    T = v.DIRECT_TIGHT_HOEFFDING
    T = T.replace(functions=(("f_old", ()), ("f~_S", ("S",)), ("f_new", ("S", "T"))))
    assert _dep(T, "H_T_new").status == "FAIL" and _dep(T, "H_T_jump").status == "PASS"


def test_premise_about_two_functions_is_rejected():
    T = v.POPULATION_TIGHT_HOEFFDING
    premises = tuple(dataclasses.replace(p, relation=sp.Le(s.L_test_new, s.R_old + v.t_T_new))
                     if p.name == "tail_T_new" else p for p in T.premises)
    c = _dep(T.replace(premises=premises), "H_T_new")
    assert c.status == "FAIL" and "compares f_new on T with f_old on population" in c.detail


def test_one_function_tail_covering_two_functions_is_rejected():
    T = v.DIRECT_TIGHT_HOEFFDING
    events = tuple(dataclasses.replace(e, functions=("f_new", "f_old")) if e.name == "H_T_new" else e
                   for e in T.events)
    assert _dep(T.replace(events=events), "H_T_new").status == "FAIL"


def test_two_sided_uniform_used_one_way_is_a_finding():
    T = v.POPULATION_TIGHT_HOEFFDING
    dev = v.uniform_deviation(s.M, s.delta, v.rad_M, sides=2, copies=s.n_grid)
    events = tuple(dataclasses.replace(e, tail=dataclasses.replace(e.tail, sides=2, deviation=dev))
                   if e.name == "E_S" else e for e in T.events)
    r = verify(T.replace(events=events), necessity=False)
    assert r.check("ledger/dependence/E_S").status == "FINDING" and r.ok


#: Wrong records written consistently (record and formula agree, or the theorem's own data lie):
#: before the tables of bounds.dependence, verify() accepted every one of them.
CONSISTENT_SLIPS = ("pv_declared_f_new_independent", "pv_risk_terms_relabelled", "pv_grid_not_paid_consistently",
                    "dv_grid_not_paid_on_T", "pv_mc_error_dropped_consistently", "pv_empirical_value_closed_term",
                    "pv_rademacher_quartered", "pv_bernstein_wrong_variance", "t2_hoeffding_f_new_on_S")


@pytest.mark.parametrize("name", CONSISTENT_SLIPS)
def test_consistent_slips_are_rejected_by_the_ledger_alone(name):
    from proofs_check.mutants import mutant

    m = mutant(name)
    r = verify(m.build(), necessity=False)
    failed = {c.name for c in r.checks if c.status == "FAIL"}
    assert m.target in failed and all(f.startswith("ledger/") for f in failed), failed
    assert r.check("entailment/z3").status == "PASS"          # the chain itself entails its conclusion


def test_paper_hoeffding_tails_get_the_dependence_check(results):
    from bounds.theorems import THEOREM_2, THEOREM_2_GENERAL

    for T in (THEOREM_2, THEOREM_2_GENERAL):
        r = verify(T, necessity=False)
        assert r.check("ledger/dependence/H_new").status == "PASS" and r.check("ledger/declared_data").status == "PASS"
        assert "f_new" in r.check("ledger/dependence/H_new").detail and "T" in r.check("ledger/dependence/H_new").detail


def _valid_rewrites():
    """Rewrites of the variants that stay valid (the reviewer's list): each must still verify."""
    D, P = v.DIRECT_TIGHT_HOEFFDING, v.POPULATION_TIGHT_HOEFFDING
    h = sp.Symbol("delta_half", positive=True)
    e_up, e_dn = sp.Symbol("eps_up", nonnegative=True), sp.Symbol("eps_dn", nonnegative=True)

    def uni(name, sym, fn):
        dev = v.uniform_deviation(s.M, h, v.rad_M, sides=1, copies=s.n_grid)
        return Event(name, h, "one-sided", sample="S", functions=(fn,),
                     tail=Tail("uniform", sym, dev, s.M, h, s.B, sides=1, copies=s.n_grid, rademacher=v.rad_M))

    split = {"uniform_S_new": (sp.Le(s.R_new, s.RS_new + e_up), "E_up"),
             "uniform_S_jump": (sp.Le(s.RS_jump, s.R_jump + e_dn), "E_dn")}
    prem = tuple(dataclasses.replace(p, relation=split[p.name][0], event=split[p.name][1]) if p.name in split else p
                 for p in D.premises)
    c = D.conclusion
    A = D.replace(name="split", premises=prem,
                  events=tuple(e for e in D.events if e.name != "E_S") + (uni("E_up", e_up, "f_new"),
                                                                         uni("E_dn", e_dn, "f~_S")),
                  conclusion=c.func(c.lhs, c.rhs - 2 * s.eps_M + e_up + e_dn),
                  failure_probability=2 * h + v.delta_T_new + v.delta_T_jump,
                  side_conditions=D.side_conditions + (e_up >= 0, e_dn >= 0, h > 0, h < 1))
    ge = tuple(dataclasses.replace(p, relation=sp.Ge(s.L_test_old + v.t_T_old, s.R_old)) if p.name == "tail_T_old"
               else p for p in P.premises)
    return {"E_S split in two one-sided events": A, "tail_T_old written as >=": P.replace(name="ge", premises=ge),
            "delta_T_new -> delta_T_old": P.substitute({v.delta_T_new: v.delta_T_old}, name="sub")}


@pytest.mark.parametrize("label", sorted(_valid_rewrites()))
def test_valid_rewrites_stay_accepted(label):
    r = verify(_valid_rewrites()[label], necessity=False)
    assert r.ok, [(c.name, c.detail) for c in r.checks if not c.ok]
    assert not [c for c in r.checks if c.status == "FINDING"]


def test_tail_record_rejects_unknown_kind_and_sides():
    with pytest.raises(ValueError, match="kind == 'chernoff'"):
        Tail("chernoff", v.t_T_new, v.t_T_new, s.K, v.delta_T_new, s.B)
    with pytest.raises(ValueError, match="sides == 3"):
        Tail("uniform", s.eps_M, s.eps_M, s.M, s.delta, s.B, sides=3)


def test_wrong_range_is_rejected():
    T = v.DIRECT_TIGHT_HOEFFDING
    events = tuple(dataclasses.replace(e, tail=dataclasses.replace(e.tail, range=2 * s.B)) if e.name == "H_T_jump"
                   else e for e in T.events)
    c = verify(T.replace(events=events), necessity=False).check("ledger/tail/H_T_jump")
    assert c.status == "FAIL" and "range" in c.detail


# ---------------------------------------------------------------- side algebra: pass, and reject a wrong input
def test_variant_side_algebra_passes():
    assert all(c.status == "PASS" for c in sav.variant_checks())


n, lvl, B = s.n, sp.Symbol("level_i", positive=True), s.B
WRONG = [
    ("hoeffding", lambda: sav.check_hoeffding_level(B * sp.sqrt(sp.log(1 / lvl) / n))),
    ("bernstein", lambda: sav.check_bernstein(v.bernstein_deviation(n, sp.Symbol("V", nonnegative=True), lvl)
                                             * sp.Rational(1, 2))),
    ("uniform", lambda: sav.check_uniform_matches_eps_n(
        "readout", "closed", v.uniform_deviation(n, s.delta, rad_vec_closed_form("readout", n), sides=2))),
    ("empirical", lambda: sav.check_empirical_confidence(1, 2 * B * sp.sqrt(sp.log(2 / s.delta) / (2 * n)))),
    ("mc_error", lambda: sav.check_mc_error(v.mc_error_expression() / 2)),
    ("jensen", lambda: sav.check_jensen_readout(s.nu_V / s.M * sp.sqrt(2 * s.d * v.phi_sq_sum))),
    ("below", lambda: sav.check_one_function_below_uniform(v.hoeffding_deviation(n, s.delta / 2))),
]


@pytest.mark.parametrize("label,check", WRONG, ids=[w[0] for w in WRONG])
def test_variant_side_algebra_rejects_a_wrong_expression(label, check):
    c = check()
    assert c.status == "FAIL" and c.countermodel is not None
