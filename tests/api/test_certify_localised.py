"""``dc.certify_insertion`` evaluates the localised routes of THEORY §6b (issue 17, item 7), and its
``rho_phi`` plug-in is fixed on the signal sample, checked on S and T (**Choice**)."""
import math

import numpy as np
import pytest
import sympy as sp
import torch

import depthcert as dc
from depthcert.api._localised import LOCALISED_NAMES, LOSS_CURVATURE, localised_setup, softmax_hessian_bound

SMALL = dict(erm_steps=2, batch_size=200)



@pytest.fixture(scope="module")
def cert(roles):
    net, sig, S, T = roles
    return dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, **SMALL)


def _rows(cert) -> dict:
    return {r["route"]: r for r in cert.rows}


def test_every_localised_route_is_a_row_evaluated_or_naming_what_it_lacks(cert):
    tab = _rows(cert)
    assert set(LOCALISED_NAMES) <= set(tab) and set(LOCALISED_NAMES) <= set(cert.table()["route"])
    for name in LOCALISED_NAMES:
        row = tab[name]
        if "_sure_" in name:
            assert row["bound"] is not None and not row["missing"], name
        else:
            assert row["bound"] is None and not row["certified"] and row["message"].startswith("not evaluable")
    assert tab["localised_train_linearised_bernstein"]["missing"] == [
        "kappa (or A_norm, for a linear f_top, with a named loss)"]
    exact = tab["localised_train_exact_hoeffding"]["missing"]
    assert exact[0].startswith("A_norm") and "(c) applies to squared loss (the loss is cross_entropy)" in exact[-1]


def test_sure_hoeffding_row_by_hand(cert):
    """THEORY §6b (a) with Hoeffding tails typed from the text, at the levels level/2 each."""
    q, c = cert.quantities, cert.constants
    M, K, nu, rho, d, lv = q["M"], q["K"], q["nu_V"], q["rho_phi"], q["d"], 0.05 / 2
    r_d = min(c["B"], c["L_loss"] * c["L_top"] * nu * rho)
    U = 2 * math.sqrt(2 * d) * c["L_loss"] * c["L_top"] * nu * rho / math.sqrt(M) + 2 * r_d * math.sqrt(
        math.log(1 / lv) / (2 * M))
    bound = q["L_T_old"] - (q["R_S_old"] - q["R_S_new"]) + U + 2 * r_d * math.sqrt(math.log(1 / lv) / (2 * K))
    row = _rows(cert)["localised_train_sure_hoeffding"]
    assert row["bound"] == pytest.approx(bound, rel=1e-9)


def test_a_users_own_loss_names_the_missing_constants(roles):
    net, sig, S, T = roles
    own = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, L_loss=1.5,
                               loss=lambda out, t: torch.nn.functional.cross_entropy(out, t, reduction="none"), **SMALL)
    tab = _rows(own)
    assert tab["localised_paper_linearised_hoeffding"]["missing"][0].startswith("kappa")
    assert tab["localised_train_sure_bernstein"]["bound"] is not None
    with_kappa = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, L_loss=1.5, kappa=0.7,
                                      A_norm=2.0, loss=lambda o, t: torch.nn.functional.cross_entropy(
                                          o, t, reduction="none"), **SMALL)
    assert _rows(with_kappa)["localised_train_linearised_hoeffding"]["bound"] is not None


def _q(**kw):
    return {"M": 1000, "K": 1000, "L_T_old": 0.5, "d": 4, "r": 4, "rho_phi": 2.0, "nu_V": 0.01, "R_S_old": 0.5,
            "R_S_new": 0.49, "var_T_dnew": 1e-4, "P": 1, **kw}


def test_kappa_from_the_loss_curvature_and_A_norm():
    c = {"B": 5.0, "L_loss": 1.0, "L_top": 3.0, "kappa": None, "A_norm": 3.0}
    assert localised_setup(_q(), c, "cross_entropy", 0.05).kappa == pytest.approx(0.5 * 9.0)
    sq = localised_setup(_q(), c, "squared", 0.05)
    assert sq.kappa == pytest.approx(2.0 * 9.0) and sq.exact_applies and sq.A_norm == 3.0
    assert not localised_setup(_q(P=16), c, "squared", 0.05).exact_applies      # (c) needs one position
    assert localised_setup(_q(), {**c, "A_norm": None}, "cross_entropy", 0.05).kappa is None
    assert localised_setup(_q(), c, lambda o, y: o, 0.05).kappa is None           # a user's loss: not derived
    assert localised_setup(_q(), {**c, "kappa": 0.3}, "squared", 0.05).kappa == 0.3
    st = localised_setup(_q(n_held=500, dR_mean=1e-3, dR_var=1e-6, R_S_jump_pop=0.495, var_S_dpop=1e-6), c,
                         "squared", 0.05)
    assert st.delta_R_failure == 0.0125 and st.delta_R < 1e-3 and st.delta_erm_pop == pytest.approx(0.005)


