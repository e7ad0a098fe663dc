"""Issue 29 (item 2): the localised cap grid (union paid), the ``"predicted"`` cap, the centred ``sigma^2`` and
``||Sigma_phi||``'s upper confidence bound in ``run`` (THEORY §6b, **Choice**).

Expected values come from independent computations: the signal sample's moments by plain
autograd on the head (``m_i = d l_i / d h`` at ``h = 0``), the grid's choice and its cost re-evaluated
from the written inputs, the union's price shown by the same inputs at ``n_grid = 1``.
"""
import math

import numpy as np
import pytest
import torch

from bounds.localised_routes import LocalisedSetup, evaluate_localised
from numerics._numerics import per_sample_loss
from numerics.studies.run import localised_class, prepare_fixed, run_experiment, streams_of, validate_config

TINY = {"sizes": {"M": 3000, "K": 2500, "population": 3000}, "reference": {"n": 500, "steps": 15},
        "block_training": {"steps": 60, "batch_size": 512}}
GRID = {"cap": "predicted", "cap_grid": 3, "cap_ratio": 2.0, "variance": "centred"}


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    return run_experiment({**TINY, "localised": GRID}, tmp_path_factory.mktemp("run_grid"))


def _setup_of(inputs: dict, **changes) -> LocalisedSetup:
    keys = set(LocalisedSetup.__dataclass_fields__)
    return LocalisedSetup(**{**{k: v for k, v in inputs.items() if k in keys}, **changes})


def test_the_cap_is_chosen_on_S_from_a_grid_fixed_before_S_and_the_grid_is_paid(grid_run):
    loc = grid_run["localised"]
    caps, f_new, inp = loc["class"]["caps"], loc["f_new"], loc["inputs"]
    assert caps == pytest.approx([caps[0] * 2.0**-k for k in range(3)], rel=1e-15)
    assert inp["n_grid"] == 3 and f_new["nu"] == inp["nu_V"] == caps[int(np.argmin(f_new["train_bounds"]))]
    assert f_new["V_norm"] <= f_new["nu"]
    use = loc["use"]["name"]
    paid = evaluate_localised(_setup_of(inp), grid_run["level"]).routes[use]
    assert float(paid.bound) == grid_run["routes"][use]["bound"]
    k = caps.index(f_new["nu"])
    assert f_new["train_bounds"][k] == pytest.approx(-inp["delta_train"] + float(paid.values["U_S"]), rel=1e-12)
    unpaid = evaluate_localised(_setup_of(inp, n_grid=1), grid_run["level"]).routes[use]
    assert float(unpaid.values["U_S"]) < float(paid.values["U_S"])            # the union costs: ln(3/delta)
    r_d = min(inp["B"], inp["L_loss"] * inp["L_top"] * f_new["nu"] * inp["rho_phi"])    # at the cap used
    assert float(_setup_of(inp).r_d()) == pytest.approx(r_d, rel=1e-15)


def test_the_predicted_cap_maximises_the_predicted_margin_and_stays_below_the_jumpboard(grid_run):
    from numerics.studies.run._localised_cap import predicted_setup

    cfg = validate_config({**TINY, "localised": GRID})
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg, streams_of(cfg))
    cls = localised_class(fixed)
    assert cls.nu == grid_run["localised"]["class"]["nu"]
    jump = float(fixed.signal.G.norm()) / float(fixed.signal.beta.beta)
    assert cls.nu <= min(jump, fixed.const.nu_V)
    nus = np.array([cls.nu, cls.nu * 1.5, cls.nu / 1.5])
    st = predicted_setup(fixed, {**cls.__dict__}, {**GRID, "use": "localised_train_exact_bernstein",
                                                   "delta_R_failure": 5e-4}, nus, 3)
    margin = evaluate_localised(st, cfg["level"]).routes["localised_train_exact_bernstein"].improvement
    assert margin[0] >= margin[1] - 1e-15 and (cls.nu * 1.5 > min(jump, fixed.const.nu_V) or margin[0] >= margin[2])


