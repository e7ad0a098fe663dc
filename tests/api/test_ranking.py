"""The scan says what it knows: the default ranking is the rule's pick on the stored pooled table, a user can
rank by another score, and a user's calibration that shows no predictive power is said, with the pointer to
``dc.trial_insertion``. Expected values come from tables built by hand (their picks known by construction) and
from counting permutations (``1/5! = 1/120``)."""
import dataclasses
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from torch import nn

import depthcert as dc
from depthcert.api._ranking import RANK_BY_SCORES, RANKING_RULE, calibration_judgement, default_ranking
from depthcert.api._verdict import RANKED_BY

ROOT = Path(__file__).resolve().parents[2]
POOLED = ROOT / "docs" / "predicted" / "pooled.json"


def row(h, score, rho, p, target="realised_gain"):
    return {"horizon": h, "score": score, "target": target, "rho": rho, "p_one_sided": p, "level": 0.05}


# ---- 1. the default ranking is the rule's pick on the stored table ----------------------------------------

def test_the_default_ranking_is_the_rules_pick_on_the_stored_pooled_table():
    pooled = json.loads(POOLED.read_text())
    pick = default_ranking(pooled)
    every = [h for h in pooled["horizons"] if set(pooled["networks_per_horizon"][str(h)]) == set(pooled["networks"])]
    assert pick["horizon"] == max(every)        # the horizon users act on: the largest stored for every network
    assert RANKED_BY == pick["score"], (
        f"the stored table {POOLED.relative_to(ROOT)} ({pooled['command']}) now picks {pick['score']!r} by the rule "
        f"({pick['reason']}), but RANKED_BY is {RANKED_BY!r}: change RANKED_BY (numerics/user_network/_verdict.py) and the "
        "pages that state the default, or say why the rule changed")
    stored = next(r for r in pooled["calibration"] if r["horizon"] == pick["horizon"] and r["score"] == pick["score"]
                  and r["target"] == "realised_gain")
    assert (pick["rho"], pick["p_one_sided"]) == (stored["rho"], stored["p_one_sided"])
    assert pick == default_ranking(POOLED)                        # the path reads the same table


def test_the_rule_picks_the_largest_rho_among_predicting_scan_scores_at_the_largest_horizon():
    table = [row(0, "AG_max", 1.0, 0.001),                      # a better score at another horizon: not read
             row(100, "predicted_gain", 0.5, 0.04), row(100, "P_affine", 0.9, 0.01), row(100, "P_linear", 0.95, 0.06),
             row(100, "block_influence", 1.0, 0.001),           # not a score the scan ranks by
             row(100, "AG_max", 1.0, 0.001, target="tune_gain")]  # another target
    pick = default_ranking(table)
    assert (pick["score"], pick["horizon"], pick["rho"]) == ("P_affine", 100, 0.9)
    assert {c["score"]: c["eligible"] for c in pick["rows"]} == {"predicted_gain": True, "P_affine": True, "P_linear": False}
    assert default_ranking(table, horizon=0)["score"] == "AG_max"            # the horizon matters (power)
    assert default_ranking(pd.DataFrame(table))["score"] == "P_affine"        # a dc.calibration DataFrame
    # p == level is in, a hair above is out; ties in rho go to the smaller p
    assert default_ranking([row(5, "P_affine", 0.7, 0.05), row(5, "predicted_gain", 0.6, 0.01)])["score"] == "P_affine"
    assert default_ranking([row(5, "P_affine", 0.7, 0.0501), row(5, "predicted_gain", 0.6, 0.01)])["score"] == "predicted_gain"
    assert default_ranking([row(5, "P_affine", 0.7, 0.03), row(5, "AG_max", 0.7, 0.02)])["score"] == "AG_max"


def test_without_a_predicting_score_the_rule_keeps_the_papers_score():
    pick = default_ranking([row(10, "predicted_gain", 0.2, 0.3), row(10, "P_affine", float("nan"), float("nan")),
                            row(10, "AG_max", -0.9, 0.99)])
    assert (pick["score"], pick["rho"], pick["p_one_sided"]) == ("predicted_gain", 0.2, 0.3)
    assert "no scan score predicts" in pick["reason"] and pick["rule"] == RANKING_RULE
    assert default_ranking([row(10, "AG_max", 0.1, 0.5)])["rho"] is None     # no row of the paper's score: none quoted


@pytest.mark.parametrize("table,msg", [("nope.json", "No such file"), (42, "must be a dc.calibration DataFrame"),
                                       ([{"horizon": 0, "score": "x"}], "missing [['p_one_sided', 'rho']]")])
