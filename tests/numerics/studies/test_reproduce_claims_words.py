"""Issue 34, item 5: claims decided by the seeds' words, not by our thresholds.

A verdict that flips inside the range of a Choice threshold is convention-dependent (with the threshold where
it flips); a measurement outside the seed's setup is never counted as a reproduction; bound validity needs
shown power; the stored MNIST-1D reports are the current rules applied to their stored evidence."""
import json
import shutil
from pathlib import Path

import pytest

from numerics.studies.reproduce._claims import (MNIST1D_CLAIMS, OTHER_SETUP, CLAIMS, Claim, Rule, decide,
                                                 threshold_sweep)

DOCS = Path(__file__).resolve().parents[3] / "docs"
M = {c.id: c for c in MNIST1D_CLAIMS}


def _conv(lo, hi, name="c"):
    return {"convention": name, "statistic": "ratio", "estimate": (lo + hi) / 2, "interval": [lo, hi]}


def test_a_choice_threshold_that_flips_the_verdict_makes_it_convention_dependent():
    """covariance (below 1/sqrt(2), a reader's range [0.5, 0.9]): the verdict is 'not reproduced' for a threshold
    below the interval, 'reproduced' above it, so the flips are at the interval's ends -- by the rule's definition,
    not by the implementation."""
    claim = M["covariance_near_diagonal"]
    ev = {"details": {"conventions": [_conv(0.7216, 0.7442, "per channel"), _conv(0.95, 0.97, "state"),
                                      _conv(0.30, 0.40, "tiny")]}}
    verdict, convs = decide(claim, ev)
    assert verdict == "convention-dependent"
    assert [c["verdict"] for c in convs] == ["convention-dependent", "not reproduced", "reproduced"]
    assert "flips at 0.7216, 0.7442" in convs[0]["note"] and "flips" not in convs[1]["note"] + convs[2]["note"]
    assert threshold_sweep(claim.rule, {"interval": [0.7216, 0.7442]}, 0.5, 0.9) == [
        (0.5, 0.7216, "not reproduced"), (0.7216, 0.7442, "inconclusive"), (0.7442, 0.9, "reproduced")]
    # without a range (a threshold that is not a Choice) the same evidence keeps the rule's verdict
    fixed = Claim("p", "Paper A", "w", "m:f", "x", Rule("below", 1 / 2 ** 0.5))
    assert [c["verdict"] for c in decide(fixed, ev)[1]] == ["not reproduced", "not reproduced", "reproduced"]


def test_threshold_sweep_of_the_within_and_plateau_rules():
    within = Rule("within", 1.0)
    assert threshold_sweep(within, {"interval": [-1.6, 1.0]}, 0.5, 2.0) == [(0.5, 1.6, "inconclusive"),
                                                                           (1.6, 2.0, "reproduced")]
    plateau = Rule("plateau", 0.5)
    t = {"details": {"tests": {"early_drop": True, "early_rise": False, "flat": False, "flat_upper": 0.908}}}
    assert threshold_sweep(plateau, t, 0.25, 1.0) == [(0.25, 0.908, "inconclusive"), (0.908, 1.0, "reproduced")]


def test_the_stored_covariance_flips_where_its_interval_ends():
    """The full suite's stored per-channel covariance: 0.733 [0.722, 0.744] against the Choice 0.707 -- 'not
    reproduced' at 0.707 but 'reproduced' at 0.8, so convention-dependent, flipping at the interval's ends."""
    stored = json.loads((DOCS / "reproduce-mnist1d" / "claims.json").read_text())
    cov = next(c for c in stored["claims"] if c["id"] == "covariance_near_diagonal")
    per_channel = cov["conventions"][0]
    lo, hi = per_channel["interval"]
    assert per_channel["verdict"] == "convention-dependent" and lo > 1 / 2 ** 0.5 and hi < 0.8
    assert f"flips at {lo:.4g}, {hi:.4g}" in per_channel["note"]


