"""Power and family-wise validity of the localised certificates (issue 17, acceptance point 2).

* The weakened ``U_S`` (test instruments ``weakened_*``, never certificates) by an independent
  computation typed from THEORY §6b; the truth's margin; a check that must fail.
* LIGHT (default run): 6 draws of a small setup with a cap fixed before ``S`` (0.003), where
  ``e_G`` carries ``U_S``: no route or event significant after Holm, ``e_G x 0.1`` flagged (Holm
  over the whole power table), and ``U_S x 0.1``; no true variant flagged.
* SLOW (recorded): 200 draws of ONE converged setup (``examples/converged_reference.toml``,
  ``--vary data``): the same assertions, ``U_S x 0.1`` flagged. There the weakenings of ``e_G``
  alone are reported, not required: the quadratic term of (c) (sure ``||Sigma_phi|| <= rho_phi^2``)
  plus the truth's own error on the ball (4e6 check samples) already exceed the realised
  supremum at most draws, so no test on these draws can see ``e_G`` shrink.
"""
import math
import os
import tomllib
from pathlib import Path

import pytest

from numerics.studies.validity import run_validity
from numerics.studies.validity._localised_power import POWER_ROUTES, localised_variants, truth_margin, weakened_U_S

EXACT = "localised_train_exact_bernstein"
VALUES = {"nu_V": 0.003, "U_S": 4e-4, "b_xi": 20.0, "sigma2_ub": 7.0, "M": 8000.0, "delta_G": 0.0125, "n_grid": 1.0}


def test_weakened_U_S_typed_from_theory():
    L = math.log(2 / 0.0125)
    e_G = 4 * 20.0 * L / (3 * 8000) + math.sqrt(2 * 7.0 * L / 8000)      # THEORY §6b, this project's 4/3
    assert weakened_U_S("weakened_e_G_x0.1", VALUES) == pytest.approx(4e-4 - 0.9 * 0.003 * e_G, rel=1e-12)
    assert weakened_U_S("weakened_e_G_no_sqrt", VALUES) == pytest.approx(4e-4 - 0.003 * math.sqrt(2 * 7.0 * L / 8000),
                                                                          rel=1e-12)
    assert weakened_U_S("weakened_U_S_x0.1", VALUES) == pytest.approx(4e-5, rel=1e-12)
    with pytest.raises(ValueError, match="weakening == 'x'"):
        weakened_U_S("x", VALUES)


def _record(sup, truth_error=None, moment_error=1e-3, nu_cap=0.1):
    dev = {"upper": sup, "nu": 0.003} | ({} if truth_error is None else {"truth_error": truth_error})
    values = {**VALUES, "delta_Sigma": 0.0125, "delta_sigma": 0.0, "delta_Sn": 0.0}
    return {"deviations": {"E_U": dev}, "truth": {"moment_error": moment_error}, "values": {"nu_V": nu_cap},
            "routes": {n: {"values": values} for n in POWER_ROUTES}}


def test_weakened_check_fails_beyond_the_margin_and_the_true_one_at_its_threshold():
    var = {v.name: v for v in localised_variants()}
    weak, true = var[f"weakened_e_G_x0.1 ({EXACT}/E_U)"], var[f"{EXACT}/E_U (true U_S)"]
    Uw = weakened_U_S("weakened_e_G_x0.1", VALUES)
    assert weak.check(_record(Uw + 2e-6, truth_error=1e-6)) == (True, pytest.approx(0.025))
    assert not weak.check(_record(Uw + 0.5e-6, truth_error=1e-6))[0]       # within the truth's error: not counted
    assert true.check(_record(4e-4 + 1e-12))[0] and not true.check(_record(4e-4))[0]
    rho = 0.003 / 0.1           # no truth_error stored: the bound from the paper cap's moment_error
    assert truth_margin(_record(0.0)) == pytest.approx(1e-3 * (rho + 2 * rho**2))
    assert truth_margin(_record(0.0, nu_cap=0.001)) == math.inf


#: A small setup where e_G carries U_S (a cap fixed before S, M large against b_xi), its truth 3e6 samples.
LIGHT = {"sizes": {"M": 8000, "K": 1000, "population": 50_000}, "reference": {"n": 500},
         "block_training": {"steps": 40, "batch_size": 256}, "localised": {"cap": 0.003},
         "validity": {"group": 6, "population": 3_000_000}}


def _check_holm_and_power(res, must_flag):
    assert not res["family_wise"]["rejected"], res["family_wise"]
    assert not any(r["significant"] for k, r in res["routes"].items() if k.startswith("localised_"))
    rejected = set(res["power_family_wise"]["rejected"])
    for name in must_flag:
        assert name in rejected, (name, res["power"][name])
    assert not [k for k in rejected if not res["power"][k]["weakened"]], rejected   # a true guarantee never flagged
    for route in POWER_ROUTES:
        assert res["power"][f"{route}/E_U (true U_S)"]["failures"] == 0


def test_light_holm_and_power_on_small_draws(tmp_path):
    res = run_validity(LIGHT, 6, tmp_path, progress=False)
    assert res["truth"]["exact_class"]
    _check_holm_and_power(res, [f"{w} ({EXACT}/E_U)" for w in ("weakened_e_G_x0.1", "weakened_U_S_x0.1")])


#: Draws of the one converged setup in the recorded run.
CONVERGED_DRAWS = 200


@pytest.mark.slow
def test_converged_200_draws_holm_and_power(tmp_path):
    """Recorded (issue 17, acceptance point 2): ``depthcert validity --config examples/converged_reference.toml
    --draws 200`` (one fixed setup, 200 draws of (S, T)). ``DEPTHCERT_CONVERGED200_DIR`` names a study folder
    to resume (the stored draws of the same config are reused, as ``depthcert validity`` does)."""
    config = tomllib.loads((Path(__file__).resolve().parents[3] / "examples" / "converged_reference.toml").read_text())
    out = os.environ.get("DEPTHCERT_CONVERGED200_DIR") or tmp_path
    res = run_validity(config, CONVERGED_DRAWS, out, vary="data", progress=False)
    assert res["draws"] == CONVERGED_DRAWS and res["truth"]["exact_class"]
    for name in ("population", "direct", EXACT, "heldout_paired"):
        c = res["certification"][name]
        print(f"{name}: certified {c['certified']}/{CONVERGED_DRAWS} {c['certification_interval']}")
    for k, p in res["power"].items():
        if "localised" in k:
            print(f"{k}: {p['failures']}/{p['draws']} failed, stated {p['stated']:.4f}, p = {p['p_value']:.3g}")
    print("Holm (routes, events):", res["family_wise"]["rejected"], "power Holm:", res["power_family_wise"]["rejected"])
    _check_holm_and_power(res, [f"weakened_U_S_x0.1 ({EXACT}/E_U)"])
