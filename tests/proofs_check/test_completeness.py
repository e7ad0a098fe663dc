"""Completeness on the bounds users write (issue 7).

* badly scaled / tiny coefficients never lose a Farkas certificate, and an LP "no" never
  outvotes an exact proof (linear chains are decided in exact rational arithmetic);
* exp and log: strict monotonicity, exp(log y) = y, log(exp x) = x, exp(x) >= 1 + x,
  log y <= y - 1, log of products and powers, rigorous enclosures of constant subterms.

Certificates are re-checked here with sympy, independently of the Farkas code.
"""
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from proofs_check import parse_chain, parse_relation
from proofs_check._verify import farkas_check, z3_check

T3_PREMISES = ["Lnew <= Rnew + epsK", "Rnew <= RSnew + epsM", "RSnew = RSjump - dERM", "RSjump <= Rjump + epsM",
               "Rjump <= Ljump + epsK", "Ljump = Lold - dT"]
T3_ASSUME = ["epsM >= 0", "epsK >= 0", "dERM >= 0"]


def _form(rel):
    """``rel`` as ``f op 0`` with ``op`` in <=, <, == (hand-written, independent of proofs_check._linear)."""
    if isinstance(rel, (sp.GreaterThan, sp.StrictGreaterThan)):
        return rel.rhs - rel.lhs, "<" if isinstance(rel, sp.StrictGreaterThan) else "<="
    return rel.lhs - rel.rhs, {sp.LessThan: "<=", sp.StrictLessThan: "<", sp.Equality: "=="}[type(rel)]


def _check_certificate(texts: dict, conclusion: str, certificate: dict):
    """conclusion_form = sum m_j form_j + k with k a constant <= 0 (< 0 or a strict premise used if strict)."""
    forms = {label: _form(parse_relation(t)) for label, t in texts.items()}
    f, op = _form(parse_relation(conclusion))
    total, strict_used = sp.Integer(0), False
    for label, m in certificate.items():
        m = sp.Rational(m)
        g, gop = forms[label]
        assert gop == "==" or m >= 0, (label, m)
        total += m * g
        strict_used |= gop == "<" and m > 0
    k = sp.expand(f - total)
    assert k.is_Rational, f"certificate leaves non-constant remainder {k}"
    assert k <= 0 and (op != "<" or k < 0 or strict_used), (k, op)


def _labelled(premises, assume):
    return {**{f"premises[{i}]": t for i, t in enumerate(premises)}, **{f"assume[{i}]": t for i, t in enumerate(assume)}}


SCALED = [
    # the three examples
    (T3_ASSUME + ["dT + dERM >= 2*(epsM + epsK) + 1e-9"], T3_PREMISES, "Lnew < Lold"),
    ([], ["x <= y - 1e-30"], "x < y"),
    ([], ["x <= 1e-12*y", "y <= 1e12*z"], "x <= z"),
    # our own: wider ranges, mixed scales, long products of scales
    ([], ["x <= y - 1e-300"], "x < y"),
    ([], ["x <= 1e-200*y", "y <= 1e200*z"], "x <= z"),
    ([], ["a <= 1e150*b + 1e-150", "b <= 1e-150*c"], "a <= c + 1e-150"),
    ([], [f"x{i} <= {'1e10' if i % 2 else '1e-10'}*x{i + 1}" for i in range(30)], "x0 <= x30"),
    (["e >= 0"], ["p <= q + 1e-25*e", "q <= r + 3e-25*e"], "p <= r + 4e-25*e"),
    ([], ["3e-17*u + 7e-17*v <= 1e-16", "u >= 1", "v >= 1e-300"], "u < 4"),
    (T3_ASSUME + ["dT + dERM >= 2*(epsM + epsK) + 1e-300"], T3_PREMISES, "Lnew < Lold"),
]


def test_scaled_chains_entailed_with_exact_certificates(run_chain):
    for assume, premises, conclusion in SCALED:
        code, out, _ = run_chain(premises, conclusion, assume)
        assert code == 0 and out["entailed"] is True and out["status"] == "entailed", (conclusion, out)
        assert out["engines"] == {"farkas": "PASS", "z3": "PASS"}, (conclusion, out["engines"])
        farkas = [c for c in out["checks"] if c["name"] == "entailment/farkas"][0]
        _check_certificate(_labelled(premises, assume), conclusion, farkas["certificate"])


def test_premise_domain_with_a_disequality_never_outvotes_z3(run_chain):
    """``y = x/x`` assumes ``x != 0`` (not a linear constraint): Farkas must not say "no" against z3."""
    code, out, _ = run_chain(["x >= 0", "y = x/x"], "x > 0")
    assert code == 0 and out["entailed"] is True and out["status"] == "entailed", out
    assert out["engines"]["z3"] == "PASS" and out["engines"]["farkas"] == "N/A"


def test_theorem3_object_with_a_tiny_margin():
    """The same through verify() on a theorem object (kept general for new bounds/ objects)."""
    from bounds import THEOREM_3
    from bounds import _symbols as s
    from proofs_check import verify

    margin = sp.Ge(s.delta_test_R + s.delta_erm, 2 * (s.eps_M + s.eps_K) + sp.Rational(1, 10**9))
    t = THEOREM_3.replace(name="t3_tiny_margin", conclusion=sp.Lt(s.L_test_new, s.L_test_old),
                          side_conditions=THEOREM_3.side_conditions + (margin,))
    r = verify(t)
    assert r.engines == {"farkas": "PASS", "z3": "PASS"}
    assert not [c for c in r.checks if c.name == "entailment/agreement"]


