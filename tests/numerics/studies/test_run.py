"""Tests for numerics.studies.run: the end-to-end pipeline on tiny sizes (+ the demo, slow)."""
import math
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

from plumbing.validation import InputError
from numerics.studies.run import (
    DEFAULT_DEMO_CONFIG,
    bounds_config,
    format_table,
    merge_config,
    run_experiment,
    to_toml,
    validate_config,
)
from tests._no_work import forbid_work
from tests._tolerances import TOL

TINY = {
    "sizes": {"M": 3000, "K": 3000, "population": 3000},
    "reference": {"n": 500, "steps": 15},
    "block_training": {"steps": 60, "batch_size": 512},
}

REQUIRED_QUANTITIES = ["delta_R", "delta_R_lower", "beta", "G_norm", "delta_erm_pop", "delta_erm_S",
                       "delta_test_R", "B", "L_loss", "L_top_certified", "L_top_empirical", "M", "K",
                       "delta", "delta_prime"]


@pytest.fixture(scope="module")
def tiny_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    return run_experiment(TINY, out), out


def test_result_has_required_keys(tiny_result):
    res, out = tiny_result
    for key in ("L_test_old", "L_test_new", "R_old", "R_new", "config", "versions"):
        assert key in res
    for key in REQUIRED_QUANTITIES:
        assert key in res["quantities"] and res["quantities"][key] is not None
    assert "eps_M" in res and "eps_K" in res
    for route in ("population", "direct", "population_risk"):
        for key in ("bound", "observed", "failure_probability", "certified"):
            assert key in res["routes"][route]
        if route != "population_risk":
            assert res["routes"][route]["observed"] == res["L_test_new"]
    assert {"certified", "failure_probability"} <= set(res["routes"]["any"])
    assert {p.name for p in out.iterdir()} >= {"result.json", "bounds_config.toml", "bound_vs_observed.png"}


def test_c2_and_certification_flags_consistent(tiny_result):
    res, _ = tiny_result
    q = res["quantities"]
    assert q["delta_erm_pop"] >= 0 and q["delta_erm_S"] >= 0  # (C2) enforced
    assert q["V_norm"] <= q["nu_V"] * (1 + 1e-12)  # cap respected
    assert q["L_top_certified"] >= q["L_top_empirical"] * (1 - 1e-12)
    for name in ("population", "direct"):
        route = res["routes"][name]
        certified = route["bound"] < res["L_test_old"] and route["failure_probability"] <= res["level"]
        assert route["certified"] == certified


def test_theorem1_lower_bound_holds_in_measurement(tiny_result):
    # Theorem 1: Delta_R >= eta (1 - beta eta/2) ||G||^2, up to Monte-Carlo error (99.9%:
    # 3.29 standard errors of the paired difference).
    q = tiny_result[0]["quantities"]
    assert q["delta_R_hat"] + 3.29 * q["delta_R_stderr"] >= q["delta_R_lower"] - 1e-12


def test_l_test_old_recomputed_independently(tiny_result):
    # Rebuild f_old and T from the public primitives with the role streams and recompute.
    from numerics.data import TeacherRegression
    from numerics.models import PostNormResMLP
    from numerics.seeding import Streams
    from numerics.training import empirical_risk, train

    res, _ = tiny_result
    cfg = res["config"]
    st_ = Streams(cfg["seed"], cfg["data_seed"])
    t = cfg["task"]
    task = TeacherRegression(t["d_in"], t["depth"], t["width"], seed=st_.seed_for("teacher"),
                             noise_std=t["noise_std"], noise_clip=t["noise_clip"], mean_bound=t["mean_bound"],
                             head_bias=t["head_bias"])
    net = PostNormResMLP(t["d_in"], cfg["model"]["width"], cfg["model"]["depth"], 1, eps_n=cfg["model"]["eps_n"],
                         seed=st_.seed_for("reference_init"))
    x, y = task.sample(cfg["reference"]["n"], seed=st_.seed_for("reference_sample"))
    r = cfg["reference"]
    train(net, dict(net.named_parameters()), x, y, optimizer=r["optimizer"], lr=r["lr"], steps=r["steps"],
          batch_size=r["batch_size"], seed=st_.seed_for("reference_training"), loss="squared")
    x_T, y_T = task.sample(cfg["sizes"]["K"], seed=st_.seed_for("T"))
    np.testing.assert_allclose(empirical_risk(net, x_T, y_T, "squared"), res["L_test_old"], rtol=1e-9)


