"""The two engines on small hand-made systems (strict, equality, irrational, tampered certificates)."""
import pytest
import sympy as sp

from proofs_check import _farkas, _linear, _smt
from proofs_check._verify import farkas_check

x, y = sp.symbols("x y", real=True)


def _constraints(*rels):
    return [c for i, r in enumerate(rels) for c in _linear.to_constraints(r, f"p{i}")]


def test_linear_form_over_monomials():
    coeffs, const = _linear.linear_form(3 * x * (y - 1) + 2 + sp.exp(x + y))
    assert coeffs == {x * y: 3, x: -3, sp.exp(x + y): 1} and const == 2


def test_strict_conclusion_needs_strict_premise():
    assert farkas_check("s", [("p", x < y)], x < y).status == "PASS"
    assert farkas_check("s", [("p", x <= y)], x < y).status == "FAIL"
    assert farkas_check("s", [("p", x <= y - 1)], x < y).status == "PASS"


def test_equality_conclusion_needs_both_directions():
    assert farkas_check("s", [("p", sp.Eq(x, 2 * y)), ("q", sp.Eq(y, 1))], sp.Eq(x, 2)).status == "PASS"
    assert farkas_check("s", [("p", x <= 2 * y), ("q", sp.Eq(y, 1))], sp.Eq(x, 2)).status == "FAIL"


def test_irrational_coefficients_verify_exactly():
    c = farkas_check("s", [("p", x <= sp.sqrt(2) * y), ("q", y <= 1)], x <= sp.sqrt(2))
    assert c.status == "PASS" and c.certificate == {"p": "1", "q": "sqrt(2)"}


def test_tampered_certificate_is_rejected_exactly():
    cons = _constraints(x <= y, y <= 1) + _linear.negate(x <= 1)[0]
    assert _farkas._exact_check(cons, [sp.Integer(1), sp.Integer(1), sp.Integer(1)]) == ""
    assert "coefficient of" in _farkas._exact_check(cons, [sp.Rational(1, 2), sp.Integer(1), sp.Integer(1)])
    assert "negative multiplier" in _farkas._exact_check(cons, [sp.Integer(-1), sp.Integer(1), sp.Integer(1)])


def test_z3_sqrt_and_power_encodings():
    assert _smt.entails([sp.Eq(y, sp.sqrt(x))], y >= 0).status == "unsat"
    assert _smt.entails([sp.Eq(y, sp.sqrt(x))], y * y <= x).status == "unsat"
    assert _smt.entails([x > 0, sp.Eq(y, 1 / x)], x * y <= 1).status == "unsat"
    out = _smt.entails([x >= 0], x**2 <= x)
    assert out.status == "sat" and out.countermodel["x"] > 1


def test_z3_untranslatable_is_reported():
    with pytest.raises(_smt.Untranslatable):
        _smt.entails([x <= sp.sin(y)], x <= 1)


def test_confirm_rejects_a_fake_countermodel():
    from fractions import Fraction

    point = {"x": Fraction(2), "y": Fraction(1)}
    assert _smt.confirm(point, [x >= y], x <= y) is True     # a real countermodel
    assert _smt.confirm(point, [x >= y], x <= 3) is False    # conclusion holds there
    assert _smt.confirm(point, [x <= y], x <= 1) is False    # a premise fails there


def test_expansion_blowup_is_refused_not_attempted():
    big = ((x + y) * (x - y) + 1) ** 40
    assert _linear.expanded_size(big) > _linear.MAX_TERMS
    with pytest.raises(_linear.TooLarge):
        _linear.linear_form(big)
    c = farkas_check("s", [("p", x <= big)], x <= big + 1)
    assert c.status == "N/A" and "terms" in c.detail


def test_aux_names_do_not_collide_with_user_symbols():
    """A user symbol called like an auxiliary root must stay a separate unknown."""
    r0 = sp.Symbol("_root0", real=True)
    out = _smt.entails([sp.Eq(y, sp.sqrt(x)), r0 >= 5], y >= 5)
    assert out.status == "sat"