# ---- random linear chains over a huge dynamic range: the engines agree -------------------
VARS = ("a", "b", "c", "d")
scale = st.sampled_from(["1e-40", "1e-20", "1e-9", "1", "1e9", "1e20", "1e40"])
coef = st.tuples(st.integers(-3, 3), scale)
linear = st.tuples(st.lists(coef, min_size=len(VARS), max_size=len(VARS)), st.tuples(st.integers(-4, 4), scale))


def _text(lin) -> str:
    coeffs, (k, s) = lin
    return " + ".join([f"({c}*{e})*{v}" for (c, e), v in zip(coeffs, VARS) if c] + [f"({k}*{s})"])


@st.composite
def scaled_chains(draw):
    premises = draw(st.lists(st.tuples(linear, st.sampled_from(["<=", "<", "="])), min_size=1, max_size=4))
    texts = [f"{_text(lin)} {op} 0" for lin, op in premises]
    rels = [parse_relation(t) for t in texts]
    weights = [draw(st.sampled_from([0, 1, 3, sp.Rational(1, 10**30), 10**25])) for _ in premises]
    expr = sum((w * (r.lhs - r.rhs) for w, r, (_, op) in zip(weights, rels, premises) if op != "="), sp.Integer(0))
    slack = draw(st.sampled_from([0, sp.Rational(1, 10**35), 1]))
    return rels, sp.Le(expr - slack, 0)


@given(scaled_chains())
def test_badly_scaled_derived_conclusions_are_entailed_by_both(chain):
    rels, conclusion = chain
    farkas = farkas_check("p", [(f"p{i}", r) for i, r in enumerate(rels)], conclusion)
    smt = z3_check("p", "entailment/z3", rels, conclusion, timeout_s=5)
    assert smt.status == "PASS", (rels, conclusion, smt)
    assert farkas.status in ("PASS", "FINDING"), (rels, conclusion, farkas)


# ---- exp and log ---------------------------------------------------------------------------
EXP_LOG = [
    # the two examples
    (["0 < delta", "delta < 1"], ["X >= log(2/delta)"], "2*exp(-X) <= delta"),
    ([], ["K*t2 > K*t1", "K*t1 > 0"], "exp(-K*t2) < exp(-K*t1)"),
    # constant subterms: rigorous enclosures
    ([], ["x <= log(40)"], "x < 3.7"),
    ([], [], "exp(1) <= 2.7182818284591"),
    ([], [], "log(6) = log(2) + log(3)"),
    ([], ["y = exp(2)"], "y > 7.389"),
    # monotonicity (strict), exp(log y) = y, log(exp x) = x, the tangent bounds
    ([], ["a < b"], "exp(a) < exp(b)"),
    (["x > 0"], ["log(x) < log(y)"], "x < y"),
    (["y > 0"], ["x <= log(y)"], "exp(x) <= y"),
    ([], ["y = exp(x)"], "log(y) = x"),
    ([], [], "exp(x) >= 1 + x"),
    (["y > 0"], [], "log(y) <= y - 1"),
    ([], ["x > 0"], "exp(x) > 1"),
    (["0 < y", "y < 1"], [], "log(y) < 0"),
    # products, quotients and powers inside log; sums inside exp
    (["delta > 0"], [], "log(2/delta) = log(2) - log(delta)"),
    (["x > 0", "y > 0"], [], "log(x*y) = log(x) + log(y)"),
    (["x > 0"], [], "log(x^2) = 2*log(x)"),
    (["x > 0"], [], "log(sqrt(x)) = log(x)/2"),
    ([], [], "exp(a)*exp(b) = exp(a + b)"),
    ([], [], "exp(-X)*exp(X) = 1"),
    # a user's sample-size bound: K >= log(2/delta)/c  =>  2 exp(-c K) <= delta
    (["c > 0", "0 < delta", "delta < 1"], ["c*K >= log(2/delta)"], "2*exp(-c*K) <= delta"),
]


def test_exp_log_chains_are_entailed(run_chain):
    failures = []
    for assume, premises, conclusion in EXP_LOG:
        code, out, _ = run_chain(premises, conclusion, assume)
        if not (code == 0 and out["entailed"] is True):
            failures.append((conclusion, out["status"], out.get("reason")))
    assert not failures, failures


def test_false_constant_claims_are_refuted(run_chain):
    for conclusion in ("log(40) < 3.688", "exp(1) <= 2.718281828459", "log(6) = log(2) + log(3) + 1e-30"):
        code, out, _ = run_chain([], conclusion)
        assert code == 1 and out["entailed"] is False and out["status"] == "not entailed", (conclusion, out)


def test_log_of_products_needs_positive_factors(run_chain):
    code, out, _ = run_chain([], "log(x*y) = log(x) + log(y)")
    assert code == 1 and out["entailed"] is False
    m = {k: sp.sympify(v) for k, v in out["countermodel_exact"].items()}
    assert m["x"] <= 0 or m["y"] <= 0


def test_exp_log_chain_through_the_api():
    chain = parse_chain({"assume": ["0 < delta", "delta < 1"], "premises": ["X >= log(2/delta)"],
                         "conclusion": "2*exp(-X) <= delta"})
    from proofs_check import check_chain

    r = check_chain(chain)
    assert r.entailed is True and r.engines["z3"] == "PASS" and r.vacuous is False
