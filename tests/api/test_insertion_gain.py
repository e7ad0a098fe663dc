"""The suggested insertion's immediate gain and its interval (issue 16's acceptance: over >= 20 seeds
the gain on independent data lies in the reported interval at its stated rate, Clopper-Pearson).

Level of the coverage tests: H0 "coverage >= 1 - level" rejected at alpha = 0.01 (one-sided
Clopper-Pearson); power: the interval shrunk to a quarter around its centre, and the gain of the
reversed (misaligned) step, are rejected on the same seeds.
"""
import math

import numpy as np
import pytest
import sympy as sp
import torch
from sympy.stats import StudentT, cdf

import depthcert as dc
from depthcert.api._verdict import t_interval
from numerics.data import TeacherClassification
from numerics.models import PostNormResMLP
from tests.api._coverage import coverage_run, cp_rejects, cp_upper, realised_gain

ALPHA = 0.01


def test_t_interval_radius_is_the_t_quantile_times_the_sd_of_the_difference():
    # Var(D_bar - D_bar_m) for independent means of n and m samples of variance sigma^2
    sigma2, n, m = sp.symbols("sigma2 n m", positive=True)
    var_diff = sigma2 / n + sigma2 / m
    assert sp.simplify(var_diff - sigma2 * (1 / n + 1 / m)) == 0
    # the half-width divided by sd * sqrt(1/n + 1/m) is the (1 - level/2) quantile of t_{n-1} (sympy's cdf)
    for mean, sd, k, level, m_eval in [(0.1, 2.0, 40, 0.05, None), (-1.0, 0.3, 300, 0.1, 1000), (0.0, 1.0, 9, 0.01, 5)]:
        lo, hi = t_interval(mean, sd, k, level, m_eval)
        spread = 1 / k + (0 if m_eval is None else 1 / m_eval)
        q = (hi - lo) / 2 / (sd * math.sqrt(spread))
        assert float(cdf(StudentT("T", k - 1))(q).evalf(30)) == pytest.approx(1 - level / 2, abs=1e-9)
        assert (lo + hi) / 2 == pytest.approx(mean, abs=1e-12)


def _mc_coverage(sample, n, m, level, reps, rng, scale=1.0):
    D, Dm = sample(rng, (reps, n)), sample(rng, (reps, m))
    mean, sd = D.mean(1), D.std(1, ddof=1)
    lo, hi = zip(*(t_interval(float(a), float(b), n, level, m) for a, b in zip(mean, sd)))
    c, h = (np.array(lo) + np.array(hi)) / 2, scale * (np.array(hi) - np.array(lo)) / 2
    target = Dm.mean(1)
    return int(np.sum((c - h <= target) & (target <= c + h)))


def test_t_interval_covers_at_its_rate_and_halving_it_fails():
    # Monte Carlo, level 0.05, n = 64 gain samples, m = 256 evaluation samples, 4000 draws; CP at 1e-4
    rng, reps, level = np.random.default_rng(0), 4000, 0.05
    gauss = lambda r, s: r.normal(0.3, 1.0, s)                # noqa: E731
    skewed = lambda r, s: r.exponential(1.0, s) - 0.5         # noqa: E731
    for law in (gauss, skewed):
        k = _mc_coverage(law, 64, 256, level, reps, rng)
        assert not cp_rejects(k, reps, 1 - level - (0.01 if law is skewed else 0.0), 1e-4)   # skewed: asymptotic
    k_half = _mc_coverage(gauss, 64, 256, level, reps, rng, scale=0.5)
    assert cp_upper(k_half, reps, 1e-4) < 1 - level                                     # halved: rejected


def test_cp_rejection_rule_has_the_stated_level_and_power():
    from scipy.stats import binom

    n = 20
    ks = [k for k in range(n + 1) if cp_rejects(k, n, 0.95, ALPHA)]
    assert binom.cdf(max(ks), n, 0.95) <= ALPHA < binom.cdf(max(ks) + 1, n, 0.95)       # exact level of the rule
    assert binom.cdf(max(ks), n, 0.5) > 0.99                                            # power at coverage 0.5