def test_streams_recorded_are_derived_per_role(tiny_result):
    from numerics.seeding import Streams, check_streams

    res, _ = tiny_result
    check_streams(res["streams"], Streams(res["config"]["seed"], res["config"]["data_seed"]))
    assert "teacher" in res["fixed_before_data"]["roles"] and "S" in res["drawn_with_data"]["roles"]
    assert "data_seed" in res["drawn_with_data"]["config_keys"] and "seed" in res["fixed_before_data"]["config_keys"]
    assert "sizes" in res["fixed_before_data"]["config_keys"]   # a size is a config value, not a draw


def test_two_data_seeds_share_everything_fixed_before_S_and_T():
    small = merge_config(TINY, {"sizes": {"M": 1000, "K": 1000, "population": 1000}})
    a = run_experiment(merge_config(small, {"data_seed": 1}))
    b = run_experiment(merge_config(small, {"data_seed": 2}))
    for key in ("B", "L_loss", "L_top_certified", "nu_V", "rho_phi", "G_norm", "beta", "eta"):
        assert a["quantities"][key] == b["quantities"][key], key
    assert a["L_test_old"] != b["L_test_old"]
    assert a["streams"]["teacher"] == b["streams"]["teacher"] and a["streams"]["S"] != b["streams"]["S"]


def test_any_and_population_risk_routes(tiny_result):
    res, _ = tiny_result
    routes, q = res["routes"], res["quantities"]
    a = routes["any"]
    assert res["any_certified"] == a["certified"]
    # independent: the union of the included routes' events, E_S once (delta), E_T (delta'),
    # E_R (5e-4) and the two Hoeffding tails at t = Delta_R/4
    inc = a["routes_included"]
    tail = math.exp(-q["K"] * q["delta_R"] ** 2 / (8 * q["B"] ** 2)) if q["delta_R"] > 0 else 1.0
    want = (q["delta"] if (inc["population"] or inc["direct"]) else 0.0) + (q["delta_prime"] if inc["direct"] else 0.0) \
        + ((2 * tail + q["delta_R_failure"]) if inc["population"] else 0.0)
    assert a["failure_probability"] == pytest.approx(want, rel=1e-12, abs=1e-15)
    pr = routes["population_risk"]
    assert pr["observed"] == res["R_new"] and pr["failure_probability"] == pytest.approx(q["delta"] + 5e-4)
    assert pr["bound"] == pytest.approx(res["R_old"] - q["delta_R"] - q["delta_erm_pop"] + 2 * q["eps_M"], rel=1e-12)


def test_theorem1_is_reported_at_the_step_used(tiny_result):
    q, t1 = tiny_result[0]["quantities"], tiny_result[0]["theorem1"]
    eta, beta, G_sq = q["eta"], q["beta"], q["G_norm"] ** 2
    assert eta <= 1 / beta * (1 + 1e-12)
    assert q["eta_capped"] == (q["nu_V"] / q["G_norm"] < 1 / beta)
    assert t1["guaranteed_gain_at_step"] == pytest.approx(eta * (1 - beta * eta / 2) * G_sq, rel=1e-12)
    assert t1["gain_at_optimal_step"] == pytest.approx(G_sq / (2 * beta), rel=1e-12)
    assert t1["optimal_step_applies"] == (not q["eta_capped"])
    assert ("capped" in t1["statement"]) == q["eta_capped"]