def test_a_bad_table_is_refused(table, msg):
    with pytest.raises((ValueError, FileNotFoundError), match=re.escape(msg)):
        default_ranking(table)
    with pytest.raises(ValueError, match=re.escape("horizon == 7, must be None or one of the table's horizons [0]")):
        default_ranking([row(0, "AG_max", 0.1, 0.5)], horizon=7)


# ---- 2. ranking by another score ------------------------------------------------------------------------------

def _net_and_data():
    """Four sites of a random tanh network, three of which reject ``G = 0``; ``predicted_gain`` picks ``2`` and the
    projection scores ``3`` (seen on this seed; the test below asserts only what follows from the records)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), *[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(4)], nn.Linear(8, 2)).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1024, 3, generator=g, dtype=torch.float64)
    return net, (x, ((x[:, 0] * x[:, 1]) > 0).long())


@pytest.fixture(scope="module")
def scans():
    net, data = _net_and_data()
    kw = dict(sites=["1", "2", "3", "4"], curvature_n=128)
    return {rb: dc.saturation(net, data, rank_by=rb, **kw) for rb in (None, "P_affine", "AG_max")} | {
        "auto": dc.saturation(net, data, rank_by="P_affine", curvature="auto", **kw),
        "none": dc.saturation(net, data, curvature="none", **kw)}


def _pick(rep, score):
    pool = [r for r in rep.sites if r["reject"]] or rep.sites
    return max(pool, key=lambda r: r[score])["site"]


def test_rank_by_ranks_best_site_by_the_named_score(scans):
    base = scans[None]
    assert base.ranked_by == "predicted_gain" and base.best_site == _pick(base, "predicted_gain")
    for rb in ("P_affine", "AG_max"):
        rep = scans[rb]
        assert rep.ranked_by == rb and rep.to_dict()["ranked_by"] == rb and rep.best_site == _pick(rep, rb)
        assert rep.predicted_gain == rep.site(rep.best_site)["predicted_gain"]
        assert any(f"best_site is ranked by {rb}" in n for n in rep.notes)
        assert rep.sites == base.sites and rep.verdict == base.verdict   # the scores and the verdict do not move
    assert len({_pick(base, s) for s in ("predicted_gain", "P_affine")}) == 2, "the scores must disagree on this network"
    assert scans["P_affine"].best_site != base.best_site


def test_rank_by_with_curvature_auto_and_none(scans):
    auto, full = scans["auto"], scans["P_affine"]
    assert (auto.best_site, auto.predicted_gain, auto.verdict) == (full.best_site, full.predicted_gain, full.verdict)
    assert len(auto.curvature_sites) < len(full.curvature_sites)     # only best_site needed beta_natural
    none = scans["none"]
    assert none.ranked_by == "G_sq" and none.best_site == _pick(none, "G_sq")   # the report names what it ranked by


@pytest.mark.parametrize("kw,msg", [
    ({"rank_by": "nope"}, "rank_by == 'nope', must be None (the default ranking) or one of ['predicted_gain', 'P_linear', "
                          "'P_affine', 'P_readout', 'P_all', 'AG_max', 'G_sq']."),
    ({"rank_by": "P_block"}, "rank_by == 'P_block', must be None (the default ranking) or one of"),
    ({"rank_by": 3}, "rank_by == 3, must be None"),
    ({"rank_by": "predicted_gain", "curvature": "none", "suggest": False},
     "(predicted_gain needs the curvature: curvature='none' measures none)")])
def test_a_bad_rank_by_is_one_line_naming_the_argument_values_and_value(kw, msg):
    net, data = _net_and_data()
    with pytest.raises(ValueError, match=re.escape(msg)) as e:
        dc.saturation(net, data, sites=["1"], curvature_n=64, **kw)
    assert "\n" not in str(e.value)
    assert set(RANK_BY_SCORES) >= {"predicted_gain", "P_affine", "AG_max"}


# ---- 3. a user's calibration: predictive or not, for the score the report ranks by -----------------------------

@pytest.fixture(scope="module")
def report():
    return dc.saturation(*_net_and_data(), sites=["1", "2"], curvature_n=64)


def test_a_predicting_calibration_gives_no_warning(report):
    calib = pd.DataFrame([row(0, "predicted_gain", 0.1, 0.6), row(100, "predicted_gain", 0.9, 0.01),
                          row(100, "P_affine", -0.5, 0.9)])
    rep = report.with_calibration(calib)
    assert rep.predictive is True and "trial_insertion" not in rep.calibration_note
    assert rep.calibration_note == ("calibration on your network: predicted_gain rho=+0.90, p=0.01 at horizon 100 — predicts "
                                    "the ranking of the trained gains (one-sided permutation p <= 0.05)")
    assert str(rep).splitlines()[1] == rep.calibration_note and report.predictive is None and str(report).count("\n") == 0
    assert rep.calibration["horizon"] == 100 and rep.to_dict()["predictive"] is True
    json.dumps(rep.to_dict())


def test_no_predictive_power_is_said_with_the_pointer_to_trial_insertion(report):
    calib = [row(0, "predicted_gain", 0.9, 0.01), row(100, "predicted_gain", 0.2, 0.4)]
    rep = report.with_calibration(calib)
    assert rep.predictive is False
    assert rep.calibration_note == ("calibration on your network: predicted_gain rho=+0.20, p=0.4 at horizon 100 — no evidence "
                                    "it predicts the trained gains (level 0.05); ask dc.trial_insertion for a measured answer")
    assert rep.calibration_note in str(rep)
    assert report.with_calibration(calib, horizon=0).predictive is True           # the horizon read matters
    assert report.with_calibration([row(3, "predicted_gain", 0.9, 0.051)]).predictive is False   # p just above the level
    assert report.with_calibration([row(3, "predicted_gain", 0.9, 0.051)], level=0.1).predictive is True


def test_the_row_read_is_the_reports_ranked_by_score(report):
    calib = [row(100, "predicted_gain", 0.1, 0.5), row(100, "P_affine", 1.0, 1 / 120)]   # only another score predicts
    assert report.with_calibration(calib).predictive is False
    by_affine = dataclasses.replace(report, ranked_by="P_affine")
    assert by_affine.with_calibration(calib).predictive is True
    with pytest.raises(ValueError, match=re.escape("calib has no row of score 'AG_max' (target 'realised_gain'), must have one: "
                                                   "it has the scores ['P_affine', 'predicted_gain']")):
        dataclasses.replace(report, ranked_by="AG_max").with_calibration(calib)
    undefined = report.with_calibration([row(1, "predicted_gain", float("nan"), float("nan"))])   # a constant score
    assert undefined.predictive is False and "rho undefined" in undefined.calibration_note


def test_with_calibration_reads_dc_calibration_of_a_table_built_by_hand(report):
    """Five sites, two seeds: a score in the gains' order has the exact one-sided p 1/5! = 1/120 (predicts); the
    reversed order has p 1 (no evidence: the warning)."""
    gains = [0.1, 0.2, 0.3, 0.4, 0.5]
    rows = [{"seed": s, "site": f"s{k}", "horizon": 10, "realised_gain": g + 0.01 * s, "predicted_gain": g,
             "P_affine": -g} for s in (0, 1) for k, g in enumerate(gains)]
    calib = dc.calibration(pd.DataFrame(rows), scores=["predicted_gain", "P_affine"])
    rep = report.with_calibration(calib)
    assert rep.predictive is True and rep.calibration["p_one_sided"] == pytest.approx(1 / 120)
    rev = dataclasses.replace(report, ranked_by="P_affine").with_calibration(calib)
    assert rev.predictive is False and rev.calibration["p_one_sided"] == pytest.approx(1.0)
    assert "ask dc.trial_insertion" in str(rev) and "rho=-1.00" in rev.calibration_note


def test_a_bad_level_or_horizon_of_the_judgement_is_named():
    rows = [row(0, "predicted_gain", 0.9, 0.01), row(10, "predicted_gain", 0.9, 0.01)]
    with pytest.raises(ValueError, match=re.escape("level == 1.5, must be None or in (0, 1).")):
        calibration_judgement(rows, "predicted_gain", level=1.5)
    with pytest.raises(ValueError, match=re.escape("horizon == 3, must be None or one of the horizons of 'predicted_gain' "
                                                   "in calib: [0, 10].")):
        calibration_judgement(rows, "predicted_gain", horizon=3)
    assert calibration_judgement(rows, "predicted_gain")["horizon"] == 10


def test_of_a_pooled_table_the_rule_reads_the_largest_horizon_pooled_over_every_network():
    """A horizon stored for some networks only (``n_strata`` below the number of networks) is not the rule's."""
    rows = [dict(row(40, "P_affine", 0.9, 0.01), n_strata=3), dict(row(40, "predicted_gain", 0.2, 0.4), n_strata=3),
            dict(row(100, "predicted_gain", 0.9, 0.01), n_strata=2)]
    pooled = {"networks": ["a", "b", "c"], "calibration": rows}
    assert (default_ranking(pooled)["score"], default_ranking(pooled)["horizon"]) == ("P_affine", 40)
    assert default_ranking(rows)["horizon"] == 100                                # without networks: every row counts
    assert default_ranking(dict(pooled, networks=["a", "b"]))["horizon"] == 100   # power: the count decides
