"""Residual block families as objects (issue 15): one table, the output bound attained, torch-free."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

from bounds import _symbols as s
from bounds.families import FULL, READOUT, RESIDUAL_FAMILIES, residual_family
from bounds.generalisation import rad_vec_closed_form
from bounds.loss import block_output_bound
from bounds.parameters import BLOCK_PARAMETERS
from plumbing.validation import InputError


def test_every_key_list_is_the_family_table():
    assert set(RESIDUAL_FAMILIES) == {"readout", "full"}
    for name, fam in RESIDUAL_FAMILIES.items():
        assert BLOCK_PARAMETERS[name] is fam.parameters and fam.name == name
        assert set(fam.output_keys) == set(fam.parameters) - {"d", "L_top"}


def test_readout_output_bound_is_attained_by_a_rank_one_block():
    """sup ||V phi|| over ||V||_F <= nu_V, ||phi|| <= rho_phi is nu_V rho_phi (rank one, by hand)."""
    rng = np.random.default_rng(0)
    nu_V, rho_phi, d, r = 0.7, 2.5, 5, 4
    phi = rng.normal(size=r)
    phi *= rho_phi / np.linalg.norm(phi)
    e = np.zeros(d)
    e[2] = 1.0
    V = nu_V * np.outer(e, phi) / rho_phi                 # ||V||_F = nu_V
    attained = np.linalg.norm(V @ phi)
    bound = READOUT.output_bound({"nu_V": nu_V, "rho_phi": rho_phi})
    assert attained == pytest.approx(bound, rel=1e-12)
    Vs = rng.normal(size=(2000, d, r))
    Vs *= nu_V / np.linalg.norm(Vs, axis=(1, 2))[:, None, None]
    assert np.max(np.linalg.norm(Vs @ phi, axis=1)) <= bound * (1 + 1e-12)


def test_full_output_bound_is_attained_and_holds_for_random_blocks():
    """``||V relu(U u + b)|| <= nu_V nu_U sqrt(rho^2 + 1)``: attained with [U b] one row along [u; 1]."""
    rng = np.random.default_rng(1)
    nu_V, nu_U, rho, d, r = 0.4, 1.5, 2.0, 3, 6
    u = rng.normal(size=d)
    u *= rho / np.linalg.norm(u)
    ub = np.append(u, 1.0)
    row = nu_U * ub / np.linalg.norm(ub)                    # ||[U b]||_F = nu_U
    UB = np.zeros((r, d + 1))
    UB[0] = row
    V = np.zeros((d, r))
    V[0, 0] = nu_V
    h = V @ np.maximum(UB @ ub, 0.0)
    bound = FULL.output_bound({"nu_V": nu_V, "nu_U": nu_U, "rho": rho})
    assert np.linalg.norm(h) == pytest.approx(bound, rel=1e-12)
    UBs = rng.normal(size=(500, r, d + 1))
    UBs *= nu_U / np.linalg.norm(UBs, axis=(1, 2))[:, None, None]
    Vs = rng.normal(size=(500, d, r))
    Vs *= nu_V / np.linalg.norm(Vs, axis=(1, 2))[:, None, None]
    hs = np.einsum("kdr,kr->kd", Vs, np.maximum(UBs @ ub, 0.0))
    assert np.max(np.linalg.norm(hs, axis=1)) <= bound * (1 + 1e-12)
    assert block_output_bound("full", {"nu_V": nu_V, "nu_U": nu_U, "rho": rho}) == bound


def test_rademacher_bounds_are_the_families_and_the_readout_one_dominates_a_monte_carlo():
    for name, fam in RESIDUAL_FAMILIES.items():
        assert sp.simplify(rad_vec_closed_form(name, s.M) - fam.rad_vec(s.M)) == 0
    # readout: E sup_{||V||_F <= nu} (1/n) sum_i <s_i, V phi_i> = (nu/n) E ||sum_i s_i phi_i^T||_F, by Monte Carlo
    rng = np.random.default_rng(2)
    n, d, r, nu, rho_phi = 200, 3, 5, 0.8, 1.3
    phi = rng.normal(size=(n, r))
    phi *= rho_phi / np.linalg.norm(phi, axis=1, keepdims=True)
    signs = rng.choice([-1.0, 1.0], size=(400, n, d))
    mc = nu / n * np.mean(np.linalg.norm(np.einsum("knd,nr->kdr", signs, phi), axis=(1, 2)))
    bound = float(READOUT.rad_vec(s.n).subs({s.nu_V: nu, s.d: d, s.rho_phi: rho_phi, s.n: n}))
    assert mc <= bound and mc > 0.9 * bound     # nearly tight for features on the sphere


def test_unknown_family_and_bad_caps_are_named():
    with pytest.raises(InputError, match="block.family"):
        residual_family("linear")
    with pytest.raises(InputError, match="block.rho_phi is missing|block.rho_phi =="):
        READOUT.output_bound({"nu_V": 1.0})
    with pytest.raises(InputError, match="block.nu_U == -1.0"):
        FULL.output_bound({"nu_V": 1.0, "nu_U": -1.0, "rho": 0.0})
    with pytest.raises(ValueError, match="family == 'bogus'"):
        rad_vec_closed_form("bogus")


def test_bounds_families_import_without_torch():
    code = "import sys, bounds.families, bounds.parameters, bounds.loss; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_run_registry_has_the_same_names_and_the_routes_each_family_can_evaluate():
    from bounds._variant_inputs import ROUTE_NAMES
    from numerics.families import FAMILIES, PROTOCOL_FAMILIES
    from numerics.insertion import CERTIFIED_FAMILIES, SCAN_ONLY_FAMILIES
    from numerics.insertion import FAMILIES as INSERTION_FAMILIES
    from numerics.studies.run._family import RUN_FAMILIES, run_family

    assert set(RUN_FAMILIES) == set(RESIDUAL_FAMILIES) == set(CERTIFIED_FAMILIES)
    assert all(RUN_FAMILIES[n].math is RESIDUAL_FAMILIES[n] for n in RUN_FAMILIES)
    assert RUN_FAMILIES["readout"].routes == ROUTE_NAMES                      # every route has its inputs
    assert RUN_FAMILIES["full"].routes == ("population_route", "direct_route", "population_tight_hoeffding",
                                           "direct_tight_hoeffding")          # no variances, no sign Monte Carlo
    assert INSERTION_FAMILIES == ("readout", "full", "linear") and SCAN_ONLY_FAMILIES == ("linear",)
    assert FAMILIES is PROTOCOL_FAMILIES and "full" not in PROTOCOL_FAMILIES  # Paper B's protocol families
    with pytest.raises(InputError, match="insertion.family"):
        run_family("linear")
