"""The full-budget diagnostic of the MiniLM trial benchmark (``benchmarks/bench_trial_minilm_budget.py``): the choice,
rho, noise-floor and reproducibility logic on planted gains (expected values computed here by hand or by scipy's exact
binomial interval), inputs it must reject, and its arm measurement on the tiny planted network of
``tests/api/_planted.py`` (not MiniLM) against the trial benchmark's own truth of every arm."""
from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats

from benchmarks import bench_trial_minilm as trial
from benchmarks import bench_trial_minilm_budget as fb
from tests.api._planted import Planted, draw, squared


def _g(select, heldout, a, b):
    return {"select": select, "heldout": heldout, "heldout_A": a, "heldout_B": b}


def _gains(**over):
    """Three blocks and a tuned layer; select ranks c > a > b > t, heldout ranks a > c > b > t."""
    g = {"block@a": _g(0.030, 0.100, 0.120, 0.080), "block@b": _g(0.020, 0.060, 0.060, 0.060),
         "block@c": _g(0.040, 0.085, 0.050, 0.120), "tune@a": _g(-0.50, -0.20, -0.21, -0.19),
         "no change": _g(0.0, 0.0, 0.0, 0.0)}
    return {**g, **over}


def _spearman_no_ties(x, y):
    rx = {v: i for i, v in enumerate(sorted(x))}
    ry = {v: i for i, v in enumerate(sorted(y))}
    n = len(x)
    return 1 - 6 * sum((rx[a] - ry[b]) ** 2 for a, b in zip(x, y)) / (n * (n * n - 1))


def test_full_budget_choice_fails_below_the_fraction_and_passes_above():
    d = fb.decisions(_gains())
    # the select split picks block@c, 0.085 held out, against the best 0.100: 0.85 < 0.9, the rule rejects it
    assert d["chosen"] == "block@c" and d["best_arm"] == "block@a" and not d["passes"]
    assert d["ratio_to_best"] == pytest.approx(0.85)
    d = fb.decisions(_gains(**{"block@c": _g(0.040, 0.095, 0.05, 0.12)}))       # 0.95 of the best: passes
    assert d["chosen"] == "block@c" and d["passes"] and d["ratio_to_best"] == pytest.approx(0.95)
    # every trained arm below 0 on select: no change is chosen; it passes iff every held-out gain is <= 0
    neg = {k: _g(-0.01, v["heldout"], v["heldout_A"], v["heldout_B"]) for k, v in _gains().items() if k != "no change"}
    d = fb.decisions({**neg, "no change": _g(0.0, 0.0, 0.0, 0.0)})
    assert d["chosen"] == "no change" and d["chosen_heldout_gain"] == 0.0 and not d["passes"]
    assert d["cost_ratio"] == 4.0 and d["n_arms_trained"] == 4


def test_rho_and_the_noise_floor_of_the_halves():
    g = _gains()
    d = fb.decisions(g)
    arms = list(g)
    assert d["rho_select_vs_heldout"] == pytest.approx(_spearman_no_ties([g[a]["select"] for a in arms], [g[a]["heldout"] for a in arms]))
    assert d["rho_select_vs_heldout"] == pytest.approx(0.9)          # one swap among 5 arms: 1 - 6 * 2 / 120
    # half A picks block@a (0.12), judged on B: 0.080 < 0.9 * 0.120 -> rejected; half B picks block@c, judged on A: 0.05 < 0.108
    assert d["A_picks_B_judges"]["chosen"] == "block@a" and not d["A_picks_B_judges"]["passes"]
    assert d["B_picks_A_judges"]["chosen"] == "block@c" and not d["B_picks_A_judges"]["passes"]
    d = fb.decisions(_gains(**{"block@c": _g(0.040, 0.085, 0.110, 0.120)}))
    assert not d["A_picks_B_judges"]["passes"] and d["B_picks_A_judges"]["passes"]    # 0.110 >= 0.108


def test_reproducibility_check_is_relative_and_needs_every_arm():
    g = _gains()
    truth = {a: v["heldout"] for a, v in g.items()}
    assert fb.decisions(g, truth)["n_match_truth"] == 5
    off = {**truth, "block@a": 0.100 * (1 + 2e-5), "block@b": 0.060 * (1 + 5e-6)}
    m = fb.decisions(g, off)["truth_match"]
    assert not m["block@a"] and m["block@b"] and sum(m.values()) == 4
    assert fb.decisions(g, {a: v for a, v in truth.items() if a != "tune@a"})["n_match_truth"] == 4
    assert fb.decisions(g)["truth_match"] == {}


