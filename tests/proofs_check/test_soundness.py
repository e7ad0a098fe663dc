"""Soundness (issue 7): never ENTAILED for a chain that is not valid.

* the domain of every sqrt/log/division/power is read from the text as written, before
  sympy simplifies it away; the conclusion's domain is part of the goal, the premises'
  domains are assumptions;
* contradictory premises are reported as a vacuous chain (exit 1) naming a minimal
  inconsistent subset;
* a printed countermodel is confirmed in exact / rigorous arithmetic, otherwise the
  verdict is UNKNOWN (``entailed: null``).

Every expected value comes from a hand-written check (plain Python, sympy's exact
comparisons), never from the checker itself.
"""
from fractions import Fraction

import pytest
import sympy as sp



def _exact(out) -> dict:
    """The countermodel as exact sympy numbers from its exact strings (``"-3/2"``, ``"log(9/2)"``).

    The hand-written checks below compare them with sympy's exact comparisons (a boundary
    point such as ``x = log(y)`` is decided exactly: ``exp(log(1/3)) = 1/3``)."""
    assert out["countermodel_exact"] is not None
    return {k: sp.sympify(v) for k, v in out["countermodel_exact"].items()}


# conclusion, the assumption that makes it well defined, the domain as written (a hand-written predicate)
DOMAIN_DROPPED = [
    ("sqrt(v)^2 <= v", "v >= 0", lambda m: m["v"] >= 0),                 # the example
    ("exp(log(K)) = K", "K > 0", lambda m: m["K"] > 0),                   # the example
    ("x/x = 1", "x > 0", lambda m: m["x"] != 0),
    ("x^2/x = x", "x > 0", lambda m: m["x"] != 0),
    ("1/(1/x) = x", "x > 0", lambda m: m["x"] != 0),
    ("(x - 1)/(x - 1) = 1", "x > 1", lambda m: m["x"] != 1),
    ("(x^(1/4))^4 = x", "x >= 0", lambda m: m["x"] >= 0),
    ("sqrt(x)*sqrt(x) = x", "x >= 0", lambda m: m["x"] >= 0),
    ("log(x) - log(x) = 0", "x > 0", lambda m: m["x"] > 0),
    ("0*log(x) = 0", "x > 0", lambda m: m["x"] > 0),
    ("0*sqrt(x) <= 0", "x >= 0", lambda m: m["x"] >= 0),
    ("log(x)^0 = 1", "x > 0", lambda m: m["x"] > 0),
    ("exp(2*log(x)) = x^2", "x > 0", lambda m: m["x"] > 0),
    ("log(x^2) = 2*log(x)", "x > 0", lambda m: m["x"] > 0),
]


@pytest.mark.parametrize("conclusion, assumption, domain", DOMAIN_DROPPED, ids=[c for c, _, _ in DOMAIN_DROPPED])
def test_domain_as_written_is_part_of_the_goal(run_chain, conclusion, assumption, domain):
    code, out, _ = run_chain([], conclusion)
    assert code == 1 and out["entailed"] is False and out["status"] == "not entailed", out
    inside = bool(domain(_exact(out)))
    assert not inside, f"countermodel {out['countermodel_exact']} lies inside the domain"
    code, out, _ = run_chain([], conclusion, [assumption])
    assert code == 0 and out["entailed"] is True, out


@pytest.mark.parametrize("premise, conclusion", [
    ("y = log(x) - log(x)", "x > 0"),       # sympy cancels the logs; x > 0 was written
    ("y = sqrt(x)^2", "x >= 0"),
    ("y = x/x", "x^2 > 0"),                 # x != 0 was written
    ("y = 0*sqrt(1 - x)", "x <= 1"),
])
def test_premise_domain_is_an_assumption(run_chain, premise, conclusion):
    code, out, _ = run_chain([premise], conclusion)
    assert code == 0 and out["entailed"] is True, out


VACUOUS = [
    # assume, premises, conclusion, the minimal inconsistent subset (worked out by hand)
    (["dR >= 0"], ["Lnew <= Lold - dR/2", "dR = -1/10"], "Lnew <= Lold", {"assume[0]", "premises[1]"}),
    ([], ["x <= y", "q >= 0", "y <= z", "w = 2", "z <= x - 1"], "q <= 5", {"premises[0]", "premises[2]", "premises[4]"}),
    ([], ["x < y", "y < x", "x = 3"], "x >= 4", {"premises[0]", "premises[1]"}),
    (["e >= 0", "e <= -1", "f >= 0", "f <= -1"], ["a <= b"], "a <= b + 1", None),   # two cores: either is minimal
    ([], ["exp(x) <= 0"], "x >= 1", {"premises[0]"}),                # exp(x) > 0
    (["t > 0"], ["log(t) >= t"], "t <= 0", {"premises[0]"}),        # log t <= t - 1 (t > 0 is written)
    ([], ["a = sqrt(-1 - x^2)"], "a >= 7", {"premises[0]"}),        # the written domain is empty
    ([], ["y = log(1 - x^2 - 1)"], "y = 5", {"premises[0]"}),        # log of -x^2 needs -x^2 > 0
]


