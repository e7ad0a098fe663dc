"""Regression tests: ill-defined conclusions, nested powers, huge constants, bad timeouts."""
import json

import pytest

from depthcert.cli import main


def _chain(tmp_path, premises, conclusion, name="c"):
    p = tmp_path / f"{name}.toml"
    p.write_text(f'name = "{name}"\nassume = []\npremises = {json.dumps(premises)}\nconclusion = {json.dumps(conclusion)}\n')
    return str(p)


@pytest.mark.parametrize("premises,conclusion", [
    (["Lnew <= Lold + 1"], "Lnew + log(-1-z^2) <= Lold - 100 + log(-1-z^2)"),   # log of a negative quantity
    ([], "sqrt(-1-x^2) >= 5"),                                                   # sqrt of a negative quantity
    (["x >= 1"], "1/(x - 1) >= 0"),                                             # undefined at x = 1
])
def test_ill_defined_conclusion_is_not_entailed(tmp_path, capsys, premises, conclusion):
    assert main(["prove", "--chain", _chain(tmp_path, premises, conclusion), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["entailed"] is False and out["countermodel"] is not None


def test_well_defined_sqrt_chain_is_still_entailed(tmp_path, capsys):
    path = _chain(tmp_path, ["x >= 4"], "sqrt(x) >= 2")
    assert main(["prove", "--chain", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entailed"] is True


@pytest.mark.parametrize("conclusion,message", [
    ("x <= ((((((3^64)^64)^64)^64)^64)^64)", "number too large"),
    ("x <= (((x^64)^64)^64)^64", "combined exponent"),
])
def test_nested_powers_are_rejected_quickly(tmp_path, capsys, conclusion, message):
    assert main(["prove", "--chain", _chain(tmp_path, ["y <= 1"], conclusion)]) == 2
    err = capsys.readouterr().err
    assert message in err and "column" in err and len(err.strip().splitlines()) == 1


def test_huge_constants_do_not_crash(tmp_path, capsys):
    path = _chain(tmp_path, ["x <= 1e300*1e300"], "x <= 1e300*1e300 + 1")
    assert main(["prove", "--chain", path]) == 0
    assert "ENTAILED" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_timeout_must_be_finite_and_positive(capsys, value):
    assert main(["prove", "--timeout", value]) == 2
    assert "--timeout ==" in capsys.readouterr().err


def test_engine_disagreement_is_not_entailment():
    from proofs_check._results import Check
    from proofs_check._verify import _agreement

    farkas = Check("c", "entailment/farkas", "FAIL", "farkas-lp+exact")
    smt = Check("c", "entailment/z3", "PASS", "z3")
    assert _agreement("c", farkas, smt)[0].status == "FAIL"
    assert _agreement("c", Check("c", "entailment/farkas", "N/A", "farkas-lp+exact"), smt) == []