@pytest.mark.parametrize("bad", [
    {k: v for k, v in _gains().items() if k != "no change"},                       # no "no change" arm
    _gains(**{"no change": _g(0.0, 0.01, 0.0, 0.0)}),                              # no change is not 0
    _gains(**{"block@b": _g(0.02, math.nan, 0.0, 0.0)}),                           # a NaN gain
    _gains(**{"block@b": {"select": 0.02, "heldout": 0.06}}),                       # parts missing
    {"block@a": _g(0.1, 0.1, 0.1, 0.1), "no change": _g(0.0, 0.0, 0.0, 0.0)},      # one trained arm
])
def test_decisions_reject_malformed_gains(bad):
    with pytest.raises(ValueError):
        fb.decisions(bad)


def _row(passes, rho, ab, ba, cost=7.0):
    return {"passes": passes, "rho_select_vs_heldout": rho, "A_picks_B_judges": {"passes": ab}, "B_picks_A_judges": {"passes": ba},
            "cost_ratio": cost, "n_match_truth": 8, "truth_match": dict.fromkeys("abcdefgh", True)}


def test_budget_summary_counts_interval_median_and_wording():
    rows = [_row(i < 6, rho, i < 3, i < 4) for i, rho in enumerate([0.1, 0.5, -0.2, 0.9, 0.3, 0.7, 0.2, 0.4, 0.6, 0.8])]
    s = fb.budget_summary(rows)
    ci = stats.binomtest(6, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert (s["n_pass"], s["n_seeds"], s["n_A_picks_B_judges"], s["n_B_picks_A_judges"]) == (6, 10, 3, 4)
    assert s["rate_cp95"] == pytest.approx([ci.low, ci.high], abs=1e-9)
    assert s["rho_median"] == pytest.approx(statistics.median(r["rho_select_vs_heldout"] for r in rows))
    assert s["cost_ratio_mean"] == 7.0 and (s["n_arms_match_truth"], s["n_arms"]) == (80, 80)
    assert "(cost 7x) and chooses on the select split passes in 6/10 seeds" in s["wording"][0]
    assert "against its own other half passes in 3/10" in s["wording"][1]
    assert "PASS" not in " ".join(s["wording"]) and "FAIL" not in " ".join(s["wording"])


def test_arm_gains_on_the_planted_network_reproduce_the_trials_truth():
    """The trial benchmark's seed row (trial, then its truth) against this module's own scan and arms."""
    fit, sel, held = draw(400, 1), draw(200, 2), draw(300, 3)
    kw = {"lr": 2e-2, "batch_size": 64, "seed": 0}
    row = trial.seed_row(Planted(), fit, sel, held, sites="blocks.*", steps=9, eta=3, loss=squared, scan_kwargs={"curvature_n": 64}, **kw)
    tune = next(k for k in row["truth"] if k.startswith("tune@")).split("@", 1)[1]
    model = Planted()
    rep = fb.scan_report(model, fit, squared, 0, sites="blocks.*", scan_kwargs={"curvature_n": 64})
    gains = fb.arm_gains(model, fit, sel, held, rep, tune, steps=9, loss_fn=squared, **kw)
    d = fb.decisions(gains, row["truth"])
    assert set(gains) == set(row["truth"]) and d["n_match_truth"] == len(gains) == 5
    for g in gains.values():                         # 300 held-out samples: the halves' means average to the whole's
        assert (g["heldout_A"] + g["heldout_B"]) / 2 == pytest.approx(g["heldout"], abs=1e-12)
    # the trial's select gains at H for its surviving arms are this module's select gains at H
    for a in row["arms"]:
        if a["steps_trained"] == 9 and a["arm"] != "no change":
            assert gains[a["arm"]]["select"] == pytest.approx(a["select_gains"][-1], rel=1e-6)


@pytest.mark.parametrize("argv", [["--seeds", "0"], ["--seeds", "x"], ["--first-seed", "-1"]])
def test_bad_flags_exit_2_through_both_commands(argv, capsys):
    for main in (fb.main, lambda a: trial.main(["--full-budget", *a])):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert argv[0] in capsys.readouterr().err.splitlines()[-1]
