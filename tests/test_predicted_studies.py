"""The stored predicted-vs-observed studies (``docs/predicted/``, ``benchmarks/study_predicted.py``): every rho,
permutation p-value and slope in their ``calibration.json`` is recomputed here from the stored per-row
``table.csv`` by an independent computation (scipy's Spearman and OLS; the exact permutation p by enumerating
every ordering of the sites with itertools), and the pages quote exactly the stored numbers (the cross-network
table and the per-network READMEs are rendered from the stored JSONs; a planted wrong number fails)."""
from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "docs" / "predicted"
NETWORKS = sorted(p.parent.name for p in STUDIES.glob("*/calibration.json"))
PAGE = STUDIES / "README.md"
BEGIN, END = "<!-- cross-network table: begin -->", "<!-- cross-network table: end -->"


def _study(net):
    cal = json.loads((STUDIES / net / "calibration.json").read_text())
    t = pd.read_csv(STUDIES / net / "table.csv")
    return cal, t[t["kind"] == "seed"]


def _rank_p(x, y) -> tuple[float, float]:
    """Spearman's rho (scipy) and the exact one-sided permutation p: the share of the orderings of ``y``
    whose rho with ``x`` is at least the observed one (all n! of them)."""
    rho = stats.spearmanr(x, y).statistic
    rx = stats.rankdata(x)
    perms = [stats.spearmanr(rx, np.asarray(y)[list(p)]).statistic for p in itertools.permutations(range(len(y)))]
    return float(rho), float(np.mean(np.asarray(perms) >= rho - 1e-12))


def test_there_are_stored_studies():
    assert len(NETWORKS) >= 2, NETWORKS


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")   # a seed whose score is constant over sites
@pytest.mark.parametrize("net", NETWORKS)
def test_stored_rho_p_and_slope_are_recomputed_independently(net):
    cal, rows = _study(net)
    assert len(cal["calibration"]) == len(cal["scores"]) * len(cal["config"]["horizons"])
    checked = 0
    for c in cal["calibration"]:
        g = rows[rows["horizon"] == c["horizon"]].groupby("site")[[c["score"], "realised_gain"]].mean()
        x, y = g[c["score"]].to_numpy(float), g["realised_gain"].to_numpy(float)
        if np.ptp(x) == 0:
            assert c["rho"] is None
            continue
        rho, p = _rank_p(x, y)
        assert c["rho"] == pytest.approx(rho, abs=1e-9), (net, c["horizon"], c["score"])
        assert c["exact"] and c["p_one_sided"] == pytest.approx(p, abs=1e-9), (net, c["horizon"], c["score"])
        assert c["predicts"] == (p <= 0.05)
        per = [stats.spearmanr(gs[c["score"]].to_numpy(float), gs["realised_gain"].to_numpy(float)).statistic
               for _, gs in rows[rows["horizon"] == c["horizon"]].groupby("seed")]
        per = np.asarray([r for r in per if np.isfinite(r)])
        if len(per) >= 2:
            half = stats.t.ppf(0.975, len(per) - 1) * per.std(ddof=1) / math.sqrt(len(per))
            assert (c["rho_seeds"], c["rho_seeds_lo"], c["rho_seeds_hi"]) == pytest.approx(
                (per.mean(), per.mean() - half, per.mean() + half), abs=1e-9)
        if c["slope"] is not None:
            fit = stats.linregress(x, y)
            half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
            assert (c["slope"], c["slope_lo"], c["slope_hi"]) == pytest.approx((fit.slope, fit.slope - half, fit.slope + half),
                                                                                abs=1e-9)
        checked += 1
    assert checked >= len(cal["scores"])


def test_a_wrong_stored_p_value_is_caught():
    """Power of the check above: the exact p of a shuffled target differs from the stored one somewhere."""
    net = NETWORKS[0]
    cal, rows = _study(net)
    c = next(c for c in cal["calibration"] if c["score"] == "predicted_gain" and c["horizon"] == 0)
    g = rows[rows["horizon"] == 0].groupby("site")[["predicted_gain", "realised_gain"]].mean()
    x, y = g["predicted_gain"].to_numpy(float), g["realised_gain"].to_numpy(float)
    assert any(_rank_p(x, y[list(p)]) != pytest.approx((c["rho"], c["p_one_sided"]), abs=1e-9)
               for p in itertools.permutations(range(len(y))))


