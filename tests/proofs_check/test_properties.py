"""Hypothesis properties: on random linear chains the two engines agree; the parser round-trips."""
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from proofs_check import _smt, parse_expression, parse_relation
from proofs_check._verify import farkas_check, z3_check

VARS = ("a", "b", "c", "d")
coef = st.integers(-3, 3)
linear = st.tuples(st.lists(coef, min_size=len(VARS), max_size=len(VARS)), st.integers(-4, 4))


def _text(lin) -> str:
    coeffs, const = lin
    return " + ".join([f"({k})*{v}" for k, v in zip(coeffs, VARS) if k] + [f"({const})"])


@st.composite
def chains(draw):
    premises = draw(st.lists(st.tuples(linear, st.sampled_from(["<=", "<", "="])), min_size=1, max_size=4))
    texts = [f"{_text(lin)} {op} 0" for lin, op in premises]
    if draw(st.booleans()):  # derived: a non-negative combination of the inequalities, plus slack
        weights = [draw(st.integers(0, 3)) for _ in premises]
        expr = sum((w * parse_expression(_text(lin)) for w, (lin, op) in zip(weights, premises) if op != "="),
                   sp.Integer(0))
        return texts, sp.Le(expr - draw(st.integers(0, 3)), 0), True
    lin, op = draw(linear), draw(st.sampled_from(["<=", "<", "="]))
    return texts, parse_relation(f"{_text(lin)} {op} 0"), False


@given(chains())
def test_farkas_and_z3_agree(chain):
    texts, conclusion, derived = chain
    rels = [parse_relation(t) for t in texts]
    farkas = farkas_check("p", [(f"p{i}", r) for i, r in enumerate(rels)], conclusion)
    smt = z3_check("p", "entailment/z3", rels, conclusion, timeout_s=5)
    assert smt.status in ("PASS", "FAIL")
    assert (farkas.status in ("PASS", "FINDING")) == (smt.status == "PASS"), (texts, conclusion, farkas, smt)
    if derived:
        assert smt.status == "PASS"
    if smt.status == "FAIL":
        assert _smt.confirm(smt.countermodel, rels, conclusion)


SYMS = {v: sp.Symbol(v, real=True) for v in VARS}
leaf = st.one_of(st.sampled_from(VARS).map(lambda v: (v, SYMS[v])),
                 st.integers(0, 9).map(lambda k: (str(k), sp.Integer(k))))
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_FUNCS = {"exp": sp.exp, "sqrt": sp.sqrt}


def _expr(children):
    """(text, sympy expression) pairs: the reference tree is built directly, never parsed."""
    binary = st.tuples(children, st.sampled_from(sorted(_OPS)), children).map(
        lambda t: (f"({t[0][0]} {t[1]} {t[2][0]})", _OPS[t[1]](t[0][1], t[2][1])))
    power = st.tuples(children, st.integers(0, 3), st.sampled_from(["^", "**"])).map(
        lambda t: (f"({t[0][0]}){t[2]}{t[1]}", t[0][1] ** t[1]))
    func = st.tuples(st.sampled_from(sorted(_FUNCS)), children).map(
        lambda t: (f"{t[0]}({t[1][0]})", _FUNCS[t[0]](t[1][1])))
    return st.one_of(binary, power, func)


@given(st.recursive(leaf, _expr, max_leaves=8))
def test_parser_matches_sympy_construction(pair):
    text, reference = pair
    parsed = parse_expression(text)
    assert parsed.free_symbols <= set(SYMS.values())
    assert sp.simplify(parsed - reference) == 0
