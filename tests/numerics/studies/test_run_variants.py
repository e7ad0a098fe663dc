"""The run study evaluates this project's THEORY §6 variants (issue 9, phase 2).

Inputs measured by the run are checked against independent computations (the per-sample
losses recomputed from the role streams with plain torch; the sign Monte Carlo redrawn on
the ``monte_carlo`` role by the one-shot estimator); ``depthcert bounds`` on the written
``bounds_config.toml`` must reproduce every variant's bound exactly.
"""
import json
import subprocess
import sys
import tomllib

import numpy as np
import pytest
import torch

from bounds.variants import VARIANT_SPECS
from numerics.studies.run import (draw_samples, evaluate_draw, format_table, prepare_fixed, run_experiment,
                                  select_blocks, streams_of, validate_config)

TINY = {"sizes": {"M": 3000, "K": 2500, "population": 3000}, "reference": {"n": 500, "steps": 15},
        "block_training": {"steps": 60, "batch_size": 512}}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run_variants")
    return run_experiment(TINY, out), out


def test_every_variant_is_a_route_of_result_json_with_the_papers_fields(tiny_run):
    res, out = tiny_run
    routes = res["routes"]
    assert {"population", "direct", "any", "population_risk"} <= set(routes)     # existing keys unchanged
    assert set(res["variants"]["names"]) == set(VARIANT_SPECS)
    for name in VARIANT_SPECS:
        r = routes[name]
        assert set(routes["population"]) <= set(r), name
        assert r["observed"] == res["L_test_new"] and r["origin"].startswith("Choice")
        assert r["certified"] == (r["bound"] < res["L_test_old"] and r["failure_probability"] <= res["level"])
    a = routes["any_with_variants"]
    assert a["method"] == "scaled_union" and len(a["routes_included"]) == 10 and a["failure_probability"] <= 0.05
    assert res["variants"]["use"]["name"] == "population_tight_bernstein"
    assert (out / "bound_terms.png").stat().st_size > 10_000


def test_bounds_on_the_written_config_reproduces_every_variant_exactly(tiny_run):
    res, out = tiny_run
    table = tomllib.loads((out / "bounds_config.toml").read_text())["variants"]
    assert {"var_S_jump_pop", "var_T_new", "var_T_old", "var_T_jump_S", "rad_hat", "delta_mc", "phi_sq_sum",
            "n_draws", "use"} <= set(table)
    cmd = [sys.executable, "-m", "depthcert", "bounds", "--config", str(out / "bounds_config.toml"), "--json"]
    b = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    for name in VARIANT_SPECS:
        mine, theirs = res["routes"][name], b["variants"]["routes"][name]
        for key in ("bound", "failure_probability", "certified", "improvement"):
            assert mine[key] == theirs[key], (name, key)
    assert b["variants"]["any_route"]["failure_probability"] == res["routes"]["any_with_variants"]["failure_probability"]
    assert b["variants"]["any_route"]["certified"] == res["routes"]["any_with_variants"]["certified"]


def test_table_marks_paper_and_choice(tiny_run):
    res, _ = tiny_run
    text = format_table(res)
    assert "'paper' = Paper A's statement, 'Choice' = this project's variant" in text
    rows = [line for line in text.splitlines() if line.startswith(("population", "direct"))
            and (" paper " in line or " Choice " in line)]
    assert sum(" paper " in r for r in rows) == 2 and sum(" Choice " in r for r in rows) == 8
    assert "any route with the variants" in text and "use = population_tight_bernstein" in text


@pytest.fixture(scope="module")
def stages():
    cfg = validate_config(TINY)
    streams = streams_of(cfg)
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg, streams)
        group = draw_samples(fixed, [streams])
        sel = select_blocks(fixed, group)
        ev = evaluate_draw(fixed, group, sel, 0)
    return cfg, streams, fixed, group, sel, ev


def _losses(fixed, x, y, V):
    """Per-sample squared losses of f_V, by a plain forward pass (no moments, no chunks)."""
    with torch.no_grad():
        u = fixed.net.bottom(x, fixed.at)
        out = fixed.net.head(u + fixed.expanded.block.features(u) @ V.T)
        return (out - y.reshape(out.shape)).pow(2).sum(dim=1).double().numpy()


def test_loss_variances_are_unbiased_and_of_the_right_functions(stages):
    cfg, streams, fixed, group, sel, ev = stages
    xs, ys = zip(*fixed.task.sample_chunks(cfg["sizes"]["M"], streams.seed_for("S")))
    x_S, y_S = torch.cat(xs), torch.cat(ys)
    want = np.var(_losses(fixed, x_S, y_S, fixed.signal.V_pop), ddof=1)
    assert ev.S_stats.var_S_jump_pop == pytest.approx(want, rel=1e-9)
    xt, yt = zip(*fixed.task.sample_chunks(cfg["sizes"]["K"], streams.seed_for("T")))
    x_T, y_T = torch.cat(xt), torch.cat(yt)
    for key, V in (("var_T_new", sel.V_new[0]), ("var_T_old", torch.zeros_like(sel.V_new[0])),
                   ("var_T_jump_S", group.V_S[0])):
        assert ev.variances_T[key] == pytest.approx(np.var(_losses(fixed, x_T, y_T, V), ddof=1), rel=1e-9), key
    biased = np.var(_losses(fixed, x_T, y_T, sel.V_new[0]), ddof=0)   # ddof = 0 is off by (K-1)/K: told apart
    assert ev.variances_T["var_T_new"] != pytest.approx(biased, rel=1e-9)


def test_rademacher_uses_its_own_role_stream(stages):
    from numerics.estimators import rademacher_readout_mc

    cfg, streams, fixed, group, sel, ev = stages
    phi = fixed.expanded.block.features(group.u[0])
    rad = ev.S_stats.rademacher
    value, err = rademacher_readout_mc(phi, fixed.expanded.block.d, fixed.const.nu_V, cfg["variants"]["n_draws"],
                                       streams.seed_for("monte_carlo"), delta_mc=cfg["variants"]["delta_mc"])
    assert rad.value == pytest.approx(value, rel=1e-12) and rad.mc_error == pytest.approx(err, rel=1e-12)
    assert rad.phi_sq_sum == pytest.approx(float(phi.pow(2).sum()), rel=1e-12)
    other, _ = rademacher_readout_mc(phi, fixed.expanded.block.d, fixed.const.nu_V, cfg["variants"]["n_draws"],
                                     streams.seed_for("S"), delta_mc=cfg["variants"]["delta_mc"])
    assert other != rad.value