def test_signal_moments_by_plain_autograd_and_the_bounds_they_give():
    from bounds.localised import centred_variance_upper_expression  # noqa: F401  (the bound checked in bounds/)
    from numerics.studies.run._localised_signal import signal_moments

    cfg = validate_config(TINY)
    with torch.random.fork_rng(devices=[]):
        fixed = prepare_fixed(cfg, streams_of(cfg))
    cls = localised_class(fixed)
    xs, ys = zip(*fixed.task.sample_chunks(cfg["sizes"]["population"], fixed.streams.seed_for("signal")))
    x, y = torch.cat(xs), torch.cat(ys)
    with torch.no_grad():
        u = fixed.net.bottom(x, fixed.at)
        phi = fixed.expanded.block.features(u.reshape(u.shape[0], -1)).double()
    h = torch.zeros_like(u, requires_grad=True)
    per_sample_loss(fixed.net.head(u + h), y, fixed.loss).sum().backward()
    m = h.grad.double()
    xi2 = m.pow(2).sum(1) * phi.pow(2).sum(1)
    G_n = (m.T @ phi) / len(x)
    mom = signal_moments(fixed, cls.b_xi)
    assert mom.n == len(x) and mom.mean_xi2 == pytest.approx(float(xi2.mean()), rel=1e-9)
    assert mom.var_xi2 == pytest.approx(float(xi2.var()), rel=1e-7)
    assert mom.G_n_norm == pytest.approx(float(G_n.norm()), rel=1e-9)
    assert mom.Sigma_top == pytest.approx(float(torch.linalg.eigvalsh(phi.T @ phi / len(x)).max()), rel=1e-9)
    # the bounds: the uncentred one is THEORY's Maurer--Pontil (typed here); the centred one lies below E xi2's at
    # delta/2 by at least max(0, ||G_n|| - e_n)^2 (e_n Pinelis at delta/2)
    n, L = mom.n, math.log(2 / cls.delta_sigma)
    unc = mom.mean_xi2 + math.sqrt(2 * mom.var_xi2 * L / n) + 7 * cls.b_xi**2 * L / (3 * (n - 1))
    assert cls.sigma2_uncentred == pytest.approx(min(unc, cls.b_xi**2), rel=1e-12)
    L2 = math.log(4 / cls.delta_sigma)
    u2 = min(mom.mean_xi2 + math.sqrt(2 * mom.var_xi2 * L2 / n) + 7 * cls.b_xi**2 * L2 / (3 * (n - 1)), cls.b_xi**2)
    e_n = 4 * cls.b_xi * L2 / (3 * n) + math.sqrt(2 * u2 * L2 / n)
    assert cls.sigma2_centred == pytest.approx(max(0.0, u2 - max(0.0, mom.G_n_norm - e_n) ** 2), rel=1e-12)
    assert cls.sigma2_ub == cls.sigma2_uncentred                 # default: variance = "uncentred"
    assert mom.Sigma_top <= cls.Sigma_ub < fixed.const.rho_phi**2
    phi2 = phi.pow(2).sum(1)                                      # E||phi||^2's bound ((b)'s remainder, delta_tr)
    assert mom.mean_phi2 == pytest.approx(float(phi2.mean()), rel=1e-9)
    L, rho2 = math.log(2 / cls.delta_tr), fixed.const.rho_phi**2
    tr = float(phi2.mean()) + math.sqrt(2 * float(phi2.var()) * L / n) + 7 * rho2 * L / (3 * (n - 1))
    assert cls.tr_ub == pytest.approx(min(tr, rho2), rel=1e-7) and cls.tr_ub < rho2


def test_exact_route_uses_the_Sigma_bound_and_pays_its_level(tmp_path):
    res = run_experiment(TINY, tmp_path)
    r, cls = res["routes"]["localised_train_exact_bernstein"], res["localised"]["class"]
    v = r["values"]
    assert v["Sigma_ub"] == cls["Sigma_ub"] < v["rho_phi"] ** 2 and v["delta_Sn"] == 1e-3
    assert r["levels"]["E_U"] == pytest.approx(v["delta_G"] + v["delta_Sigma"] + v["delta_sigma"] + v["delta_Sn"],
                                               rel=1e-12)
    assert r["failure_probability"] <= res["level"]
    assert res["localised"]["levels"]["delta_Sn"] == 1e-3
    lin = res["routes"]["localised_train_linearised_bernstein"]
    w = lin["values"]
    assert w["tr_ub"] == cls["tr_ub"] < w["rho_phi"] ** 2 and w["delta_tr"] == 1e-3
    assert lin["levels"]["E_U"] == pytest.approx(w["delta_G"] + w["delta_q"] + w["delta_sigma"] + w["delta_tr"],
                                                 rel=1e-12)


@pytest.mark.parametrize("section,match", [
    ({"cap_grid": 0}, "localised.cap_grid == 0"), ({"cap_ratio": 1.0}, "localised.cap_ratio == 1.0"),
    ({"variance": "both"}, "localised.variance == 'both'"), ({"delta_tr": 1.0}, "localised.delta_tr == 1.0"),
    ({"delta_Sn": 0.0}, "localised.delta_Sn == 0.0"), ({"cap": "predict"}, "localised.cap == 'predict'")])
def test_bad_new_localised_keys_name_the_key(section, match):
    from plumbing.validation import InputError

    with pytest.raises(InputError, match=match):
        validate_config({"localised": section})
    assert validate_config({"localised": {"cap": "predicted", "cap_grid": 2, "variance": "centred"}}) is not None


def test_the_levels_of_the_new_bounds_must_fit_the_level():
    from plumbing.validation import InputError

    with pytest.raises(InputError, match="localised.delta_tr"):      # linearised: delta_sigma + delta_tr + ... >= level
        validate_config({"localised": {"use": "localised_train_linearised_bernstein", "delta_U": 0.02,
                                       "delta_T_d": 0.02, "delta_tr": 0.02}, "task": {"kind": "classification"}})
