"""User chains: TOML validation, entailment, countermodels, non-linear chains, vacuity."""
import pytest

from plumbing.validation import InputError
from proofs_check import ChainSyntaxError, check_chain, load_chain, parse_chain


def _chain(**kw):
    base = {"assume": ["e >= 0"], "premises": ["a <= b + e", "b <= c + e"], "conclusion": "a <= c + 2*e"}
    return parse_chain({**base, **kw})


def test_linear_chain_entailed_with_certificate():
    r = check_chain(_chain())
    assert r.entailed and r.status == "entailed" and r.countermodel is None
    assert r.engines == {"farkas": "PASS", "z3": "PASS"}
    cert = [c for c in r.checks if c.name == "entailment/farkas"][0].certificate
    assert cert == {"premises[0]": "1", "premises[1]": "1"}


def test_wrong_chain_gives_countermodel():
    r = check_chain(_chain(conclusion="a <= c + e"))
    assert not r.entailed and r.status == "not entailed"
    cm = {k: float(v) for k, v in r.countermodel.items()}
    assert cm["e"] >= 0 and cm["a"] <= cm["b"] + cm["e"] and cm["b"] <= cm["c"] + cm["e"]
    assert cm["a"] > cm["c"] + cm["e"]


def test_sign_must_be_assumed():
    """Without ``e >= 0`` the chain does not entail ``a <= c + 2e`` ... it does; but ``a <= c + 3e`` needs it."""
    assert check_chain(_chain(conclusion="a <= c + 3*e")).entailed
    assert not check_chain(_chain(assume=[], conclusion="a <= c + 3*e")).entailed


def test_nonlinear_chain_goes_to_z3():
    chain = parse_chain({"assume": ["x >= 1", "y >= 0"], "premises": ["z <= x^2*y"], "conclusion": "z <= x^3*y"})
    r = check_chain(chain)
    assert r.entailed and r.engines == {"farkas": "N/A", "z3": "PASS"}
    bad = parse_chain({"assume": ["x >= 0", "y >= 0"], "premises": ["z <= x^2*y"], "conclusion": "z <= x^3*y"})
    r = check_chain(bad)
    assert not r.entailed and r.engines["z3"] == "FAIL"
    cm = {k: float(v) for k, v in r.countermodel.items()}
    assert cm["z"] <= cm["x"] ** 2 * cm["y"] + 1e-12 and cm["z"] > cm["x"] ** 3 * cm["y"]


def test_sqrt_and_exp_chains():
    ok = parse_chain({"assume": ["x >= 0"], "premises": ["y = sqrt(x)"], "conclusion": "y >= 0"})
    assert check_chain(ok).entailed
    mono = parse_chain({"premises": ["z <= exp(x)"], "conclusion": "z <= exp(x + 1)"})
    assert check_chain(mono).entailed
    wrong = parse_chain({"premises": ["z <= exp(x + 1)"], "conclusion": "z <= exp(x)"})
    r = check_chain(wrong)
    assert not r.entailed and r.countermodel is not None


def test_superfluous_premise_is_a_finding_and_vacuous_chain_is_not_entailed():
    r = check_chain(_chain(premises=["a <= b + e", "b <= c + e", "q <= 1"]))
    assert r.entailed
    assert [c.status for c in r.checks if c.name == "necessity/premises[2]"] == ["FINDING"]
    # issue 7: a vacuous chain is not a useful certificate (it used to be "entailed" with a FINDING)
    vac = check_chain(parse_chain({"premises": ["x <= 0", "x >= 1"], "conclusion": "y <= 0"}))
    assert vac.entailed is False and vac.vacuous is True and vac.status == "vacuous"
    assert vac.inconsistent_premises == ("premises[0]", "premises[1]")
    assert [c.status for c in vac.checks if c.name == "consistency"] == ["FAIL"]


@pytest.mark.parametrize("data, key", [
    ({"premises": ["a <= b"]}, "conclusion"),
    ({"conclusion": "a <= b"}, "premises"),
    ({"premises": "a <= b", "conclusion": "a <= b"}, "premises"),
    ({"premises": ["a <= b"], "conclusion": 3}, "conclusion"),
    ({"premises": ["a <= b"], "conclusion": "a <= b", "extra": 1}, "extra"),
    ({"premises": ["a <= b"], "conclusion": "a <= b", "name": 5}, "name"),
])
def test_bad_keys_name_the_key(data, key):
    with pytest.raises(InputError) as info:
        parse_chain(data)
    assert info.value.key == key and key in str(info.value)


def test_syntax_error_names_the_formula():
    with pytest.raises(ChainSyntaxError, match=r"premises\[1\]: unexpected character '@' at column 3"):
        parse_chain({"premises": ["a <= b", "a @ b"], "conclusion": "a <= b"})


def test_load_chain_errors(tmp_path):
    with pytest.raises(InputError, match="readable TOML"):
        load_chain(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("premises = [\n", encoding="utf-8")
    with pytest.raises(InputError, match="valid TOML"):
        load_chain(bad)


def test_example_chains_load():
    from pathlib import Path

    files = sorted(Path(__file__).parents[2].joinpath("examples", "chains").glob("*.toml"))
    assert len(files) >= 3
    results = {f.stem: check_chain(load_chain(f)).entailed for f in files}
    assert results["population_route"] and not results["population_route_wrong"]
    assert results["descent_lemma"]


def test_unknown_z3_answer_is_not_entailed(monkeypatch):
    from proofs_check import _smt

    real = _smt.Problem.check

    def unknown_on_goal(self, active=None, goal=True, confirm=True):
        if goal:
            return _smt.SmtOutcome("unknown", {}, False, "timeout")
        return real(self, active, goal, confirm)

    monkeypatch.setattr(_smt.Problem, "check", unknown_on_goal)
    chain = parse_chain({"premises": ["z <= x^2*y"], "conclusion": "z <= x^3*y"})
    r = check_chain(chain, timeout_s=0.01)
    assert r.status == "unknown" and r.entailed is None and r.countermodel is None and "timeout" in r.reason
