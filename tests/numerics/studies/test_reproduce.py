"""The reproduce study: the claim registry, the decision rules, a tiny end-to-end report."""
import dataclasses
import math

import numpy as np
import pytest

from numerics.studies import reproduce as rp
from numerics.studies.reproduce._claims import CLAIMS, VERDICTS, Rule, resolve_study

TINY_BASE = {"sizes": {"M": 1000, "K": 1000, "population": 1000}, "reference": {"n": 300, "steps": 20},
             "block_training": {"steps": 10, "batch_size": 256}}
TINY = rp.Suite("quick", sweeps={
    "depth": {"base": TINY_BASE, "grid": {"model.depth": [1, 2, 3]}},
    "rebound": {"base": TINY_BASE, "grid": {"model.depth": [1, 2], "model.width": [2, 4]}}},
    growth={"config": TINY_BASE, "seeds": [0, 1], "base_steps": 10, "grow_steps": 10}, n_boot=50,
    expected="seconds (test sizes)", validity={"config": TINY_BASE, "draws": 3},
    ag_max={"config": {"reference": {"steps": 20, "anneal_steps": 0}}, "quick": True, "depths": [1, 2, 3],
            "seeds": [0, 1]})


def fake_study(ctx):
    """A study living outside the registry's module, wired in by its import path only."""
    return {"measured": "x = 1.5 [1.2, 1.9]", "estimate": 1.5, "interval": [1.2, 1.9], "confidence": 0.95,
            "figures": [], "details": {}}


def test_registry_holds_every_claim_of_theory_8_9():
    ids = [c.id for c in CLAIMS]
    assert ids == ["covariance_near_diagonal", "signal_decay", "joint_scaling_rebound", "ag_max_plateau",
                   "growth_vs_scratch", "local_insertion_shrinking", "exponent_agreement", "bound_validity"]
    for c in CLAIMS:
        assert c.paper_says and c.statistic and ":" in c.study and c.rule.text()


@pytest.mark.parametrize("rule, interval, verdict", [
    (Rule("above", 0.0), (0.1, 0.5), "reproduced"),
    (Rule("above", 0.0), (-0.5, -0.1), "not reproduced"),
    (Rule("above", 0.0), (-0.1, 0.5), "inconclusive"),
    (Rule("below", 1 / math.sqrt(2)), (0.2, 0.5), "reproduced"),
    (Rule("below", 1 / math.sqrt(2)), (0.75, 0.9), "not reproduced"),
    (Rule("below", 0.5, 1.0), (0.6, 0.9), "inconclusive"),          # between the two thresholds
    (Rule("below", 0.5, 1.0), (1.1, 1.3), "not reproduced"),
    (Rule("agreement"), (-0.1, 0.2), "reproduced"),
    (Rule("agreement"), (0.1, 0.2), "not reproduced"),
    (Rule("agreement"), (0.1, 0.2, (0.1, 0.3)), "inconclusive"),          # Assumption G fails: no prediction
    (Rule("above", 0.0), (float("nan"), 1.0), "inconclusive"),
])
def test_rules_decide_from_the_interval(rule, interval, verdict):
    alpha = interval[2] if len(interval) == 3 else None
    interval = interval[:2]
    ev = {"estimate": sum(interval) / 2, "interval": list(interval), "confidence": 0.95,
          "details": {"alpha_interval": list(alpha)} if alpha else {}}
    assert rule.decide(ev) == verdict


@pytest.mark.parametrize("tests, verdict", [
    ({"joint_improves": True, "rebound": True, "depth_alone_improves": False, "joint_worsens": False}, "reproduced"),
    ({"joint_improves": True, "rebound": False, "depth_alone_improves": True, "joint_worsens": False},
     "inconclusive"),                                  # no rebound detected is not evidence against one
    ({"joint_improves": True, "rebound": False, "depth_alone_improves": True, "joint_worsens": False,
      "depth_alone_monotone": True}, "not reproduced"),
    ({"joint_improves": False, "rebound": True, "depth_alone_improves": False, "joint_worsens": True},
     "not reproduced"),
    ({"joint_improves": True, "rebound": False, "depth_alone_improves": False, "joint_worsens": False},
     "inconclusive"),
])
def test_rebound_rule(tests, verdict):
    assert Rule("rebound").decide({"details": {"tests": tests}}) == verdict


