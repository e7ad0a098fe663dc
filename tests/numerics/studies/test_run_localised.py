"""The run study measures and reports the localised certificates of THEORY §6b (issue 17, items 3-5).

Inputs are checked against independent computations: the paired differences re-drawn from
the role streams and evaluated with plain torch on ``f_old`` and ``f_old`` plus the block
(``ExpandedModel.with_V``), the ball's cap from the signal sample's ``G`` and ``beta``, the
held-out paired bound typed from THEORY §6b; ``depthcert bounds`` on the written
``bounds_config.toml`` must reproduce every localised bound exactly; bad ``[localised]``
input is an exit 2 with one line.
"""
import json
import math
import subprocess
import sys
import tomllib

import pytest
import torch

from bounds.localised import LOCALISED_SPECS
from numerics._numerics import per_sample_loss
from numerics.studies.run import prepare_fixed, run_experiment, streams_of, validate_config
from plumbing.io import to_toml
from plumbing.validation import InputError

TINY = {"sizes": {"M": 3000, "K": 2500, "population": 3000}, "reference": {"n": 500, "steps": 15},
        "block_training": {"steps": 60, "batch_size": 512}}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run_localised")
    return run_experiment(TINY, out), out


def test_every_localised_route_is_in_result_json_with_every_field(tiny_run):
    from numerics.studies.run import plot_localised_terms

    res, out = tiny_run
    assert (out / "localised_terms.png").stat().st_size > 10_000
    with pytest.raises(ValueError, match="routes.localised_"):
        plot_localised_terms({"routes": {"population": res["routes"]["population"]}}, out / "x.png")
    routes, loc = res["routes"], res["localised"]
    assert set(LOCALISED_SPECS) <= set(routes) and not loc["skipped"]
    for name in LOCALISED_SPECS:
        r = routes[name]
        assert set(routes["population"]) <= set(r) and {"terms", "levels", "origin"} <= set(r), name
        assert r["observed"] == loc["f_new"]["L_test_new"]
        assert r["observed_minus_bound"] == pytest.approx(r["observed"] - r["bound"], abs=1e-15)
        assert r["certified"] == (r["bound"] < res["L_test_old"] and r["failure_probability"] <= res["level"])
        assert sum(t["value"] for t in r["terms"]) == pytest.approx(r["bound"], rel=1e-12)
    assert loc["use"]["name"] == "localised_train_exact_bernstein"     # (c) applies: readout at the top, squared
    assert loc["use"]["certified"] == routes[loc["use"]["name"]]["certified"]
    assert set(loc["roles"]) == {"signal", "S", "T", "population"}
    h = routes["heldout_paired"]
    assert {"bound", "failure_probability", "certified", "terms", "levels", "origin", "observed"} <= set(h)
    assert h["origin"].startswith("Choice") and h["certified"] == (h["bound"] < 0)
    for key in ("population", "direct", "any", "population_risk"):     # the paper's routes are still there
        assert key in routes


def _losses_on(fixed, V, x, y):
    """Per-sample losses of f_old (the net) and of f_old with the block V, by plain forward passes."""
    with torch.no_grad():
        old = per_sample_loss(fixed.net(x), y, fixed.loss)
        new = per_sample_loss(fixed.expanded.with_V(V)(x), y, fixed.loss)
    return old, new


def test_T_pass_mean_and_variance_by_plain_torch(tiny_run):
    """mean_T and V_n of d_new at the returned block, recomputed from T's role stream."""
    from numerics.studies.run import draw_samples, evaluate_draw, select_blocks
    from numerics.studies.run._localised_draw import certify_localised

    res, _ = tiny_run
    cfg = validate_config(TINY)
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg, streams_of(cfg))
        group = draw_samples(fixed, [streams_of(cfg)])
        sel = select_blocks(fixed, group)
        ev = evaluate_draw(fixed, group, sel, 0)
        lc = certify_localised(fixed, group, sel, ev, 0)
    inp, sig = res["localised"]["inputs"], fixed.signal
    nu = max(min(float(sig.G.norm()) / sig.beta.beta, fixed.const.nu_V), float(sig.V_pop.norm()))
    assert inp["nu_V"] == nu and float(lc.measure.V.norm()) <= nu       # the ball, from the signal sample
    assert res["localised"]["class"]["clipped"] == (float(sig.G.norm()) / sig.beta.beta > fixed.const.nu_V)
    st = streams_of(cfg)
    x_T, y_T = map(torch.cat, zip(*fixed.task.sample_chunks(cfg["sizes"]["K"], st.seed_for("T"))))
    old, new = _losses_on(fixed, lc.measure.V, x_T, y_T)
    d = (new - old).double()
    assert float(d.mean()) == pytest.approx(res["localised"]["f_new"]["mean_T_dnew"], rel=1e-9, abs=1e-15)
    assert float(d.var()) == pytest.approx(inp["var_T_dnew"], rel=1e-9)
    x_S, y_S = map(torch.cat, zip(*fixed.task.sample_chunks(cfg["sizes"]["M"], st.seed_for("S"))))
    old_S, new_S = _losses_on(fixed, lc.measure.V, x_S, y_S)
    assert float((old_S - new_S).double().mean()) == pytest.approx(inp["delta_train"], rel=1e-9)
    r_d = min(inp["B"], inp["L_loss"] * inp["L_top"] * inp["nu_V"] * inp["rho_phi"])
    assert float((new - old).abs().max()) <= r_d                     # d_new in [-r_d, r_d] surely
    K, L = cfg["sizes"]["K"], math.log(2 / res["level"])
    hand = float(d.mean()) + math.sqrt(2 * float(d.var()) * L / K) + 14 * r_d * L / (3 * (K - 1))
    assert res["routes"]["heldout_paired"]["bound"] == pytest.approx(hand, rel=1e-9)


