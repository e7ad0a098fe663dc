"""``task.kind = "mnist1d"`` in run, validity and sweeps (issue 16 item 6, THEORY §10): tiny sizes.

No exact teacher: ``G``, ``beta`` from the labelled signal sample, the population risks Monte-Carlo
means over the labelled population sample, marked ``population_is = "estimate"``; every role its
own stream; the validity truth counts a violation only beyond its Monte-Carlo error.
"""
from __future__ import annotations

import copy
import csv

import numpy as np
import pytest
import sympy as sp
import torch

from numerics import mnist1d
from numerics.sampled_task import ESTIMATE_NOTE, TRUTH_NOTE, SampledClassification, mnist1d_task

TINY = {"seed": 0, "data_seed": 1, "level": 0.05, "task": {"kind": "mnist1d"},
        "model": {"kind": "cnn1d", "width": 4, "depth": 1, "norm": "group", "groups": 2},
        "reference": {"n": 300, "optimizer": "adam", "lr": 0.01, "steps": 10, "batch_size": 64},
        "insertion": {"at": -1, "family": "readout", "width": 4, "output_cap": 0.5},
        "block_training": {"optimizer": "sgd", "lr": 0.5, "steps": 10, "batch_size": 512},
        "sizes": {"M": 600, "K": 600, "population": 1200, "delta": 0.02, "delta_prime": 0.02},
        "variants": {"delta_mc": 0.001, "n_draws": 2}}


def _tiny(**model) -> dict:
    cfg = copy.deepcopy(TINY)
    cfg["model"].update(model)
    return cfg


@pytest.fixture(scope="module")
def cnn_run():
    from numerics.studies.run import run_experiment

    return run_experiment(TINY)


def test_run_marks_its_population_quantities_as_estimates(cnn_run):
    r = cnn_run
    assert r["population_is"] == "estimate" and ESTIMATE_NOTE in r["notes"]
    assert "its own labels" in r["theorem1"]["guaranteed_gain_is"] and "exact y" not in r["theorem1"]["guaranteed_gain_is"]
    assert r["R_old_stderr"] > 0 and r["risks"]["delta_R_stderr"] > 0 and r["diagnostics"] is None
    q = r["quantities"]
    assert q["d"] == 4 and q["L_top_certified"] == pytest.approx(q["L_top_empirical"], rel=1e-6)   # linear head
    for name in ("population", "direct", "localised_train_linearised_bernstein", "heldout_paired"):
        assert name in r["routes"]
    assert r["routes"]["localised_train_linearised_bernstein"]["terms"]


def test_R_old_is_the_mean_loss_of_the_population_role_sample(cnn_run):
    """Recomputed independently: f_old's cross-entropy on the role ``population`` draw of the generator."""
    from numerics.studies.run import prepare_fixed, streams_of, validate_config

    cfg = validate_config(TINY)
    streams = streams_of(cfg)
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg, streams)
    x, y = mnist1d.sample(cfg["sizes"]["population"], np.random.default_rng(streams.seed_for("population")),
                          dtype=torch.float64)
    with torch.no_grad():
        losses = torch.nn.functional.cross_entropy(fixed.net(x.reshape(x.shape[0], -1)), y, reduction="none")
    assert cnn_run["R_old"] == pytest.approx(float(losses.mean()), rel=1e-9)
    assert cnn_run["R_old_stderr"] == pytest.approx(float(losses.std() / losses.numel() ** 0.5), rel=1e-6)


def test_every_role_its_own_stream(monkeypatch):
    """The samples a run draws (MLP on mnist1d) come from distinct role streams, never the same rows."""
    from numerics.studies.run import run_experiment, streams_of, validate_config

    calls, original = [], SampledClassification.sample_chunks

    def spy(self, n, seed, chunk=1 << 16):
        for x, y in original(self, n, seed, chunk):
            calls.append((int(seed), x[0].clone()))
            yield x, y

    monkeypatch.setattr(SampledClassification, "sample_chunks", spy)
    cfg = _tiny(kind="mlp", norm="rms", eps_n=1e-5, width=6)
    del cfg["model"]["groups"]
    r = run_experiment(cfg)
    assert r["population_is"] == "estimate"
    streams = streams_of(validate_config(cfg))
    role_of = {streams.seed_for(role): role for role in ("reference_sample", "signal", "S", "T", "population", "probe",
                                                         "scan_probe")}
    assert len(role_of) == 7                                        # seven distinct seeds
    used = {role_of[s] for s, _ in calls}                           # KeyError: a draw from no role's stream
    assert {"reference_sample", "signal", "S", "T", "population"} <= used
    first = {}
    for s, x0 in calls:
        first.setdefault(role_of[s], x0)
    rows = list(first.values())
    assert all(not torch.equal(a, b) for i, a in enumerate(rows) for b in rows[i + 1:])


def test_exact_teacher_is_marked_exact():
    from numerics.studies.run import run_experiment

    r = run_experiment({"reference": {"n": 300, "steps": 3}, "block_training": {"steps": 5},
                        "sizes": {"M": 500, "K": 500, "population": 500}})
    assert r["population_is"] == "exact" and ESTIMATE_NOTE not in r["notes"]