def test_missing_studies_resolve_to_none_and_existing_ones_to_callables():
    assert resolve_study("numerics.studies.not_a_module:f") is None
    assert resolve_study("numerics.studies.sweeps:not_a_function") is None
    assert callable(resolve_study("numerics.studies.reproduce._studies:signal_decay"))


def test_wiring_a_study_is_its_import_path(tmp_path):
    claim = dataclasses.replace(CLAIMS[7], study="tests.numerics.studies.test_reproduce:fake_study")
    ctx = rp.ReproduceContext(TINY, tmp_path, {}, {})
    res = rp._measure(claim, ctx)
    assert res.verdict == "not reproduced" and res.measured == "x = 1.5 [1.2, 1.9]"   # rule: below 0.5
    assert rp._measure(dataclasses.replace(claim, study="numerics.studies.nope:f"), ctx).verdict == "not run"


def test_tiny_suite_end_to_end_report(tmp_path, monkeypatch):
    monkeypatch.setitem(rp.SUITES, "quick", TINY)
    rep = rp.reproduce("quick", tmp_path, progress=False)
    text = (tmp_path / "report.md").read_text()
    assert len(rep.claims) == len(CLAIMS)
    for c in rep.claims:
        assert c.verdict in VERDICTS and c.claim.seed_words
        assert f"| {c.claim.id} (" in text
    verdicts = {c.claim.id: c.verdict for c in rep.claims}
    assert verdicts["ag_max_plateau"] != "not run"                       # the growth study measures it
    assert (tmp_path / "ag_max" ).is_dir()
    assert (tmp_path / "validity" / "validity.json").is_file()           # bound validity: the validity study ran
    assert verdicts["bound_validity"] in ("reproduced", "not reproduced", "inconclusive")
    assert (tmp_path / "figures" / "appendix-m.png").is_file() and "](figures/appendix-m.png)" in text
    assert (tmp_path / "claims.json").is_file()
    again = rp.reproduce("quick", tmp_path, progress=False)                    # resumes: nothing recomputed
    assert all(s["computed"] == 0 for s in again.sweeps.values())
    assert [c.verdict for c in again.claims] == [c.verdict for c in rep.claims]


def test_plateau_ratio_against_hand_computed_slopes():
    """Early slope -1 (AG_max = 1/D on D = 1, 2, 4), late slope 0 (flat on 8, 16, 32): ratio 0;
    a straight power law has ratio 1; no early drop is no plateau (inf)."""
    from numerics.studies.reproduce._studies import NO_EARLY_DROP, plateau_ratio

    d = np.array([1, 2, 4, 8, 16, 32.0])
    assert plateau_ratio(d, np.log(np.array([[1, .5, .25, .2, .2, .2]]))) == pytest.approx(0, abs=1e-12)
    assert plateau_ratio(d, np.log(1 / d)[None]) == pytest.approx(1.0)
    assert plateau_ratio(d, np.log(d)[None]) == NO_EARLY_DROP        # rising: no drop, no plateau
    rebound = np.log(np.array([[1, .5, .25, .5, 1, 2]]))               # drop, then rise at the same rate
    assert plateau_ratio(d, rebound) == pytest.approx(1.0)              # not a plateau either


def test_unknown_suite_is_input_error(tmp_path):
    from plumbing.validation import InputError

    with pytest.raises(InputError, match=r"--suite == 'huge', must be one of \['full', 'mnist1d', 'mnist1d-full', "
                                         r"'mnist1d-pilot', 'mnist1d-quick', 'quick'\]"):
        rp.reproduce("huge", tmp_path)


def test_full_suite_states_its_expected_duration():
    assert "FULL_EXPECTED" not in rp.SUITES["full"].expected and "core" in rp.SUITES["full"].expected
    assert rp.SUITES["full"].n_cells() > rp.SUITES["quick"].n_cells()


@pytest.mark.slow
def test_quick_suite_reports_every_claim(tmp_path):
    """The real quick suite on this machine's cores; its wall time is printed, not asserted (machine and load
    dependent: shared cores inflate it), and the report records it."""
    import time

    t0 = time.perf_counter()
    rep = rp.reproduce("quick", tmp_path, workers=rp.default_workers("local"), progress=False)
    wall = time.perf_counter() - t0
    print(f"quick suite took {wall / 60:.1f} min (report: {rep.wall_s / 60:.1f} min)")
    text = (tmp_path / "report.md").read_text()
    assert all(f"| {c.id} (" in text for c in CLAIMS) and 0 < rep.wall_s <= wall
