"""Loss constants (THEORY §1) and generalisation costs (THEORY §4)."""
import math

import numpy as np
import pytest
import sympy as sp

from bounds import _symbols as s
from plumbing.validation import InputError
from bounds.generalisation import eps_expression, eps_value, rad_loss, rad_vec_closed_form
from bounds.loss import cross_entropy_constants, post_norm_radius, squared_loss_constants


def test_cross_entropy_constants_by_hand():
    B, L = cross_entropy_constants(3, [1.0, 2.0, 0.5], [0.1, -0.3, 0.0], rho=2.0)
    assert B == pytest.approx(math.log(3) + 2 * (2.0 * 2.0 + 0.3))
    assert L == pytest.approx(math.sqrt(2))


def test_squared_constants_by_hand():
    assert squared_loss_constants(2.0, 1.0) == (9.0, 6.0)


def test_post_norm_radius():
    assert post_norm_radius(1.5, 9, bias_norm=0.5) == pytest.approx(5.0)


@pytest.mark.parametrize("call", [
    lambda: cross_entropy_constants(1, [1.0], [0.0], 1.0),
    lambda: cross_entropy_constants(2, [1.0, -1.0], [0.0, 0.0], 1.0),
    lambda: cross_entropy_constants(2, [1.0, 1.0], [0.0, 0.0], float("nan")),
    lambda: squared_loss_constants(-1.0, 1.0),
    lambda: squared_loss_constants(0.0, 0.0),
])
def test_loss_constants_reject_bad_input(call):
    with pytest.raises(InputError):
        call()


def test_rademacher_closed_forms():
    assert rad_vec_closed_form("readout", s.M) == s.nu_V * sp.sqrt(s.d) * s.rho_phi / sp.sqrt(s.M)
    full = rad_vec_closed_form("full", s.M).subs({s.d: 2, s.rho: 1, s.nu_U: 1, s.nu_V: 1, s.M: 4})
    assert float(full) == pytest.approx(2 * math.sqrt(2) * (math.sqrt(4 * math.log(2)) + 1) / 2)
    assert rad_loss(sp.Integer(1)) == sp.sqrt(2) * s.L_loss * s.L_top
    with pytest.raises(ValueError, match="family == 'wide'"):
        rad_vec_closed_form("wide")


def test_empirical_and_grid_variants():
    emp = eps_expression("readout", s.M, s.delta, empirical=True)
    assert emp.has(s.rad_hat) and not emp.has(s.rho_phi)
    assert sp.simplify(emp - (2 * sp.sqrt(2) * s.L_loss * s.L_top * s.rad_hat
                              + 3 * s.B * sp.sqrt(sp.log(4 / s.delta) / (2 * s.M)))) == 0
    grid = eps_expression("readout", s.M, s.delta, grid=True)
    assert sp.simplify(grid.subs(s.n_grid, 1) - eps_expression("readout", s.M, s.delta)) == 0
    params = dict(B=1.0, L_loss=1.0, L_top=1.0, d=4, rho_phi=1.0, nu_V=1.0, n_grid=10)
    v1 = eps_value("readout", 100, 0.05, params, grid=True)
    v0 = eps_value("readout", 100, 0.05, {**params, "n_grid": 1}, grid=True)
    assert v1 > v0   # paying for 10 caps costs confidence


def test_eps_value_is_vectorised():
    params = dict(B=1.0, L_loss=1.0, L_top=1.0, d=4, rho_phi=1.0, nu_V=1.0)
    n = np.array([10.0, 100.0, 1000.0])
    out = eps_value("readout", n, 0.05, params)
    assert out.shape == (3,) and np.all(np.diff(out) < 0)
    np.testing.assert_allclose(out * np.sqrt(n), out[0] * np.sqrt(10.0))   # exact 1/sqrt(n) scaling