def test_sampled_task_streams_in_chunks_as_one_draw():
    task = mnist1d_task()
    x, y = task.sample(9000, seed=5)
    xs, ys = zip(*task.sample_chunks(9000, 5, chunk=4096))
    assert torch.equal(torch.cat(xs), x) and torch.equal(torch.cat(ys), y)
    ref_x, ref_y = mnist1d.sample(9000, np.random.default_rng(5), dtype=torch.float64)
    assert torch.equal(ref_x.reshape(9000, 40), x) and torch.equal(ref_y, y)
    assert not torch.equal(task.sample(10, seed=6)[0], x[:10])
    with pytest.raises(ValueError, match="n == 0"):
        next(task.sample_chunks(0, 1))


def test_labels_give_the_expectation_gradient_and_a_label_free_curvature():
    """Why the signal sample's labels suffice (module docstring of numerics.sampled_task): the cross-entropy
    gradient is linear in the target, and the curvature of a readout block at the top is the same for every label."""
    from numerics.estimators import activation_gradients_on_states, smoothness_beta_report
    from numerics.insertion import insert_block
    from numerics.models import PostNormResMLP

    net = PostNormResMLP(5, 6, 1, 3, seed=0)
    ex = insert_block(net, 1, "readout", width=4, seed=1)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(50, 5, dtype=torch.float64, generator=gen)
    u = net.bottom(x, 1)
    p = torch.softmax(torch.randn(50, 3, dtype=torch.float64, generator=gen), dim=1)
    m_soft = activation_gradients_on_states(ex, u, p, "cross_entropy")
    m_mix = sum(p[:, [k]] * activation_gradients_on_states(ex, u, torch.full((50,), k), "cross_entropy") for k in range(3))
    assert torch.allclose(m_soft, m_mix, rtol=0, atol=1e-13)
    G = torch.randn(6, 4, dtype=torch.float64, generator=gen)
    curv = [smoothness_beta_report(ex, x, t, G, "cross_entropy").curvature_at_zero
            for t in [p] + [torch.full((50,), k) for k in range(3)]]
    assert curv == pytest.approx([curv[0]] * 4, rel=1e-12)


def test_violation_needs_the_truths_monte_carlo_error():
    """An estimated truth (truth_mc_tolerance) forgives a gap within its error, only on population risks."""
    from numerics.studies.validity._routes import _violated

    R_new, b, L = sp.symbols("R_new b L_test_new")
    on_R, on_L = sp.Le(R_new, b), sp.Le(L, b)
    t = 0.01
    assert not _violated(-0.5 * t, {"R_new": 1.005, "b": 1.0, "truth_mc_tolerance": t}, on_R)
    assert _violated(-2 * t, {"R_new": 1.02, "b": 1.0, "truth_mc_tolerance": t}, on_R)
    assert _violated(-0.5 * t, {"R_new": 1.005, "b": 1.0}, on_R)                        # exact truth: no tolerance
    assert _violated(-0.5 * t, {"L_test_new": 1.005, "b": 1.0, "truth_mc_tolerance": t}, on_L)   # a measured value


def test_validity_two_draws_mark_the_truth(tmp_path):
    from numerics.studies.validity import run_validity

    cfg = {**copy.deepcopy(TINY), "validity": {"population": 2000, "group": 2}}
    summary = run_validity(cfg, 2, tmp_path / "v", progress=False)
    assert summary["draws"] == 2 and summary["truth"]["population_is"] == "estimate"
    assert summary["truth"]["note"] == TRUTH_NOTE and TRUTH_NOTE in summary["notes"]
    import json

    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "v" / "draws").glob("*.json"))]
    assert len(records) == 2
    for rec in records:
        assert rec["population_is"] == "estimate" and 0 < rec["values"]["truth_mc_tolerance"] < 0.5


def test_sweep_two_cells(tmp_path):
    from numerics.studies.sweeps import make_spec, sweep

    spec = make_spec(copy.deepcopy(TINY), grid={"model.width": [4, 6]})
    out = sweep(spec, tmp_path / "s", workers=1, progress=False, note=None)
    assert out.cells == 2 and out.failed == 0
    with open(tmp_path / "s" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model.width"] for r in rows] == ["4", "6"] and {r["population_is"] for r in rows} == {"estimate"}


def test_text_report_has_every_routes_terms(cnn_run):
    """``depthcert run``'s text table lists each route's terms (issue 17: each term's cost in the report)."""
    from numerics.studies.run import format_table
    from numerics.studies.run._terms_table import route_terms

    text = format_table(cnn_run)
    table = route_terms(cnn_run)
    assert {"population", "direct", "heldout_paired", "localised_train_linearised_bernstein"} <= set(table)
    assert set(table) >= {n for n, r in cnn_run["routes"].items() if isinstance(r, dict) and r.get("terms")}
    for name, terms in table.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"  {name} "))
        assert all(f"{t.get('term', t.get('name'))} = " in line for t in terms), line


def test_light_example_config_runs():
    """``examples/mnist1d_run.toml`` (the light MNIST-1D example) runs as written."""
    import math
    import tomllib
    from pathlib import Path

    from numerics.studies.run import run_experiment

    path = Path(__file__).resolve().parents[3] / "examples" / "mnist1d_run.toml"
    r = run_experiment(tomllib.loads(path.read_text()))
    assert r["population_is"] == "estimate" and r["config"]["model"]["kind"] == "cnn1d"
    assert r["quantities"]["d"] == r["config"]["model"]["width"]            # d = C at the head input
    assert math.isfinite(r["routes"][r["localised"]["use"]["name"]]["bound"])
