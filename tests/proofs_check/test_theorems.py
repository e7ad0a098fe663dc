"""Every built-in theorem verifies both ways; premises of Theorems 2 and 3 are necessary; ledgers match."""
import pytest
import sympy as sp

from bounds import ALL_THEOREMS, THEOREM_2, THEOREM_3

NAMES = [t.name for t in ALL_THEOREMS]


@pytest.mark.parametrize("name", NAMES)
def test_theorem_verifies(theorem_results, name):
    r = theorem_results[name]
    assert r.ok, [c for c in r.checks if not c.ok]
    assert r.check("consistency").status == "PASS"


@pytest.mark.parametrize("name", NAMES)
def test_entailment_both_ways(theorem_results, name):
    r = theorem_results[name]
    assert r.engines == {"farkas": "PASS", "z3": "PASS"}
    assert r.check("entailment/farkas").certificate  # multipliers are printed


def test_farkas_certificate_reproduces_theorem_2():
    """The multipliers, applied by hand, give exactly the conclusion (independent of the LP)."""
    from proofs_check import verify

    cert = verify(THEOREM_2, necessity=False).check("entailment/farkas").certificate
    premises = {p.name: p.relation for p in THEOREM_2.premises}
    total = sum(sp.Rational(v) * (premises[k].lhs - premises[k].rhs) for k, v in cert.items())
    c = THEOREM_2.conclusion
    assert sp.expand(total - (c.lhs - c.rhs)) == 0


@pytest.mark.parametrize("theorem", [THEOREM_2, THEOREM_3], ids=lambda t: t.name)
def test_every_premise_is_necessary(theorem_results, theorem):
    r = theorem_results[theorem.name]
    for p in theorem.premises:
        c = r.check(f"necessity/{p.name}")
        assert c.status == "PASS", c
        # independent re-check of the countermodel: the other premises hold, the conclusion fails
        values = {sp.Symbol(k): sp.Rational(v.numerator, v.denominator) for k, v in c.countermodel.items()}
        by_name = {s.name: values[sp.Symbol(s.name)] for s in theorem.free_symbols() if sp.Symbol(s.name) in values}
        sub = lambda rel: rel.subs({s: by_name[s.name] for s in rel.free_symbols if s.name in by_name})  # noqa
        assert all(bool(sub(q.relation)) for q in theorem.premises if q.name != p.name)
        assert not bool(sub(theorem.conclusion))


def test_superfluous_premise_is_a_finding_not_an_error():
    import dataclasses

    from proofs_check import verify

    extra = dataclasses.replace(THEOREM_3.premises[0], name="duplicate")
    r = verify(THEOREM_3.replace(premises=THEOREM_3.premises + (extra,)))
    assert r.check("necessity/duplicate").status == "FINDING"
    assert r.check("necessity/uniform_T_new").status == "FINDING"  # the duplicate covers it
    assert r.ok


@pytest.mark.parametrize("name", NAMES)
def test_ledger_matches(theorem_results, name):
    r = theorem_results[name]
    assert r.check("ledger/union_bound").status == "PASS"
    assert r.check("ledger/events_declared").status == "PASS"


def test_ledger_checks_each_hoeffding_tail(theorem_results):
    r = theorem_results[THEOREM_2.name]
    for ev in ("H_new", "H_old"):
        assert r.check(f"ledger/hoeffding/{ev}").status == "PASS"


def test_inconsistent_premises_fail_consistency():
    from bounds import Premise
    from bounds import _symbols as s
    from proofs_check import verify

    bad = Premise("contradiction", sp.Le(s.eps_M, -1), "eps_M >= 0 is a side condition")
    r = verify(THEOREM_3.replace(premises=THEOREM_3.premises + (bad,)), necessity=False)
    assert r.check("consistency").status == "FAIL"
    assert r.check("entailment/farkas").status == "FINDING"  # vacuous certificate reported
    assert not r.ok


def test_undeclared_event_fails_ledger():
    import dataclasses

    from proofs_check import verify

    p = dataclasses.replace(THEOREM_3.premises[0], event="E_nowhere")
    r = verify(THEOREM_3.replace(premises=(p,) + THEOREM_3.premises[1:]), necessity=False)
    assert r.check("ledger/events_declared").status == "FAIL"
    assert not r.ok


def test_unused_event_is_a_finding():
    from bounds import Event
    from proofs_check import verify

    extra = Event("E_spare", sp.Symbol("delta_spare", positive=True), "declared, never used")
    r = verify(THEOREM_3.replace(events=THEOREM_3.events + (extra,)), necessity=False)
    assert r.check("ledger/unused_events").status == "FINDING"
    assert r.ok  # the union bound over the used events still matches


def test_ledger_witness_respects_sample_sizes(mutant_results):
    cm = mutant_results["t2_sqrt_K"].result.check("ledger/union_bound").countermodel
    assert cm["K"] >= 1 and 0 < cm["delta"] < 1
