"""The restricted grammar: correct sympy trees, clean rejections with positions, no Python evaluation."""
import pytest
import sympy as sp

from proofs_check import ChainSyntaxError, parse_expression, parse_relation

x, y, z = sp.symbols("x y z", real=True)


@pytest.mark.parametrize("text, expected", [
    ("x + 2*y", x + 2 * y),
    ("-x^2", -(x**2)),
    ("2^3^2", sp.Integer(512)),
    ("x**2 / (y + 1)", x**2 / (y + 1)),
    ("sqrt(x) + exp(-y) - log(z)", sp.sqrt(x) + sp.exp(-y) - sp.log(z)),
    ("1.5e-3 * x", sp.Rational(3, 2000) * x),
    ("x^(1/2)", sp.sqrt(x)),
    ("- - x", x),
    ("(x - y) * (x + y)", (x - y) * (x + y)),
])
def test_expressions(text, expected):
    assert sp.simplify(parse_expression(text) - expected) == 0


@pytest.mark.parametrize("text, cls", [("x <= y", sp.LessThan), ("x >= y", sp.GreaterThan), ("x < y", sp.StrictLessThan),
                                       ("x > y", sp.StrictGreaterThan), ("x = y", sp.Equality), ("x == y", sp.Equality)])
def test_relations(text, cls):
    rel = parse_relation(text)
    assert isinstance(rel, cls) and rel.lhs == x and rel.rhs == y


def test_names_are_plain_real_symbols():
    rel = parse_relation("E + pi + I + __class__ <= 0")
    assert {s.name for s in rel.free_symbols} == {"E", "pi", "I", "__class__"}
    assert all(s.is_real and s.is_positive is None for s in rel.free_symbols)


@pytest.mark.parametrize("text, column, fragment", [
    ("__import__('os') <= 1", 12, "unexpected character"),
    ("__import__(x) <= 1", 1, "unknown function '__import__'"),
    ("eval(x) <= 1", 1, "unknown function 'eval'"),
    ("x <= sin(y)", 6, "unknown function 'sin'"),
    ("x + <= y", 5, "unexpected '<='"),
    ("(x + y <= 1", 8, "')' closing the '(' of column 1"),
    ("x + y) <= 1", 6, "unexpected ')'"),
    ("x <= y <= z", 8, "chained comparisons"),
    ("x + y", 6, "expected a comparison"),
    ("x <= 2^y", 8, "exponent must be a numeric constant"),
    ("x <= 2^100000", 8, "outside"),
    ("x <= sqrt", 6, "needs an argument"),
    ("x.y <= 1", 2, "unexpected character '.'"),
    ("x <= 1/0", 7, "division by zero"),
    ("x; import os", 2, "unexpected character ';'"),
    ("x <= log(0)", 6, "zoo is not a finite real number"),
    ("x <= sqrt(-1)", 6, "I is not a finite real number"),
    ("x <= (-1)^(1/2)", 10, "not a finite real number"),
    ("x <=", 5, "unexpected end of formula"),
    ("", 1, "unexpected end of formula"),
    ("x <= 1e999", 6, "number exponent"),
])
def test_rejections_name_position(text, column, fragment):
    with pytest.raises(ChainSyntaxError) as info:
        parse_relation(text, key="premises[2]")
    err = info.value
    assert err.column == column, str(err)
    assert fragment in str(err)
    assert str(err).startswith("premises[2]: ") and f"at column {column}" in str(err)


def test_python_keywords_are_just_names():
    assert parse_relation("x <= lambda").rhs == sp.Symbol("lambda", real=True)