def test_growth_outside_the_seeds_setup_is_never_counted_as_reproduced():
    claim = M["growth_vs_scratch"]
    assert not claim.seed_setup and claim.id == "growth_vs_scratch"
    ev = {"estimate": 0.118, "interval": [0.011, 0.225], "details": {"mde": 0.4}}
    verdict, convs = decide(claim, ev)
    assert verdict == OTHER_SETUP and convs[0]["verdict"] == "reproduced"     # the rule's verdict, kept beside it
    assert "not counted" in convs[0]["note"]
    assert decide(M["growth_own_block"], {"details": {"conventions": [_conv(0.1, 0.2)]}})[0] == "reproduced"


def test_the_report_does_not_count_another_setup_as_reproduced(tmp_path):
    from numerics.studies.reproduce import ClaimResult, ReproduceReport
    from numerics.studies.reproduce._report import render_report

    claim = M["growth_vs_scratch"]
    r = ClaimResult(claim, OTHER_SETUP, "m", {"figures": []}, None)
    text = render_report(ReproduceReport("mnist1d", str(tmp_path), (r,), 1.0, {}, {}, "x"), tmp_path)
    assert "Summary: 1 not the seed's setup." in text and "1 reproduced" not in text


@pytest.mark.parametrize("n,details,verdict", [
    (0, {"significant": [], "flagged": ["eps_K x 0.01"]}, "inconclusive"),               # stored: no power per event
    (0, {"significant": [], "flagged": ["x"], "unpowered": ["event E_S"]}, "inconclusive"),
    (0, {"significant": [], "flagged": ["x"], "unpowered": []}, "reproduced"),
    (1, {"significant": ["route direct"], "flagged": ["x"], "unpowered": ["event E_S"]}, "not reproduced"),
    (float("nan"), {"significant": [], "flagged": [], "unpowered": []}, "inconclusive"),  # no weakening flagged
])
def test_bound_validity_needs_shown_power(n, details, verdict):
    for claims in (MNIST1D_CLAIMS, CLAIMS):
        rule = next(c for c in claims if c.id == "bound_validity").rule
        assert rule.decide({"estimate": n, "interval": [n, n], "details": details}) == verdict


def test_unpowered_guarantees_names_every_event_without_a_flagged_weakening():
    from numerics.studies.reproduce._studies import unpowered_guarantees

    summary = {"routes": {"population": {"events": ["E_S", "H_new"]}, "tight": {"events": ["tight/E_S", "tight/E_T"]},
                          "heldout": {"events": []}},
               "power": {"a": {"event": "E_S", "weakened": True, "flagged": True},
                         "b": {"event": "H_new", "weakened": True, "flagged": False},
                         "c": {"event": "E_T", "weakened": False, "flagged": True}}}
    assert unpowered_guarantees(summary) == ["event E_T", "event H_new", "route heldout (names no event)"]
    summary["power"]["b"]["flagged"] = summary["power"]["c"]["weakened"] = True
    summary["routes"].pop("heldout")
    assert unpowered_guarantees(summary) == []


@pytest.mark.parametrize("name,suite", [("reproduce-mnist1d", "mnist1d"), ("reproduce-mnist1d-quick", "mnist1d-quick")])
def test_the_stored_reports_are_the_current_rules_on_their_stored_evidence(tmp_path, name, suite):
    """Deciding a stored report again (a copy) changes no verdict and no number: the stored report is current."""
    from numerics.studies.reproduce._redecide import redecide

    shutil.copytree(DOCS / name, tmp_path / name)
    redecide(tmp_path / name, suite)
    new, old = (json.loads(p.read_text()) for p in (tmp_path / name / "claims.json", DOCS / name / "claims.json"))
    for a, b in zip(new["claims"], old["claims"]):
        assert (a["id"], a["verdict"], a["measured"]) == (b["id"], b["verdict"], b["measured"])
        assert [(c["convention"], c["verdict"], c["note"]) for c in a["conventions"]] == \
               [(c["convention"], c["verdict"], c["note"]) for c in b["conventions"]]
    verdicts = {c["id"]: c["verdict"] for c in old["claims"]}
    assert verdicts["growth_vs_scratch"] == OTHER_SETUP and verdicts["bound_validity"] == "inconclusive"
    assert verdicts["covariance_near_diagonal"] == "convention-dependent"