def _teacher_world():
    task = TeacherClassification(4, 3, depth=1, width=8, seed=0, logit_scale=2.0)
    net = PostNormResMLP(4, 8, 1, 3, seed=1)

    def draw(n, stream):
        return task.sample(n, seed=10_000 + stream)
    return net, draw


def test_the_reported_gain_is_that_of_the_block_insert_block_inserts():
    """With curvature_data given, its second half is the gain sample: the recorded mean gain equals the
    loss drop of dc.insert_block's copy on exactly those samples (recomputed with torch's losses)."""
    net, draw = _teacher_world()
    (x, y), (xc, yc) = draw(1024, 0), draw(200, 1)
    rep = dc.saturation(net, (x, y), sites=["norms.0"], curvature_data=(xc, yc), curvature_n=200, width=4)
    assert rep.n_curvature == 100 and rep.insertion["n_gain"] == 100
    for fam, rec in rep.insertion["families"].items():
        new = dc.insert_block(net, rep.best_site, family=fam, init="jumpboard", scan=rep, force=True)
        D = realised_gain(net, new, xc[100:], yc[100:], "cross_entropy")
        assert rec["gain"] == pytest.approx(float(D.mean()), rel=1e-9, abs=1e-15)
        assert rec["sd"] == pytest.approx(float(D.std()), rel=1e-9, abs=1e-15)
        assert rec["lo"] <= rec["gain"] <= rec["hi"]
    assert rep.gain_interval("readout") == pytest.approx((rep.insertion["families"]["readout"]["lo"],
                                                          rep.insertion["families"]["readout"]["hi"]))
    lo, hi = rep.gain_interval("readout", n_eval=50)
    assert hi - lo > rep.insertion["families"]["readout"]["hi"] - rep.insertion["families"]["readout"]["lo"]


def test_in_float32_insert_block_returns_the_very_block_the_gain_sample_checked():
    """float32 (where a re-measured step would differ in the 5th digit): every family's jumpboard that
    dc.insert_block inserts has the V (norm, bit for bit) and the beta the scan recorded, and its loss
    drop on the gain sample, measured on the returned model, is the recorded gain."""
    task = TeacherClassification(4, 3, depth=1, width=8, seed=0, logit_scale=2.0)
    net = PostNormResMLP(4, 8, 1, 3, seed=1, dtype=torch.float32)
    (x, y), (xc, yc) = task.sample(1024, seed=10_000), task.sample(200, seed=10_001)
    x, xc = x.float(), xc.float()
    rep = dc.saturation(net, (x, y), sites=["norms.0"], curvature_data=(xc, yc), curvature_n=200, width=4)
    for fam, rec in rep.insertion["families"].items():
        new = dc.insert_block(net, rep.best_site, family=fam, init="jumpboard", scan=rep, force=True)
        (V_name,) = [n for n in dc.new_parameters(new) if n.endswith(".V")]
        assert float(new.get_parameter(V_name).detach().norm()) == rec["V_norm"]
        D = realised_gain(net, new, xc[100:], yc[100:], "cross_entropy")
        assert rec["gain"] == pytest.approx(float(D.mean()), rel=1e-6, abs=1e-9)


def test_gain_interval_bad_input():
    net, draw = _teacher_world()
    rep = dc.saturation(net, draw(512, 0), sites=["norms.0"], curvature_n=64, width=4)
    with pytest.raises(ValueError, match="family == 'block', must be one of the families with a gain interval"):
        rep.gain_interval("block")
    with pytest.raises(ValueError, match="n_eval == 0, must be None or an int >= 1"):
        rep.gain_interval("readout", n_eval=0)
    tiny = dc.saturation(net, draw(64, 0), sites=["norms.0"], curvature_n=2, width=4, n_chunks=4)
    assert tiny.insertion is None
    with pytest.raises(ValueError, match="insertion is None"):
        tiny.gain_interval()


