"""``dc.certify_insertion``'s (c) routes use ``||Sigma_phi||``'s upper confidence bound from the signal's held third
(issue 29; THEORY §6b (c), **Choice**: ``delta_Sn = level / 50``), its level in ``P(E_U)``."""
import math

import pytest

from bounds.localised_routes import evaluate_localised
from depthcert.api._localised import localised_setup

C = {"B": 5.0, "L_loss": 1.0, "L_top": 3.0, "kappa": None, "A_norm": 3.0}


def _q(**kw):
    return {"M": 1000, "K": 1000, "L_T_old": 0.5, "d": 4, "r": 4, "rho_phi": 2.0, "nu_V": 0.01, "R_S_old": 0.5,
            "R_S_new": 0.49, "var_T_dnew": 1e-4, "P": 1, **kw}


def test_the_Sigma_bound_is_theorys_root_and_its_level_is_paid():
    level, n, top = 0.05, 20000, 0.9
    st = localised_setup(_q(n_Sigma=n, Sigma_top=top), C, "squared", level)
    L = math.log(4 / (level / 50))                                    # ln(r / delta_Sn), r = 4
    a, b = 2 * L / (3 * n), math.sqrt(2 * 4.0 * L / n)
    hand = ((b + math.sqrt(b * b + 4 * (1 - a) * top)) / (2 * (1 - a))) ** 2   # THEORY §6b (c)
    assert st.Sigma_ub == pytest.approx(hand, rel=1e-12) and top < st.Sigma_ub < 4.0
    assert st.delta_Sn == level / 50
    r = evaluate_localised(st, level).routes["localised_train_exact_bernstein"]
    v = r.values
    assert float(r.levels["E_U"]) == pytest.approx(float(v["delta_G"] + v["delta_Sigma"] + level / 50), rel=1e-12)
    assert float(r.failure_probability) <= level
    sure = evaluate_localised(localised_setup(_q(), C, "squared", level), level).routes["localised_train_exact_bernstein"]
    assert float(sure.values["Sigma_ub"]) == 4.0 and float(r.values["U_S"]) < float(sure.values["U_S"])


def test_no_Sigma_bound_for_cross_entropy_or_several_positions():
    assert localised_setup(_q(n_Sigma=20000, Sigma_top=0.9), C, "cross_entropy", 0.05).Sigma_ub is None
    assert localised_setup(_q(n_Sigma=20000, Sigma_top=0.9, P=16), C, "squared", 0.05).Sigma_ub is None