def test_pooled_rho_is_the_mean_of_the_networks_and_its_p_is_close_to_an_independent_monte_carlo():
    pooled = json.loads((STUDIES / "pooled.json").read_text())
    assert set(pooled["networks"]) == set(NETWORKS)
    frames = {n: _study(n)[1] for n in pooled["networks"]}
    rng = np.random.default_rng(12345)
    for c in pooled["calibration"]:
        if c["score"] != "predicted_gain" and c["score"] != "P_readout":
            continue
        xs, ys = [], []
        nets = c.get("networks", pooled["networks"])     # each horizon pools the networks that measured it
        assert nets == [n for n in pooled["networks"] if c["horizon"] in set(frames[n]["horizon"])] and len(nets) >= 2
        for n, rows in ((n, frames[n]) for n in nets):
            g = rows[rows["horizon"] == c["horizon"]].groupby("site")[[c["score"], "realised_gain"]].mean()
            xs.append(stats.rankdata(g[c["score"]].to_numpy(float)))
            ys.append(g["realised_gain"].to_numpy(float))
        obs = np.mean([stats.spearmanr(x, y).statistic for x, y in zip(xs, ys)])
        assert c["rho"] == pytest.approx(obs, abs=1e-9)
        draws = 4000
        sims = np.array([np.mean([stats.spearmanr(x, rng.permutation(y)).statistic for x, y in zip(xs, ys)])
                         for _ in range(draws)])
        p = float(np.mean(sims >= obs - 1e-12))
        se = math.sqrt(max(p * (1 - p), 1e-4) * (1 / draws + 1 / max(c["n_permutations"], 1)))
        assert abs(c["p_one_sided"] - p) <= 5 * se + 1e-3, (c["horizon"], c["score"], c["p_one_sided"], p)


def _block(text: str) -> str:
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip()


def _page_quotes_the_stored_numbers(page: str) -> bool:
    from benchmarks.study_predicted import cross_table, predicts_summary

    return BEGIN in page and _block(page) == (cross_table(STUDIES) + "\n\n" + predicts_summary(STUDIES)).strip()


def test_the_page_quotes_the_rendered_table_and_a_planted_number_fails():
    page = PAGE.read_text()
    assert _page_quotes_the_stored_numbers(page)
    planted = re.sub(r"\(p (\d)\.(\d)", lambda m: f"(p {m.group(1)}.{(int(m.group(2)) + 1) % 10}", page, count=1)
    assert planted != page and not _page_quotes_the_stored_numbers(planted)
    rho_planted = re.sub(r"\| ([+-])0\.(\d)", lambda m: f"| {m.group(1)}0.{(int(m.group(2)) + 1) % 10}", page, count=1)
    assert rho_planted != page and not _page_quotes_the_stored_numbers(rho_planted)


@pytest.mark.parametrize("net", NETWORKS)
def test_each_readme_quotes_its_stored_calibration_and_command(net):
    from benchmarks.study_predicted import render_rows

    cal, _ = _study(net)
    text = (STUDIES / net / "README.md").read_text()
    assert render_rows(cal["calibration"]) in text and cal["command"] in text
    assert f"--network {net}" in cal["command"] and f"--seeds {len(cal['config']['seeds'])}" in cal["command"]


def test_wording_follows_the_numbers():
    from benchmarks.study_predicted import verdict

    assert verdict({"rho": 0.9, "p_one_sided": 0.0417}) == "predicts the ranking"
    assert verdict({"rho": 0.9, "p_one_sided": 0.0667}) == "no evidence that the score predicts"
    for line in _block(PAGE.read_text()).splitlines():
        if line.startswith("| ") and "(p " in line:
            p = float(re.findall(r"\(p ([\d.e-]+)\)", line)[-1])
            assert ("no evidence" in line) == (p > 0.05), line


def test_the_minilm_costs_the_page_quotes_are_the_stored_ones():
    study = json.loads((ROOT / "docs/reproduce-pretrained/study.json").read_text())
    sec = study["seconds_per_seed"]
    text = " ".join(PAGE.read_text().split())
    assert f"spent {min(sec):.0f} s to {max(sec):.0f} s per seed" in text
    assert f"one scan alone {study['scan_cost']['scan_s']:.1f} s" in text


FIRST_ORDER = sorted(p.parent.name for p in STUDIES.glob("*/first_order.json"))


@pytest.mark.parametrize("net", FIRST_ORDER)
def test_stored_first_order_ratios_are_recomputed_independently(net):
    from benchmarks.study_predicted import render_first_order

    fo = json.loads((STUDIES / net / "first_order.json").read_text())
    seeds = pd.DataFrame(fo["seed_rows"])
    for c in fo["checks"]:
        g = seeds[(seeds["site"] == c["site"]) & (seeds["tau"] == c["tau"]) & (seeds["predicted"] > 0)]
        r = (g["realised"] / g["predicted"]).to_numpy(float)
        assert c["n_seeds"] == len(r)
        if len(r) < 2:
            continue
        half = stats.t.ppf(0.975, len(r) - 1) * r.std(ddof=1) / math.sqrt(len(r))
        assert (c["ratio"], c["ratio_lo"], c["ratio_hi"]) == pytest.approx((r.mean(), r.mean() - half, r.mean() + half), abs=1e-9)
        assert c["flagged"] == (not c["ratio_lo"] <= 1.0 <= c["ratio_hi"])
    assert render_first_order(fo) in (STUDIES / net / "README.md").read_text()


