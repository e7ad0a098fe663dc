"""What `run` accepts beyond the readout block at the top: the full family, the post-hoc cap
grid, digits as data (the classification teacher and insertion below the top have their tests
in test_run.py and test_sweep_runs.py)."""
import math

import numpy as np
import pytest
import torch

from plumbing.validation import InputError
from bounds.routes import Setup, evaluate_routes
from plumbing.config import merge_config
from numerics.empirical import EmpiricalClassification
from numerics.studies.run import (bounds_config, draw_samples, evaluate_draw, prepare_fixed, run_experiment,
                                  select_blocks, streams_of, validate_config)

TINY = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 500, "steps": 15},
        "block_training": {"steps": 40, "batch_size": 512}}


def _setup_from(result):
    """The bounds_config of a stored result as a Setup (what `depthcert bounds` would read)."""
    cfg = dict(bounds_config(result))
    level, loss, block = cfg.pop("level"), cfg.pop("loss"), dict(cfg.pop("block"))
    family = block.pop("family")
    cfg.pop("R_old", None)
    cfg.pop("variants", None)     # THEORY §6 inputs: not fields of the paper's Setup
    cfg.pop("localised", None)    # THEORY §6b inputs: likewise
    return Setup(**cfg, **loss, family=family, block=block), level


@pytest.fixture(scope="module")
def full_result():
    return run_experiment(merge_config(TINY, {"insertion": {"family": "full", "feature_cap": 1.2}}))


def test_full_family_caps_and_c2(full_result):
    q = full_result["quantities"]
    assert q["family"] == "full" and q["nu_U"] > 0
    assert q["UB_norm"] <= q["nu_U"] * (1 + 1e-9) and q["V_norm"] <= q["nu_V"] * (1 + 1e-9)   # inside the class
    assert q["delta_erm_pop"] >= 0 and q["delta_erm_S"] >= 0                                  # (C2)
    # the block's output bound equals output_cap / L_top (THEORY §1): nu_V nu_U sqrt(rho^2 + 1)
    out = q["nu_V"] * q["nu_U"] * math.sqrt(q["rho"] ** 2 + 1)
    assert out == pytest.approx(full_result["config"]["insertion"]["output_cap"] / q["L_top_certified"], rel=1e-9)


def test_full_family_bounds_are_the_full_setups(full_result):
    """The stored routes are Theorems 2-3 of the *full* family's setup (GRS Rademacher bound, THEORY §4)."""
    setup, level = _setup_from(full_result)
    assert setup.family == "full" and set(setup.block) == {"d", "L_top", "rho", "nu_U", "nu_V"}
    rep = evaluate_routes(setup, level)
    assert float(rep.direct.bound) == pytest.approx(full_result["routes"]["direct"]["bound"], rel=1e-12)
    readout = Setup(**{**setup.__dict__, "family": "readout",
                       "block": {"d": setup.block["d"], "L_top": setup.block["L_top"],
                                 "rho_phi": full_result["quantities"]["rho_phi"], "nu_V": setup.block["nu_V"]}})
    assert float(evaluate_routes(readout, level).eps_M) != pytest.approx(float(rep.eps_M))   # not the readout's


def test_full_family_route_fixed_before_data(full_result):
    """The full family defaults to a variant it can evaluate; naming one it cannot is an input error."""
    assert full_result["config"]["variants"]["use"] == "population_tight_hoeffding"
    assert "population_tight_hoeffding" in full_result["routes"]
    with pytest.raises(InputError, match="variants.use"):
        validate_config(merge_config(TINY, {"insertion": {"family": "full"},
                                            "variants": {"use": "population_tight_bernstein"}}))


def test_full_trained_block_is_evaluated_with_its_own_features():
    """When the trained full block wins (C2), L_test(f_new) is that block's loss on T (recomputed here)."""
    from numerics._numerics import per_sample_loss
    from numerics.insertion import ExpandedModel

    cfg = validate_config(merge_config(TINY, {"insertion": {"family": "full"}, "block_training": {"steps": 150}}))
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg)
        group = draw_samples(fixed, [streams_of(cfg)])
        sel = select_blocks(fixed, group)
        ev = evaluate_draw(fixed, group, sel, 0)
    block = sel.blocks_new[0]
    assert block is not None, sel.returned                      # the trained block won on this draw
    assert not torch.equal(block.U, fixed.expanded.block.U)     # its features moved
    model = ExpandedModel(fixed.net, fixed.at, block)
    x, y = fixed.task.sample(cfg["sizes"]["K"], streams_of(cfg).seed_for("T"))
    with torch.no_grad():
        expected = float(per_sample_loss(model(x), y, fixed.loss).mean())
    assert ev.L_test["new"] == pytest.approx(expected, rel=1e-9)
    assert ev.L_test["new"] != pytest.approx(ev.L_test["jump_S"])