def test_softmax_hessian_is_diag_p_minus_ppT_and_at_most_one_half():
    H, bound = softmax_hessian_bound(3)
    z = sp.symbols("z0:3", real=True)
    p = [sp.exp(t) / sum(sp.exp(u) for u in z) for t in z]
    expected = sp.diag(*p) - sp.Matrix(p) * sp.Matrix(p).T
    assert sp.simplify(H - expected) == sp.zeros(3, 3)
    assert float(bound) == LOSS_CURVATURE["cross_entropy"] == 0.5 and LOSS_CURVATURE["squared"] == 2.0
    q = sp.Symbol("q", positive=True)                  # two classes, p = (q, 1 - q): eigenvalues 0 and 2 q (1 - q)
    H2 = sp.Matrix([[q * (1 - q), -q * (1 - q)], [-q * (1 - q), q * (1 - q)]])
    assert {sp.factor(e) for e in H2.eigenvals()} == {0, sp.factor(2 * q * (1 - q))}
    assert sp.maximum(2 * q * (1 - q), q, sp.Interval(0, 1)) == bound
    rng = np.random.default_rng(0)
    zs = rng.standard_normal((20000, 5)) * rng.uniform(0, 6, (20000, 1))
    ps = np.exp(zs - zs.max(1, keepdims=True))
    ps /= ps.sum(1, keepdims=True)
    Hs = np.einsum("ni,ij->nij", ps, np.eye(5)) - ps[:, :, None] * ps[:, None, :]
    top = np.linalg.eigvalsh(Hs)[:, -1]
    assert top.max() <= 0.5 + 1e-12
    p2 = np.array([0.5, 0.5, 0, 0, 0])
    assert np.linalg.eigvalsh(np.diag(p2) - np.outer(p2, p2))[-1] == pytest.approx(0.5)   # attained: tight
    assert not 0.25 >= top.max()       # a halved constant would not bound it


def test_rho_phi_is_fixed_before_S_and_checked_on_S_and_T(roles, cert):
    net, sig, S, T = roles
    other = dc.certify_insertion(net, "blocks.1", signal=sig, S=(S[0] * 0.5, S[1]), T=T, B=5.0, L_top=3.0, **SMALL)
    assert other.quantities["rho_phi"] == cert.quantities["rho_phi"]          # the class does not depend on S
    assert not cert.quantities["rho_phi_exceeded"] and "held" in cert.notes[3]
    q = cert.quantities
    assert q["rho_phi"] > 0 and q["rho_phi_held"] > 0
    assert q["rho_phi_exceeded"] == (max(q["rho_phi_S"], q["rho_phi_T"], q["rho_phi_held"]) > q["rho_phi"])
    given = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, rho_phi=1e3, **SMALL)
    assert not given.quantities["rho_phi_exceeded"] and given.quantities["rho_phi"] == 1e3   # a sure bound: no check


def test_on_the_event_rho_phi_exceeded_no_route_certifies():
    from depthcert.api._certify import _class_check

    rows = [{"route": "a", "certified": True, "message": "ok"}, {"route": "b", "certified": False, "message": "x"}]
    q = {"rho_phi": 2.0, "rho_phi_S": 1.5, "rho_phi_T": 2.5, "rho_phi_held": 1.0, "rho_phi_exceeded": True}
    out = _class_check(rows, q)
    assert [r["certified"] for r in out] == [False, False]
    assert all("(max 2.5) exceeds the plug-in rho_phi = 2" in r["message"] for r in out)
    assert _class_check(rows, {**q, "rho_phi_exceeded": False}) == rows
    held = _class_check(rows, {**q, "rho_phi_T": 1.0, "rho_phi_held": 3.0})   # the signal's held part counts too
    assert all("(max 3) exceeds" in r["message"] for r in held)
