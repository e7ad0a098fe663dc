"""The sympy symbols every statement in :mod:`bounds` is written in.

One symbol per quantity of THEORY.md; names follow the papers (``delta_R``,
``eps_M`` ...). Assumptions are kept minimal (``real``/``positive``/``nonnegative``)
because they flow into simplification and into the SMT encoding of
:mod:`proofs_check`, where every sign condition is also stated explicitly.
"""
from __future__ import annotations

import sympy as sp

_real = dict(real=True)
_pos = dict(positive=True)
_nonneg = dict(nonnegative=True)

# --- risks (THEORY §0 notation) -------------------------------------------------
L_test_old = sp.Symbol("L_test_old", **_real)      # L_test(f_old)
L_test_new = sp.Symbol("L_test_new", **_real)      # L_test(f_new)
L_test_jump = sp.Symbol("L_test_jump", **_real)    # L_test(f~_S)
R_old = sp.Symbol("R_old", **_real)                # R(f_old)
R_new = sp.Symbol("R_new", **_real)                # R(f_new)
R_jump = sp.Symbol("R_jump", **_real)              # R(f~) of the route's jumpboard
RS_new = sp.Symbol("RS_new", **_real)              # R_S(f_new)
RS_jump = sp.Symbol("RS_jump", **_real)            # R_S(f~)

# --- margins and costs -------------------------------------------------------------
delta_R = sp.Symbol("delta_R", **_nonneg)          # population margin (Theorem 1)
delta_erm = sp.Symbol("delta_erm", **_nonneg)      # optimisation gain over the jumpboard (C2)
delta_test_R = sp.Symbol("delta_test_R", **_real)  # test-level margin of f~_S (random, any sign)
eps_M = sp.Symbol("eps_M", **_nonneg)
eps_K = sp.Symbol("eps_K", **_nonneg)
t = sp.Symbol("t", **_pos)                         # Hoeffding deviation
delta_R_failure = sp.Symbol("delta_R_failure", **_nonneg)  # P(estimated Delta_R > true Delta_R)

# --- sizes, levels, loss constants ---------------------------------------------------
M = sp.Symbol("M", **_pos)
K = sp.Symbol("K", **_pos)
n = sp.Symbol("n", **_pos)
delta = sp.Symbol("delta", **_pos)
delta_prime = sp.Symbol("delta_prime", **_pos)
B = sp.Symbol("B", **_pos)
L_loss = sp.Symbol("L_loss", **_pos)
n_grid = sp.Symbol("n_grid", **_pos)               # size of the cap grid (union bound)

# --- block / network constants (THEORY §1, §4) ---------------------------------------
d = sp.Symbol("d", **_pos)
r = sp.Symbol("r", **_pos)
L_top = sp.Symbol("L_top", **_pos)
rho = sp.Symbol("rho", **_nonneg)
rho_phi = sp.Symbol("rho_phi", **_nonneg)
nu_V = sp.Symbol("nu_V", **_nonneg)
nu_U = sp.Symbol("nu_U", **_nonneg)
rad_hat = sp.Symbol("rad_hat", **_nonneg)          # empirical vector Rademacher value

# --- Theorem 1 -------------------------------------------------------------------------
beta = sp.Symbol("beta", **_pos)
eta = sp.Symbol("eta", **_pos)
G_sq = sp.Symbol("G_sq", **_nonneg)                # ||G||_F^2

__all__ = [name for name, value in dict(globals()).items() if isinstance(value, sp.Symbol)]
