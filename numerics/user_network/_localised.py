"""The localised routes of THEORY §6b in ``dc.certify_insertion`` (**Choice**: this project's, not Paper A's).

Inputs (:class:`bounds.localised_routes.LocalisedSetup`) from the role samples of
:mod:`numerics.user_network._certify`: the ball ``||V||_F <= nu_V`` (``nu_V = 2 ||V_pop||``, fixed on the
signal sample, before ``S``; ``f_new`` is projected into it), ``delta_train = R_S(f_old) -
R_S(f_new)`` on ``S``, the paired differences ``d_new`` on ``T`` (variance), ``d_pop`` on ``S``
(variance, ``Delta_ERM_pop`` of any sign) and on the signal's last third (the lower bound on
``Delta_R`` with the range ``2 r_d``, :func:`bounds.localised_routes.paired_delta_R_lower`, at
``level / 4``). Constants:

* ``b_xi = L_loss L_top rho_phi``: ``||m phi^T||_F <= ||m|| ||phi||`` with ``m = J_top^T grad l``,
  ``||grad l|| <= L_loss`` and ``||J_top|| <= L_top`` on the tube; ``sigma^2`` the sure ``b_xi^2``.
* ``kappa`` (routes ``*_linearised_*``): given, or, for a *linear* ``f_top`` with matrix ``A``
  (the user gives ``A_norm = ||A||_2``) and a named loss, ``kappa = c_loss ||A||_2^2`` with
  ``c_loss`` the largest eigenvalue of the loss's Hessian in the output (:data:`LOSS_CURVATURE`):
  squared ``||z - y||^2``: ``2 I``, so 2; cross-entropy: ``diag(p) - p p^T``, so 1/2
  (:func:`softmax_hessian_bound`; checked symbolically and numerically in the tests).
* (c) (routes ``*_exact_*``): squared loss, ``A_norm`` given, one position (``P = 1``);
  ``||Sigma_phi||`` the upper confidence bound of :func:`bounds.localised.Sigma_norm_upper_expression`
  on the signal's last third (``lambda_max`` of its uncentred ``Sigma_n``, fixed before ``S``) at
  ``delta_Sn = level / 50`` (**Choice**; its minimum with ``rho_phi^2``; in ``P(E_U)``).

A route whose constant is missing is listed ``not evaluable`` with the constants it lacks
(a user's own loss: ``kappa`` or ``L_loss`` is the user's to give), never skipped silently.
"""
from __future__ import annotations

import sympy as sp

from bounds.localised import LOCALISED_SPECS

__all__ = ["LOCALISED_NAMES", "LOSS_CURVATURE", "localised_row", "localised_rows", "localised_setup", "softmax_hessian_bound"]

#: ``lambda_max`` of the Hessian of the named loss in the network's output (docstring of ``numerics.user_network._localised``).
LOSS_CURVATURE = {"squared": 2.0, "cross_entropy": 0.5}
LOCALISED_NAMES = tuple(LOCALISED_SPECS)
#: What each missing :class:`LocalisedSetup` key asks of the user.
_ASK = {"localised.kappa": "kappa (or A_norm, for a linear f_top, with a named loss)",
        "localised.A_norm": "A_norm (||A||_2 of a linear f_top)", "localised.b_xi": "L_loss, L_top",
        "localised.delta_R": "a signal sample whose last third estimates Delta_R (V_pop in the ball)"}


def softmax_hessian_bound(C: int = 3):
    """``(H, bound)``: the Hessian of ``-log softmax(z)_y`` in ``z`` (symbolic, ``C`` classes) and ``1/2``.

    ``H = diag(p) - p p^T`` (``p = softmax(z)``) for every label ``y``; ``v^T H v = sum p_i v_i^2 -
    (sum p_i v_i)^2`` is the variance of ``v`` under ``p``, at most ``(max v - min v)^2 / 4 <=
    ||v||^2 / 2`` (Popoviciu; ``(v_i - v_j)^2 <= 2 ||v||^2``), so ``lambda_max(H) <= 1/2``, attained
    at ``p = (1/2, 1/2, 0, ...)``.
    """
    z, y = sp.symbols(f"z0:{C}", real=True), 0
    loss = -z[y] + sp.log(sum(sp.exp(t) for t in z))
    return sp.hessian(loss, z), sp.Rational(1, 2)


