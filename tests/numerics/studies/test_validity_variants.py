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
import json

import pytest

from plumbing.store import ItemStore
from numerics.studies.validity._power import MUTATED, fixed_tail_values
from numerics.studies.validity._routes import VARIANT_ROUTE_SPECS, event_failures
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


# ---------------------------------------------------------------- integration: grid caps and full blocks
_TINY_INT = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 500, "steps": 15},
             "block_training": {"steps": 40, "batch_size": 512}, "validity": {"population": 20000}}


def test_grid_cap_checks_events_at_the_certified_cap(tmp_path):
    """With caps chosen after training (cap_grid > 1) the Rademacher stream, E_MC and the exact
    suprema are taken at the cap the draw certified, not at the largest one (regression: the
    E_MC events failed in every draw, a 4x cap ratio)."""
    from plumbing.config import merge_config
    from numerics.studies.validity import run_validity

    cfg = merge_config(_TINY_INT, {"insertion": {"cap_grid": 6, "cap_ratio": 2.0, "output_cap": 8.0}})
    s = run_validity(cfg, 2, tmp_path, progress=False)
    recs = [json.loads(p.read_text()) for p in sorted((tmp_path / "draws").glob("*.json"))]
    caps = [r["values"]["nu_V"] for r in recs]
    for r in recs:
        for name, route in r["routes"].items():
            v = route.get("values", {})
            if "rad_S_upper" in v:    # the sure bracket is at the certified cap: the estimate lies inside it
                assert v["rad_S_lower"] <= v["rad_S_estimate"] * (1 + 1e-9), (name, v, caps)
                assert v["rad_S_estimate"] <= v["rad_S_upper"] * (1 + 1e-9), (name, v, caps)
    assert not any(e["failures"] for k, e in s["events"].items() if k.endswith("E_MC")), s["events"]
    assert not s["significant"]


def test_full_block_truth_is_the_trained_blocks_risk():
    """The validity truth of R(f_new) for a trained full block uses its own U, b (regression:
    the initial features were used)."""
    import torch

    from numerics.data import conditional_risk
    from numerics.studies.run import on_states
    from numerics.studies.validity._draws import _check_risks, population_truth
    from numerics.studies.run import draw_samples, prepare_fixed, select_blocks, streams_of, validate_config

    base = {k: v for k, v in _TINY_INT.items() if k != "validity"}
    cfg = validate_config({**base, "block_training": {"steps": 150, "batch_size": 512}, "insertion": {"family": "full"}})
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg)
        group = draw_samples(fixed, [streams_of(cfg)])
        sel = select_blocks(fixed, group)
    block = sel.blocks_new[0]
    if block is None:
        pytest.skip("the trained block did not win (C2) on this draw")
    truth = population_truth(fixed, 20000)
    model = on_states(fixed.expanded, block)
    with torch.no_grad():     # independent: the whole check sample at once
        xs = torch.cat(list(fixed.task.sample_x_chunks(20000, fixed.streams.seed_for("check_population"))))
        want = float(conditional_risk(fixed.task, xs, model(fixed.net.bottom(xs, fixed.at))).mean())
        init = float(conditional_risk(fixed.task, xs, on_states(fixed.expanded, fixed.expanded.block)(
            fixed.net.bottom(xs, fixed.at))).mean())
    Vs = torch.stack([torch.zeros_like(sel.V_new[0]), sel.V_new[0], group.V_S[0], fixed.signal.V_pop])
    means, _ = _check_risks(fixed, truth, Vs, block)     # (means, standard errors) of old, new, jump_S, jump_pop
    got = means[1]
    assert _check_risks(fixed, truth, Vs)[0][0] == pytest.approx(means[0], rel=1e-12)   # R_old: the same either way
    assert got == pytest.approx(want, rel=1e-10) and abs(got - init) > 1e-6


def test_rademacher_stream_at_another_cap_equals_a_stream_run_there():
    import torch

    from numerics.estimators import rademacher_readout_stream

    phi = torch.randn(300, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a = rademacher_readout_stream([phi[:150], phi[150:]], 3, 2.0, 4, seed=7)
    b = rademacher_readout_stream([phi[:150], phi[150:]], 3, 0.5, 4, seed=7)
    c = a.at_cap(0.5)
    assert c.value == pytest.approx(b.value, rel=1e-12) and c.mc_error == pytest.approx(b.mc_error, rel=1e-12)
    assert c.exact_bracket() == pytest.approx(b.exact_bracket(), rel=1e-12)