def test_sizes_that_cannot_fit_are_named_before_any_work(tmp_path, monkeypatch):
    work = forbid_work(monkeypatch)          # no data drawn into a network, no training, no figure, no process
    with pytest.raises(InputError, match=r"sizes.M == 1000000000000, must be at most .* on this machine: "
                                         r"held in memory it needs .* TB"):
        run_experiment({"sizes": {"M": 10**12}})
    # the key named is the one that needs the memory, not the first size checked
    with pytest.raises(InputError, match=r"^sizes.population == 10000000000000, .* held in memory it needs"):
        run_experiment({"sizes": {"M": 1000, "population": 10**13}})
    with pytest.raises(InputError, match=r"^model.width == 1000000, must be a width .* it needs .* TB"):
        run_experiment({"model": {"width": 10**6}})
    with pytest.raises(InputError, match=r"^block_training.steps == 1000000000, must be at most"):
        run_experiment({"block_training": {"steps": 10**9}})
    with pytest.raises(InputError, match=r"--out == '/proc/x.*must be a folder that can be created and written"):
        run_experiment(TINY, "/proc/x")
    assert work == [], f"refused only after the work: {work}"


def test_bounds_config_roundtrip(tiny_result):
    res, out = tiny_result
    parsed = tomllib.loads((out / "bounds_config.toml").read_text())
    assert parsed == tomllib.loads(to_toml(bounds_config(res)))
    assert parsed["delta_R"] == res["quantities"]["delta_R"]  # repr round-trips float64 exactly


def test_deterministic_given_seed():
    small = merge_config(TINY, {"sizes": {"M": 1000, "K": 1000, "population": 1000}})
    a, b = run_experiment(small), run_experiment(small)
    assert a["L_test_new"] == b["L_test_new"] and a["quantities"]["beta"] == b["quantities"]["beta"]


@pytest.mark.parametrize("override,match", [
    ({"sizes": {"M": 1}}, r"sizes.M == 1, must be an integer in \[2, inf\)"),
    ({"insertion": {"family": "linear"}}, r"insertion.family == 'linear', must be one of \['readout', 'full'\]"),
    ({"level": 0.0}, r"level == 0.0, must be"),
    ({"insertion": {"at": 5}}, r"insertion.at == 5, must be an integer in \[-1, 1\]"),
    ({"model": {"widht": 3}}, r"model.widht == 3, must be one of"),
    ({"task": {"kind": "ranking"}}, r"task.kind == 'ranking'"),
    ({"task": {"head_bias": 1}}, r"task.head_bias == 1, must be one of \[True, False\]"),
    ({"sizes": {"delta": 1.5}}, r"sizes.delta == 1.5, must be a finite number in \(0, 1\)"),
    ({"data_seed": -1}, r"data_seed == -1, must be an integer in \[0, inf\)"),
    ({"insertion": {"at": 0}}, r"model.eps_n == 0.0, must be > 0 when insertion.at is below the top"),
])
def test_bad_config_rejected(override, match):
    with pytest.raises(InputError, match=match):
        validate_config(override)


def test_default_config_is_valid_and_matches_shipped_toml():
    assert validate_config({}) == DEFAULT_DEMO_CONFIG
    shipped = Path(__file__).resolve().parents[3] / "depthcert" / "configs" / "demo.toml"
    assert tomllib.loads(shipped.read_text()) == DEFAULT_DEMO_CONFIG


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    """The shipped demo end to end; its wall time is printed, not asserted (it depends on the machine and its
    load; the demo's work is fixed by depthcert/configs/demo.toml, test_default_config_is_valid_and_matches_shipped_toml)."""
    t0 = time.perf_counter()
    res = run_experiment(DEFAULT_DEMO_CONFIG, tmp_path)
    print(f"demo took {time.perf_counter() - t0:.1f} s")
    assert res["L_test_new"] < res["L_test_old"]
    for name in ("population", "direct"):
        route = res["routes"][name]
        if route["certified"]:  # the guarantee holds on this draw
            assert res["L_test_new"] <= route["bound"]