def _kappa(loss, c: dict):
    if c.get("kappa") is not None:
        return c["kappa"]
    if isinstance(loss, str) and loss in LOSS_CURVATURE and c.get("A_norm") is not None:
        return LOSS_CURVATURE[loss] * c["A_norm"] ** 2
    return None


def localised_setup(q: dict, c: dict, loss, level: float):
    """The :class:`~bounds.localised_routes.LocalisedSetup` of the measured ``q`` and constants ``c``."""
    from bounds.localised_routes import LocalisedSetup, Sigma_norm_upper_value, paired_delta_R_lower

    L_loss, L_top, rho = c["L_loss"], c["L_top"], q["rho_phi"]
    exact = loss == "squared" and c.get("A_norm") is not None and q["P"] == 1
    st = LocalisedSetup(M=q["M"], K=q["K"], L_test_old=q["L_T_old"], B=c["B"], L_loss=L_loss, L_top=L_top,
                        d=q["d"], r=q["r"], rho_phi=rho, nu_V=q["nu_V"], kappa=_kappa(loss, c),
                        b_xi=L_loss * L_top * rho, A_norm=c.get("A_norm"),
                        delta_train=q["R_S_old"] - q["R_S_new"], var_T_dnew=q["var_T_dnew"], exact_applies=exact)
    if exact and q.get("n_Sigma", 0) >= 2:
        st = LocalisedSetup(**{**st.__dict__, "Sigma_ub": Sigma_norm_upper_value(
            q["n_Sigma"], q["Sigma_top"], level / 50, q["rho_phi"], q["r"]), "delta_Sn": level / 50})
    if q.get("n_held", 0) >= 2:
        low = paired_delta_R_lower(q["dR_mean"], q["dR_var"], q["n_held"], st, level / 4)
        st = LocalisedSetup(**{**st.__dict__, "delta_R": float(low), "delta_R_failure": level / 4,
                               "delta_erm_pop": q["R_S_jump_pop"] - q["R_S_new"], "var_S_dpop": q["var_S_dpop"]})
    return st.validate()


def _exact_why(loss, q: dict) -> str:
    """Why (c) does not apply although ``A_norm`` may be given: the loss, or more than one position."""
    why = [] if loss == "squared" else [f"squared loss (the loss is {loss if isinstance(loss, str) else 'a callable'})"]
    why += [] if q.get("P", 1) == 1 else [f"one position (the state has P = {q['P']})"]
    return "(c) applies to " + " and ".join(why or ["a readout block at the top"]) + " only (THEORY §6b (c))"


def localised_row(name: str):
    """The :attr:`bounds.routes.Route.evaluate` of the localised route ``name``: its result, or what it lacks
    (every localised route of one table is evaluated once, in ``memo``)."""
    def evaluate(setup, level, inputs, constants, memo):
        if "localised" not in memo:
            memo["localised"] = {row[0]: row[1] if row[1] is not None else row[2]
                                 for row in localised_rows(setup, level, inputs, constants)}
        return memo["localised"][name]
    return evaluate


def localised_rows(setup, level, inputs, constants):
    """Route-table rows: ``(name, VariantResult)``, or ``(name, None, missing)`` for a route not evaluable."""
    from bounds.localised_routes import evaluate_localised

    st = localised_setup(inputs.measured, constants, inputs.loss, level)
    rep = evaluate_localised(st, level, validate=False)
    out = []
    for name in LOCALISED_NAMES:
        if name in rep.routes:
            out.append((name, rep.routes[name]))
            continue
        missing = st.missing(*LOCALISED_SPECS[name])
        asks = [_ASK.get(m, _exact_why(inputs.loss, inputs.measured) if "exact_applies" in m else m) for m in missing]
        out.append((name, None, list(dict.fromkeys(asks))))
    return out
