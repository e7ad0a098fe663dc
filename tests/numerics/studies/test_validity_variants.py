"""The validity study with this project's THEORY §6 variants (issue 9, phase 2).

* On a tiny network setup: every variant is a route of ``validity.json`` with its events at
  its own levels (``<variant>/E_S`` one- or two-sided over the class, ``E_MC`` from the sure
  bracket of ``rad_S``, the one-function tails), the chains at their total failure probability,
  ``any_with_variants``, the comparison with the paper's best route, and the fixed-tail mutant.
* Power: in the toy world (losses ``B * Bernoulli``, ``f_new`` the ERM over many functions) the
  study's own statistics flag the mutant "one-function tail for ``f_new`` on ``S``" while the
  true variants pass; the mutant rebuilt by the study equals ``proofs_check``'s object.
"""
import copy

import numpy as np
import pytest

from numerics._store import ItemStore
from numerics.studies._validity_power import MUTATED, fixed_tail_values
from numerics.studies._validity_routes import VARIANT_ROUTE_SPECS, event_failures
from numerics.studies.validity import run_validity, summarize
from tests.numerics.studies._toy_records import toy_records

TINY = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 500},
        "block_training": {"steps": 40, "batch_size": 256}, "validity": {"group": 4, "population": 100_000}}


@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("validity_variants")
    return run_validity(TINY, 6, out, progress=False), out


def test_every_variant_is_a_route_with_its_own_events(tiny_study):
    s, out = tiny_study
    for spec in VARIANT_ROUTE_SPECS:
        r = s["routes"][spec.name]
        assert r["statement"] == "Choice" and {"certification_rate", "violations", "significant"} <= set(r)
        assert r["events"] == [f"{spec.name}/{e.name}" for e in spec.theorem.events]
        e_s = s["events"][f"{spec.name}/E_S"]
        side = "one-sided" if spec.name.startswith("population") else "two-sided"
        assert e_s["checked"].startswith("supremum over the capped class (exact") and side in e_s["checked"]
        if spec.name.endswith("_empirical"):
            assert s["events"][f"{spec.name}/E_MC"]["checked"].startswith("the sure bracket")
    assert s["routes"]["population"]["statement"] == "paper" and "E_S" in s["events"]     # the paper's keys stay
    assert s["routes"]["any_with_variants"]["stated_failure_probability"] <= 0.05 + 1e-12
    assert s["certification"]["any_with_variants"]["certification_interval"][1] <= 1
    c = s["comparison"]
    assert c["use"] == "population_tight_bernstein" and c["paper_best"] in ("population", "direct")
    assert not s["significant"]
    rec = ItemStore(out / "draws").get("draw_000000")
    emp = rec["routes"]["population_tight_bernstein_empirical"]["values"]
    assert emp["rad_S_lower"] <= emp["rad_S_upper"] <= emp["rad_S_estimate"] * (1 + 1e-12)
    assert emp["eps_M1_star"] <= emp["eps_M1"]


def test_the_one_sided_event_is_checked_over_the_class_and_can_fail(tiny_study):
    _, out = tiny_study
    rec = ItemStore(out / "draws").get("draw_000001")
    name = "population_tight_hoeffding"
    eps = rec["routes"][name]["values"]["eps_M1"]
    assert not event_failures(rec)[f"{name}/E_S"]["failed"]
    bad = copy.deepcopy(rec)
    bad["deviations"]["E_S"]["upper"] = 1.01 * eps       # sup (R - R_S) just above the one-sided threshold
    bad["deviations"]["E_S"]["lower"] = bad["deviations"]["E_S"]["sup"] = 2 * eps   # the other side: not this event
    got = event_failures(bad)
    assert got[f"{name}/E_S"]["failed"] and got[f"{name}/E_S"]["exact"]
    lower_only = copy.deepcopy(rec)
    lower_only["deviations"]["E_S"]["lower"] = lower_only["deviations"]["E_S"]["sup"] = 2 * eps
    assert not event_failures(lower_only)[f"{name}/E_S"]["failed"]
    assert event_failures(lower_only)["direct_tight_hoeffding/E_S"]["failed"] == (
        2 * eps > rec["routes"]["direct_tight_hoeffding"]["values"]["eps_M"])


def test_study_mutant_is_proofs_checks_fixed_tail_mutant():
    """The mutant the study rebuilds from bounds' formulas = proofs_check's object through evaluate_chain."""
    from bounds.variant_routes import evaluate_chain, variant_values
    from proofs_check._variant_mutants import fixed_tail_f_new_on_S
    from tests.bounds._toy_world import draw

    world = dict(seed=1, M=300, K=5000, n_class=200)
    recs = toy_records(4, level=0.2, **world)
    setup, inputs, _, _ = draw(4, **world)
    for name in MUTATED:
        route = name.split("_")[0]
        v = variant_values(setup, inputs, route, "closed", 0.2)
        v["delta_S_new"] = v["delta"]
        ref = evaluate_chain(fixed_tail_f_new_on_S(name), route, v)
        for i, rec in enumerate(recs):
            got = fixed_tail_values(name, rec)
            assert got["bound"] == pytest.approx(float(ref.bound[i]), rel=1e-12), name
            assert got["failure_probability"] == pytest.approx(float(ref.failure_probability[i]), rel=1e-12), name


def test_power_the_mutant_is_flagged_where_selection_on_S_matters_and_true_variants_pass():
    recs = toy_records(120, seed=3, M=200, K=10**5, n_class=10**4, delta_R=0.05)
    s = summarize(recs, 0.05, config={"variants": {"use": "population_tight_bernstein"}})
    for name in MUTATED:
        assert s["power"][f"{name}: fixed tail f_new on S (H_S_new)"]["flagged"], name
        assert not s["power"][f"{name}: E_S ({'one' if name.startswith('population') else 'two'}-sided uniform, true)"][
            "flagged"]
        assert not s["power"][f"{name}: chain (true)"]["flagged"]
        assert not s["routes"][name]["significant"]
    assert not s["significant"]                      # every true guarantee passes on the same draws
    # without selection (one function per half: f_new barely chosen) the same wrong tail is not flagged
    calm = summarize(toy_records(120, seed=4, M=200, K=10**5, n_class=4, delta_R=0.05), 0.05)
    assert not calm["power"]["population_tight_hoeffding: fixed tail f_new on S (H_S_new)"]["flagged"]


@pytest.mark.slow
def test_power_slow_the_mutant_chain_and_event_flagged_over_many_draws():
    """600 draws of the world of phase 1 (10^5 functions, tiny tail levels on T): the mutant's chain is
    violated significantly more often than it states, not only its event; every true route passes."""
    recs = toy_records(600, level=1.0, delta=0.2, delta_prime=0.05, seed=3, M=200, K=10**7, n_class=10**5,
                       delta_R=0.02, delta_S_jump=0.2, delta_T_new=1e-3, delta_T_old=1e-3)
    s = summarize(recs, 0.05)
    assert s["power"]["population_tight_hoeffding: fixed tail f_new on S (chain)"]["flagged"]
    for name in MUTATED:
        assert s["power"][f"{name}: fixed tail f_new on S (H_S_new)"]["flagged"], name
    assert not s["significant"], {k: v for k, v in {**s["routes"], **s["events"]}.items() if v["significant"]}