def test_classification_task_runs_light():
    cfg = merge_config(TINY, {"task": {"kind": "classification", "n_classes": 3, "logit_scale": 3.0, "width": 4},
                              "sizes": {"M": 1000, "K": 1000, "population": 1000}})
    res = run_experiment(cfg)
    q = res["quantities"]
    np.testing.assert_allclose(q["L_loss"], math.sqrt(2), **TOL["float64"])  # CE: L_l = sqrt(2)
    assert q["delta_erm_pop"] >= 0 and q["delta_erm_S"] >= 0
    assert res["routes"]["population"]["observed"] == res["L_test_new"]


def test_insertion_below_top_uses_eps_route():
    cfg = merge_config(TINY, {"insertion": {"at": 0}, "model": {"eps_n": 1e-3},
                              "sizes": {"M": 1000, "K": 1000, "population": 1000}})
    q = run_experiment(cfg)["quantities"]
    assert q["L_top_certified"] >= q["L_top_empirical"]
    assert q["delta_erm_pop"] >= 0


def test_probe_diagnostics_are_reported_and_consistent(tiny_result):
    diag = tiny_result[0]["diagnostics"]
    per = diag["paper_b"]["ag_max_per_candidate"]
    assert set(per) == {"0", "1"}                                   # every candidate l = 0..D
    assert diag["paper_b"]["ag_max"] == max(per.values())
    assert 0.0 <= diag["paper_b"]["realisability_ratio"] <= 1.0 + 1e-9
    cov = diag["covariance"]
    assert cov["trace"] >= cov["spectral_norm"] * (1 - 1e-12) and 0.0 <= cov["offdiag_ratio"] <= 1.0
    for key, from_data in (("c1_test", False), ("c1_test_approx", True)):
        c1 = diag[key]
        assert c1["signal_detected"] == (c1["s_hat"] > c1["threshold"]) and c1["b_from_data"] is from_data
    q = tiny_result[0]["quantities"]
    assert diag["c1_test"]["b"] == pytest.approx(q["L_loss"] * q["L_top_certified"] * q["rho_phi"])
    assert diag["c1_test"]["b"] >= diag["c1_test_approx"]["b"]     # the data-free b bounds the sample
    norms = diag["norms"]
    assert all(m <= r * (1 + 1e-9) for m, r in zip(norms["state_norm_max"], norms["rho"]))
    assert "(C1) U-statistic test" in format_table(tiny_result[0])


def test_exact_class_risks_from_moments_equal_the_sample_risks():
    # the run reads R_S of every candidate from the moments of S (readout at the top,
    # squared loss); an independent evaluation on the samples must give the same numbers
    import torch

    from numerics.block_training import sample_risks
    from numerics.studies.run import draw_samples, is_exact_class, prepare_fixed, select_blocks, streams_of

    cfg = validate_config(merge_config(TINY, {"sizes": {"M": 1500, "K": 1500, "population": 1500}}))
    fixed = prepare_fixed(cfg)
    assert is_exact_class(fixed)
    group = draw_samples(fixed, [streams_of(cfg, 5), streams_of(cfg, 6)])
    sel = select_blocks(fixed, group)
    cands = torch.stack([torch.zeros_like(sel.V_new), sel.V_new, group.V_S,
                         fixed.signal.V_pop.expand_as(sel.V_new)], dim=1)
    direct = sample_risks(fixed.expanded, group.u, group.y, cands, fixed.loss).numpy()
    for b in range(2):
        got = [sel.R_S[k][b] for k in ("old", "new", "jump_S", "jump_pop")]
        np.testing.assert_allclose(got, direct[b], rtol=1e-10)


def test_insertion_seed_key_feeds_the_insertion_role():
    from numerics.seeding import Streams, check_streams, role_seed

    small = merge_config(TINY, {"sizes": {"M": 800, "K": 800, "population": 800}})
    a = run_experiment(merge_config(small, {"insertion": {"seed": 3}}))
    b = run_experiment(small)
    assert a["streams"]["insertion"] == role_seed("insertion", 3) != b["streams"]["insertion"]
    check_streams(a["streams"], Streams(a["config"]["seed"], a["config"]["data_seed"], (("insertion", 3),)))
    assert a["quantities"]["rho_phi"] != b["quantities"]["rho_phi"]      # other frozen features