def test_gain_interval_covers_over_20_seeds_and_wrong_variants_are_flagged():
    """Light version: 20 seeds on the teacher task (the slow one: 200 seeds, and MNIST-1D)."""
    torch.manual_seed(0)
    net, draw = _teacher_world()
    res = coverage_run(net, draw, range(20), n=512, m=1024, loss="cross_entropy", sites=["norms.0"],
                       curvature_n=128, width=4, families=("readout",))
    print({k: v for k, v in res.items() if k != "rows"})
    assert not cp_rejects(res["honest"], 20, 0.95, ALPHA)
    assert cp_rejects(res["shrunk"], 20, 0.95, ALPHA)
    assert cp_rejects(res["misaligned"], 20, 0.95, ALPHA)


def test_power_benchmark_smoke():
    from benchmarks import bench_saturation_power as bench

    rows = bench.run_power(ts=(0.0, 1.0), ns=(256,), seeds=2)
    assert [r["t"] for r in rows] == [0.0, 1.0] and rows[0]["excess_risk"] == 0.0 < rows[1]["excess_risk"]
    assert all(r["improvable"] + r["saturated"] + r["undetermined"] == 2 >= r["rejected"] for r in rows)
    assert "95% CP" in bench.format_table(rows)


@pytest.mark.slow
def test_power_of_the_saturation_test_where_the_gain_is_known():
    """Issue 16 item 7: rejection rate of "saturated" over 20 probe draws per cell (printed table);
    at t = 0 (Bayes-optimal, G = 0) rejections are false alarms: not significantly above the level
    (one-sided CP at 0.01); the teacher with one block removed (t = 1) is rejected at n >= 2048."""
    from benchmarks import bench_saturation_power as bench

    rows = bench.run_power()
    print("\n" + bench.format_table(rows))
    for r in rows:
        if r["t"] == 0.0:
            assert not cp_rejects(r["seeds"] - r["rejected"], r["seeds"], 0.95, ALPHA)
        if r["t"] == 1.0 and r["n"] >= 2048:
            assert r["cp_lo"] > 0.8


def _mnist1d_world():
    from numerics import mnist1d
    from tests.api.test_verdicts_acceptance import _mnist1d_net

    net = _mnist1d_net(steps=300, width=8, depth=2)

    def draw(n, stream):
        return mnist1d.sample(n, 77_000 + stream)
    return net, draw


@pytest.mark.slow
@pytest.mark.parametrize("world", ["teacher", "mnist1d"])
def test_gain_interval_coverage_over_many_seeds(world):
    """200 seeds (teacher: CE teacher of depth 1, untrained depth-1 student, every site scanned) and
    60 seeds (MNIST-1D: ResCNN1d width 8, depth 2, 300 Adam steps); prints the counts and the CP
    intervals; honest coverage not rejected, shrunk and misaligned variants rejected (alpha 0.01)."""
    from benchmarks.bench_saturation_power import clopper_pearson

    if world == "teacher":
        net, draw = _teacher_world()
        res = coverage_run(net, draw, range(200), n=2048, m=8192, loss="cross_entropy", sites=None,
                           curvature_n=512, width=8)
    else:
        net, draw = _mnist1d_world()
        res = coverage_run(net, draw, range(60), n=4096, m=16384, loss="cross_entropy", sites="blocks.*",
                           curvature_n=1024, width=8)
    S = res["n_seeds"]
    for key in ("honest", "shrunk", "misaligned"):
        print(world, key, f"{res[key]}/{S}", "95% CP", clopper_pearson(res[key], S))
    print(world, "gains", [round(r["gain"], 5) for r in res["rows"][:10]], "sites", {r["site"] for r in res["rows"]})
    assert not cp_rejects(res["honest"], S, 0.95, ALPHA)
    assert cp_rejects(res["shrunk"], S, 0.95, ALPHA) and cp_rejects(res["misaligned"], S, 0.95, ALPHA)
