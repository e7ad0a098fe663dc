"""``depthcert prove`` end to end: exit codes 0/1/2, JSON keys, rejected input, runtime."""
import json
import time

import pytest

from depthcert.cli import main

EXAMPLES = __import__("pathlib").Path(__file__).parents[2] / "examples" / "chains"


def test_prove_all_exit_zero_json(capsys):
    """Every theorem proved, every mutant rejected; the wall time is printed, not asserted (machine and load
    dependent)."""
    t0 = time.perf_counter()
    code = main(["prove", "--json"])
    seconds = time.perf_counter() - t0
    out = json.loads(capsys.readouterr().out)
    with capsys.disabled():
        print(f"\ndepthcert prove took {seconds:.1f} s")
    assert code == 0 and out["ok"] is True
    assert {t["theorem"] for t in out["theorems"]} >= {"theorem2_population_route", "theorem3_direct_route"}
    assert all(m["rejected"] for m in out["mutants"]) and len(out["mutants"]) >= 10
    rejected = [m for m in out["mutants"] if m["name"] == "t2_single_eps_M"][0]
    z3 = [c for c in rejected["result"]["checks"] if c["name"] == "entailment/z3"][0]
    assert z3["status"] == "FAIL" and isinstance(z3["countermodel"]["eps_M"], float)


def test_prove_exit_one_when_a_theorem_fails(monkeypatch, capsys):
    import proofs_check
    from proofs_check.mutants import mutant

    report = proofs_check.verify_all(theorems=(mutant("t3_single_eps").build(),), mutants=False, side_algebra=False)
    monkeypatch.setattr(proofs_check, "verify_all", lambda **kw: report)
    assert main(["prove"]) == 1
    text = capsys.readouterr().out
    assert "FAIL    entailment/z3" in text and "countermodel:" in text and "RESULT: FAILED" in text


def test_prove_text_report_lists_certificates(monkeypatch, capsys):
    import proofs_check
    from bounds import THEOREM_2

    report = proofs_check.verify_all(theorems=(THEOREM_2,), mutants=False, side_algebra=False)
    monkeypatch.setattr(proofs_check, "verify_all", lambda **kw: report)
    assert main(["prove"]) == 0
    text = capsys.readouterr().out
    assert "certificate: 1*[uniform_S_new]" in text and "RESULT: OK" in text


@pytest.mark.parametrize("name, code", [("population_route", 0), ("population_route_wrong", 1), ("descent_lemma", 0)])
def test_chain_exit_codes(capsys, name, code):
    assert main(["prove", "--chain", str(EXAMPLES / f"{name}.toml"), "--json"]) == code
    out = json.loads(capsys.readouterr().out)
    assert out["entailed"] is (code == 0)
    if code == 1:
        assert set(out["countermodel"]) >= {"Lnew", "Lold", "dR"}
        assert all(isinstance(v, float) for v in out["countermodel"].values())


def test_chain_text_prints_countermodel(capsys):
    assert main(["prove", "--chain", str(EXAMPLES / "population_route_wrong.toml")]) == 1
    out = capsys.readouterr().out
    assert "NOT ENTAILED" in out and "countermodel (premises hold, conclusion fails):" in out


def _write(tmp_path, text):
    p = tmp_path / "chain.toml"
    p.write_text(text, encoding="utf-8")
    return str(p)


@pytest.mark.parametrize("text, fragment", [
    ('premises = ["__import__(\'os\').system(\'echo hi\') <= 1"]\nconclusion = "a <= b"',
     "premises[0]: unexpected character \"'\" at column 12"),
    ('premises = ["a <= b"]\nconclusion = "a <= open(b)"', "conclusion: unknown function 'open'; allowed: sqrt, exp, log at column 6"),
    ('premises = ["a <= (b"]\nconclusion = "a <= b"', "premises[0]: unexpected end of formula"),
    ('premises = ["a <= b"]', "conclusion is missing"),
    ('premises = ["a <= b"]\nconclusion = "a <= b"\nbogus = 1', "bogus == 1"),
    ('premises = [', "valid TOML"),
])
def test_chain_malformed_exit_two(tmp_path, capsys, text, fragment):
    assert main(["prove", "--chain", _write(tmp_path, text)]) == 2
    captured = capsys.readouterr()
    assert fragment in captured.err
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1


def test_chain_injection_does_not_execute(tmp_path, capsys):
    marker = tmp_path / "pwned"
    text = f'premises = ["__import__(\'os\').system(\'touch {marker}\') <= 1"]\nconclusion = "a <= b"'
    assert main(["prove", "--chain", _write(tmp_path, text), "--json"]) == 2
    assert not marker.exists()
    out = json.loads(capsys.readouterr().out)
    assert out["key"] == "premises[0]" and out["column"] == 12 and out["entailed"] is None


def test_bad_timeout_exit_two(capsys):
    assert main(["prove", "--timeout", "0", "--chain", str(EXAMPLES / "descent_lemma.toml")]) == 2
    assert "--timeout == 0.0, must be a number of seconds in (0, 3600]." in capsys.readouterr().err


def test_chain_missing_key_json(tmp_path, capsys):
    assert main(["prove", "--json", "--chain", _write(tmp_path, 'premises = ["a <= b"]')]) == 2
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["key"] == "conclusion" and out["entailed"] is None and "conclusion is missing" in captured.err