def pooled_networks(h: int) -> list:
    """The networks the stored pooled row at horizon ``h`` pools."""
    pooled = json.loads((STUDIES / "pooled.json").read_text())
    return next(c for c in pooled["calibration"] if c["horizon"] == h).get("networks", pooled["networks"])


def test_the_words_of_the_page_follow_the_stored_numbers():
    """Each qualitative sentence of "What the table says" checked against the stored JSONs."""
    cal = {n: {(c["horizon"], c["score"]): c for c in _study(n)[0]["calibration"]} for n in NETWORKS}
    pooled = {(c["horizon"], c["score"]): c for c in json.loads((STUDIES / "pooled.json").read_text())["calibration"]}
    hs = sorted({h for h, _ in pooled})
    proj = ("P_linear", "P_affine", "P_readout", "AG_max")
    yes = {n: {k for k, c in cal[n].items() if c["predicts"]} for n in NETWORKS}
    assert yes["mnist1d"] == {(h, s) for h in (10, 100) for s in (*proj, "jumpboard_gain")}
    assert yes["digits"] == {(100, "predicted_gain")} and yes["llama"] == set()
    assert {k for k, c in pooled.items() if c["predicts"]} == {(100, "predicted_gain")}
    small = ("mnist1d", "digits", "llama")
    assert all(len({cal[n][(h, s)]["rho"] for s in proj}) == 1 for n in small for h in hs)
    if "minilm" in NETWORKS:
        mh = sorted({h for h, _ in cal["minilm"]})
        lin = {(h, s) for h in (0, 1, 40) for s in ("P_linear", "P_affine")}
        assert yes["minilm"] == lin | {(1, "block_influence")}
        assert all(cal["minilm"][(h, "predicted_gain")]["rho"] < 0 for h in mh)
        assert all(cal["minilm"][(h, "P_linear")]["rho"] == cal["minilm"][(h, "P_affine")]["rho"] for h in mh)
        assert any(len({cal["minilm"][(h, s)]["rho"] for s in proj}) > 1 for h in mh)
        assert {k for k, c in cal["minilm"].items() if (c["rho_seeds_lo"] or 0) > 0} == {(40, "P_linear"), (40, "P_affine")}
        assert all(cal["minilm"][(0, s)]["slope_lo"] <= 0 <= cal["minilm"][(0, s)]["slope_hi"]
                   for s in ("predicted_gain", "jumpboard_gain"))
        assert not (STUDIES / "minilm" / "first_order.json").exists()
        results = " ".join((ROOT / "docs" / "RESULTS.md").read_text().split())
        assert "`P_linear` and `P_affine` do at 0, 1 and 40 steps, `block_influence` at 1" in results
        assert "`P_linear` and `P_affine` do at 0, 1 and 40 steps (not at 10), `block_influence` at 1, and `predicted_gain` at no horizon" \
            in " ".join(PAGE.read_text().split())
        assert set(pooled_networks(100)) == set(small) and "minilm" in pooled_networks(0)

    def above(c):
        return c["rho_seeds_lo"] > 0

    assert above(cal["llama"][(0, "predicted_gain")]) and above(cal["llama"][(0, "jumpboard_gain")])
    assert all(cal["llama"][(0, s)]["rho_seeds_hi"] < 0 for s in proj)
    assert all(above(cal["mnist1d"][(h, s)]) for h in hs for s in proj)
    assert not above(cal["digits"][(100, "predicted_gain")])
    assert not any(above(cal["mnist1d"][(h, "jumpboard_gain")]) for h in (10, 100))
    assert above(cal["digits"][(0, "random")])
    for s in ("predicted_gain", "jumpboard_gain"):
        c = cal["llama"][(0, s)]
        assert c["slope_lo"] > 0 and c["slope_lo"] <= 1 <= c["slope_hi"]
        assert all(cal[n][(0, s)]["slope_lo"] <= 0 <= cal[n][(0, s)]["slope_hi"] for n in ("mnist1d", "digits"))
    for n in ("mnist1d", "digits"):
        m = [r for r in _study(n)[0]["site_means"] if r["horizon"] == 0]
        assert all(r["realised_gain"] < r["predicted_gain"] for r in m)
    flagged = {(n, c["site"]) for n in FIRST_ORDER for c in json.loads((STUDIES / n / "first_order.json").read_text())["checks"]
               if c["flagged"]}
    assert flagged == {("digits", "blocks.0")} and set(FIRST_ORDER) >= set(small)