def test_cap_grid_pays_the_union_bound_and_holds_every_function():
    base = run_experiment(TINY)
    grid = run_experiment(merge_config(TINY, {"insertion": {"cap_grid": 6, "cap_ratio": 2.0}}))
    q = grid["quantities"]
    caps = q["nu_V_max"] * 2.0 ** -np.arange(5, -1, -1)
    assert q["n_grid"] == 6 and np.isclose(caps, q["nu_V"]).any()                    # a grid member
    assert q["nu_V"] >= q["V_norm"] * (1 - 1e-12)
    assert q["nu_V"] >= min(q["nu_V_max"], q["eta"] * q["G_norm"]) * (1 - 1e-9)      # holds f~_pop too
    smaller = caps[caps < q["nu_V"] * (1 - 1e-9)]
    if smaller.size:                                                                   # and is the smallest such
        assert smaller.max() < max(q["V_norm"], q["eta"] * q["G_norm"], q["eta_S"] * q["G_S_norm"])
    setup, level = _setup_from(grid)
    assert setup.n_grid == 6
    same_cap = Setup(**{**setup.__dict__, "n_grid": 1})
    assert float(evaluate_routes(setup, level).eps_M) > float(evaluate_routes(same_cap, level).eps_M)   # paid
    assert base["quantities"]["n_grid"] == 1 and "no cap grid" in " ".join(base["notes"])
    assert any("grid of 6 caps" in n for n in grid["notes"])


def test_digits_as_data_population_risk_is_the_dataset_average():
    """digits: the empirical distribution of the 1797 images; R(f_old) is the average over its rows."""
    cfg = validate_config(merge_config(TINY, {"task": {"kind": "digits"}, "reference": {"n": 1000, "steps": 60}}))
    assert cfg["task"]["d_in"] == 64 and cfg["task"]["n_classes"] == 10
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg)
    task = fixed.task
    with torch.no_grad():
        exact = float(torch.nn.functional.cross_entropy(fixed.net(task.x), task.y))   # over every row
    res = run_experiment(cfg)
    assert abs(res["R_old"] - exact) <= 4 * res["R_old_stderr"] + 1e-12
    assert res["quantities"]["L_loss"] == pytest.approx(math.sqrt(2))
    assert res["quantities"]["delta_erm_pop"] >= 0


def test_digits_dimensions_are_fixed_by_the_data():
    with pytest.raises(InputError, match=r"task.d_in == 3, must be 64 for task.kind = 'digits'"):
        validate_config({"task": {"kind": "digits", "d_in": 3}})


@pytest.mark.parametrize("override, match", [
    ({"insertion": {"family": "linear"}}, r"insertion.family == 'linear', must be one of \['readout', 'full'\]"),
    ({"insertion": {"cap_grid": 0}}, r"insertion.cap_grid == 0, must be an integer in \[1, 1000\]"),
    ({"insertion": {"cap_grid": 10**12}}, r"insertion.cap_grid == 1000000000000, must be an integer in \[1, 1000\]"),
    ({"insertion": {"cap_ratio": 1.0}}, r"insertion.cap_ratio == 1.0, must be a finite number in \(1, inf\)"),
    ({"insertion": {"feature_cap": 0.5}}, r"insertion.feature_cap == 0.5, must be a finite number in \[1, inf\)"),
])
def test_bad_extension_keys(override, match):
    with pytest.raises(InputError, match=match):
        validate_config(override)


def test_empirical_task_is_exact_and_rejects_foreign_rows():
    x = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [2.0, 2.0]], dtype=torch.float64)
    y = torch.tensor([0, 1, 1, 2])
    task = EmpiricalClassification(x, y, 3)
    probs = task.label_probs(x)
    np.testing.assert_allclose(probs.numpy(), [[0.5, 0.5, 0], [0, 1, 0], [0.5, 0.5, 0], [0, 0, 1]])  # duplicates
    xs, ys = task.sample(2000, seed=1)
    assert torch.equal(torch.cat(list(task.sample_x_chunks(2000, 1, chunk=300))), xs)
    counts = torch.bincount(ys, minlength=3).double() / 2000                    # P(y) = (1/4, 1/2, 1/4)
    assert torch.allclose(counts, torch.tensor([0.25, 0.5, 0.25], dtype=torch.float64), atol=0.05)
    with pytest.raises(ValueError, match="not rows of the dataset"):
        task.label_probs(torch.tensor([[0.5, 0.5]], dtype=torch.float64))