@pytest.mark.parametrize("assume, premises, conclusion, core", VACUOUS, ids=[str(i) for i in range(len(VACUOUS))])
def test_contradictory_premises_are_vacuous(run_chain, assume, premises, conclusion, core):
    code, out, _ = run_chain(premises, conclusion, assume)
    assert code == 1 and out["vacuous"] is True and out["entailed"] is False and out["status"] == "vacuous", out
    named = set(out["inconsistent_premises"])
    if core is not None:
        assert named == core
    else:   # either minimal core of the fourth case
        assert named in ({"assume[0]", "assume[1]"}, {"assume[2]", "assume[3]"})
    assert all(label in out["reason"] for label in named)


def test_vacuous_chain_text_names_the_subset(tmp_path, capsys):
    from depthcert.cli import main
    from tests.proofs_check.conftest import write_chain

    path = write_chain(tmp_path, ["Lnew <= Lold - dR/2", "dR = -1/10"], "Lnew <= Lold", ["dR >= 0"])
    assert main(["prove", "--chain", path]) == 1
    text = capsys.readouterr().out
    assert "VACUOUS" in text and "assume[0]" in text and "premises[1]" in text


def test_consistent_chain_is_not_vacuous(run_chain):
    code, out, _ = run_chain(["a <= b", "b <= c"], "a <= c")
    assert code == 0 and out["vacuous"] is False and out["entailed"] is True


def test_theorem_with_contradiction_names_it():
    import sympy as sp

    from bounds import THEOREM_3, Premise
    from bounds import _symbols as s
    from proofs_check import verify

    bad = Premise("contradiction", sp.Le(s.eps_K, -1), "eps_K >= 0 is a side condition")
    r = verify(THEOREM_3.replace(premises=THEOREM_3.premises + (bad,)), necessity=False)
    assert r.check("consistency").status == "FAIL" and "contradiction" in r.check("consistency").detail
    assert not r.ok


# ---- countermodels are real, or the answer is UNKNOWN ------------------------------------
CONFIRMED = [
    # assume, premises, conclusion, hand-written premises, hand-written conclusion (sympy, exact)
    ([], ["z <= exp(x + 1)"], "z <= exp(x)",
     lambda m: m["z"] <= sp.exp(m["x"] + 1), lambda m: m["z"] <= sp.exp(m["x"])),
    (["0 < delta", "delta < 1"], ["X >= log(2/delta)"], "exp(-X) <= delta/4",
     lambda m: 0 < m["delta"] < 1 and m["X"] >= sp.log(2 / m["delta"]), lambda m: sp.exp(-m["X"]) <= m["delta"] / 4),
    (["y > 0"], ["x <= log(y)"], "exp(x) < y",
     lambda m: m["y"] > 0 and m["x"] <= sp.log(m["y"]), lambda m: sp.exp(m["x"]) < m["y"]),
    ([], ["a <= b"], "exp(a) < exp(b)",
     lambda m: m["a"] <= m["b"], lambda m: sp.exp(m["a"]) < sp.exp(m["b"])),
    (["x >= 0", "y >= 0"], ["z <= x^2*y"], "z <= x^3*y",
     lambda m: m["x"] >= 0 and m["y"] >= 0 and m["z"] <= m["x"] ** 2 * m["y"], lambda m: m["z"] <= m["x"] ** 3 * m["y"]),
]


@pytest.mark.parametrize("assume, premises, conclusion, hold, concl", CONFIRMED, ids=[c[2] for c in CONFIRMED])
def test_countermodels_are_confirmed(run_chain, assume, premises, conclusion, hold, concl):
    code, out, _ = run_chain(premises, conclusion, assume)
    assert code == 1 and out["entailed"] is False and out["status"] == "not entailed", out
    m = _exact(out)
    assert bool(hold(m)) and not bool(concl(m)), m


@pytest.mark.parametrize("assume, conclusion", [
    (["x >= 0"], "exp(x) >= 1 + x + x^2/2"),   # true (Taylor), beyond the tangent-line lemmas
    (["x >= 0"], "exp(x) > x^2"),               # true for x >= 0 (exp(x) - x^2 increases from 1)
    (["x > 0"], "log(x) <= 2*sqrt(x)"),          # true, beyond the lemmas
])
def test_unconfirmable_is_unknown_not_false(run_chain, assume, conclusion):
    code, out, _ = run_chain([], conclusion, assume, "--timeout", "2")
    assert code == 1 and out["entailed"] is None and out["status"] == "unknown", out
    assert out["reason"] and out["countermodel"] is None


def test_countermodel_beyond_float_range_has_exact_values(run_chain):
    code, out, _ = run_chain(["x >= 1e300*1e300"], "x <= 1")
    assert code == 1 and out["entailed"] is False
    exact = Fraction(out["countermodel_exact"]["x"])
    assert exact >= Fraction(10) ** 600
    assert out["countermodel"]["x"] is None   # not representable as a float: null beside the exact string