def test_bounds_on_the_written_config_reproduces_every_localised_route_exactly(tiny_run):
    res, out = tiny_run
    table = tomllib.loads((out / "bounds_config.toml").read_text())["localised"]
    assert {"nu_V", "delta_train", "var_T_dnew", "sigma2_ub", "delta_sigma", "use", "exact_applies"} <= set(table)
    cmd = [sys.executable, "-m", "depthcert", "bounds", "--config", str(out / "bounds_config.toml"), "--json"]
    b = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    for name in LOCALISED_SPECS:
        mine, theirs = res["routes"][name], b["localised"]["routes"][name]
        for key in ("bound", "failure_probability", "certified", "improvement", "levels"):
            assert mine[key] == theirs[key], (name, key)
    assert b["localised"]["use"]["name"] == res["localised"]["use"]["name"]


@pytest.mark.parametrize("section,match", [
    ({"cap": -1.0}, "localised.cap == -1.0"), ({"cap": "wide"}, "localised.cap == 'wide'"),
    ({"use": "localised_train_tight"}, "localised.use"), ({"delta_U": 1.5}, "localised.delta_U == 1.5"),
    ({"width": 3}, "localised.width"), ({"delta_U": 0.03, "delta_T_d": 0.03}, "localised.delta_T_d")])
def test_bad_localised_config_names_the_key(section, match):
    with pytest.raises(InputError, match=match):
        validate_config({"localised": section})


def test_use_must_apply_to_the_block():
    with pytest.raises(InputError, match="localised.use == 'localised_train_exact_bernstein'"):
        validate_config({"localised": {"use": "localised_train_exact_bernstein"}, "task": {"kind": "classification"}})
    assert validate_config({"task": {"kind": "classification"}}) is not None     # default: linearised, valid


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "depthcert", *args], capture_output=True, text=True)


def test_bad_localised_input_is_exit_2_one_line(tmp_path, tiny_run):
    bad = tmp_path / "bad.toml"
    bad.write_text('[localised]\ncap = 0.0\n')
    p = _cli("run", "--config", str(bad), "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "localised.cap" in p.stderr
    cfg = tomllib.loads((tiny_run[1] / "bounds_config.toml").read_text())
    cfg["localised"]["var_T_dnew"] = -1.0
    (tmp_path / "b.toml").write_text(to_toml(cfg))
    p = _cli("bounds", "--config", str(tmp_path / "b.toml"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "localised.var_T_dnew" in p.stderr


@pytest.mark.parametrize("key,value,match", [("use", "population_route", "localised.use == 'population_route'"),
                                             ("exact_applies", 1, "localised.exact_applies"),
                                             ("nu_V", "x", "localised.nu_V"), ("M", None, "localised.M is missing")])
def test_localised_table_of_bounds_names_the_key(tiny_run, key, value, match):
    from depthcert.config import localised_inputs_from_dict

    cfg = tomllib.loads((tiny_run[1] / "bounds_config.toml").read_text())
    assert localised_inputs_from_dict(cfg)[1] == "localised_train_exact_bernstein"
    if value is None:
        del cfg["localised"][key]
    else:
        cfg["localised"][key] = value
    with pytest.raises(InputError, match=match):
        localised_inputs_from_dict(cfg)
    assert localised_inputs_from_dict({}) is None


def test_every_route_row_says_which_samples_it_read_and_how_much_it_certifies(tiny_run):
    """Issue 34, items 1-2: ``roles``/``S_only`` as derived from each route's theorem object (Delta_R: the
    population sample here), the union rows' as the union of theirs; the share fields recomputed from the
    row's bound and the run's losses; the text output lists them."""
    from bounds.route_roles import ROLE_ORDER, route_roles
    from numerics.studies.run import format_table

    res, _ = tiny_run
    routes = res["routes"]
    for name, r in routes.items():
        assert set(r["roles"]) == set(ROLE_ORDER), name
        if name not in ("any", "any_with_variants", "heldout_paired"):
            assert r["S_only"] is route_roles(name, "population")["S_only"], name
            old, new = (res["R_old"], res["R_new"]) if name == "population_risk" else (res["L_test_old"], res["L_test_new"])
            assert r["realised_gain"] == pytest.approx(old - new, rel=1e-12, abs=1e-15), name
            assert r["improvement"] == pytest.approx(old - r["bound"], rel=1e-9, abs=1e-12), name
            assert r["improvement_over_loss"] == pytest.approx((old - r["bound"]) / old, rel=1e-9, abs=1e-12), name
            expected = (old - r["bound"]) / (old - new) if old - new > 0 else None
            assert r["improvement_over_gain"] == (None if expected is None else pytest.approx(expected, rel=1e-9)), name
    assert routes["heldout_paired"]["S_only"] is False and "variance" in routes["heldout_paired"]["roles"]["T"]
    assert routes["localised_train_exact_bernstein"]["S_only"] is False
    assert routes["localised_train_exact_hoeffding"]["S_only"] is True
    assert "Delta_R" in routes["population"]["roles"]["population"]
    included = [k for k, on in routes["any"]["routes_included"].items() if on]
    assert routes["any"]["S_only"] is all(routes[k]["S_only"] for k in included)
    text = format_table(res)
    assert "which samples each route read" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("localised_train_exact_bernstein ")
                and "train-and-test" in ln)
    assert routes["localised_train_exact_bernstein"]["share_note"] in line
