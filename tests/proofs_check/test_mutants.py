"""Every catalogued wrong variant is rejected with a countermodel (the checker can fail)."""
import math

import pytest
import sympy as sp

from proofs_check import MUTANTS
from proofs_check.mutants import mutant

NAMES = [m.name for m in MUTANTS]


def test_catalogue_covers_both_kinds():
    targets = {m.target.split("/")[0] for m in MUTANTS}
    assert targets == {"entailment", "ledger"}
    assert len(NAMES) == len(set(NAMES))
    for required in ("t2_delta_R_not_halved", "t2_single_eps_M", "t2_flipped_eps_sign",
                     "t2_dropped_hoeffding_factor", "t2_sqrt_K", "t2_wrong_exponent"):
        assert required in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_mutant_rejected(mutant_results, name):
    m = mutant_results[name]
    assert m.rejected, m.result.check(m.target)
    assert not m.result.ok


@pytest.mark.parametrize("name", [n for n in NAMES if mutant(n).target == "entailment/z3"])
def test_entailment_mutant_countermodel_is_real(mutant_results, name):
    """Substitute the countermodel by hand: premises hold and the mutated conclusion fails."""
    theorem = mutant(name).build()
    cm = mutant_results[name].result.check("entailment/z3").countermodel
    vals = {k: sp.Rational(v.numerator, v.denominator) for k, v in cm.items()}
    sub = lambda rel: rel.subs({s: vals[s.name] for s in rel.free_symbols if s.name in vals})  # noqa: E731
    assert all(bool(sub(p.relation)) for p in theorem.premises)
    assert all(bool(sub(c)) for c in theorem.side_conditions)
    assert not bool(sub(theorem.conclusion))
    assert mutant_results[name].result.check("entailment/farkas").status in ("FAIL", "N/A")


@pytest.mark.parametrize("name", [n for n in NAMES if mutant(n).target.startswith("ledger/")])
def test_ledger_mutant_witness_differs(mutant_results, name):
    cm = mutant_results[name].result.check(mutant(name).target).countermodel
    assert not math.isclose(cm["stated"], cm["derived"], rel_tol=1e-9)


def test_mutant_lookup_rejects_unknown_name():
    with pytest.raises(ValueError, match="name == 'nope', must be one of"):
        mutant("nope")


def test_swap_that_changes_nothing_is_refused():
    from bounds import THEOREM_2
    from bounds import _symbols as s
    from proofs_check.mutants import _swap_bound

    with pytest.raises(ValueError, match="does not change"):
        _swap_bound(THEOREM_2, s.eps_M, s.eps_M, "noop")
