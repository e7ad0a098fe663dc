"""THEORY §6 variants (Choice) in proofs_check: verified both ways, premises needed, ledger, side algebra."""
import dataclasses

import pytest
import sympy as sp

from bounds import _symbols as s
from bounds import variants as v
from bounds._statement import Tail
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


def test_prove_verifies_the_variants_by_default():
    import inspect

    from proofs_check import verify_all

    default = inspect.signature(verify_all).parameters["theorems"].default
    assert {t.name for t in default} >= set(NAMES)


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


def test_dependence_check_needs_the_function_data():
    T = v.POPULATION_TIGHT_HOEFFDING.replace(risk_terms=())
    c = _dep(T, "H_T_new")
    assert c.status == "FAIL" and "risk_terms" in c.detail


def test_function_without_dependence_data_counts_as_dependent():
    T = v.POPULATION_TIGHT_HOEFFDING
    T = T.replace(functions=tuple(f for f in T.functions if f[0] != "f_old"))
    c = _dep(T, "H_T_old")
    assert c.status == "FAIL" and c.countermodel["derived"] == 1.0


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
    ("below", lambda: sav.check_one_function_below_uniform(v.hoeffding_deviation(n, s.delta / 2))),
]


@pytest.mark.parametrize("label,check", WRONG, ids=[w[0] for w in WRONG])
def test_variant_side_algebra_rejects_a_wrong_expression(label, check):
    c = check()
    assert c.status == "FAIL" and c.countermodel is not None
