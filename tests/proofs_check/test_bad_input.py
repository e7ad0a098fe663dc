"""Bad input (issue 7): exit 2, one line, never a traceback, never unbounded work.

The dangerous inputs (``/dev/zero``, deep TOML nesting) run in a subprocess with a
wall-clock timeout and a memory cap, so a regression fails the test instead of the machine.
"""
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from depthcert.cli import main
from tests.proofs_check.conftest import write_chain

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _one_line_error(code, err, fragment=""):
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert fragment in err, err


@pytest.mark.parametrize("formula, fragment", [
    ("x <= " + "*".join(["1e300"] * 15), "number too large"),             # the overflow
    ("x <= " + "*".join(["1e-300"] * 15), "number too large"),            # and its reciprocal
    ("x <= (" + "+".join(["1e300"] * 3) + ")^14", "number too large"),
    ("x <= exp(exp(exp(1000)))", "exp argument"),                          # the tower
    ("x <= exp(3000)", "exp argument"),
    ("x <= exp(2000)*exp(2000)", "exp argument"),                          # sympy merges them into exp(4000)
    ("x <= (-8)^(1/3)", "real number"),                              # the complex constant
    ("x <= (-2)^(1/2)", "real number"),
    ("x <= (0 - 8)^(2/3)", "real number"),
    ("x <= log(1 - 2)", "real number"),
    ("x <= sqrt(-4)", "real number"),
    ("x <= log(exp(-2) - 1)", "real number"),
    ("x <= \u09ea", "unexpected character"),                               # Bengali four
    ("x <= \uff14", "unexpected character"),                               # fullwidth four
    ("x <= \u0663", "unexpected character"),                               # Arabic-Indic three
    ("x <= x\u00b2", "unexpected character"),                              # superscript two
    ("x <= 1\u00a0+ 2", "unexpected character"),                           # no-break space
    ("x <= 1e\u0663", "unexpected character"),
])
def test_bad_formulas_exit_two(tmp_path, capsys, formula, fragment):
    path = write_chain(tmp_path, ["y <= 1"], formula)
    code = main(["prove", "--chain", path])
    _one_line_error(code, capsys.readouterr().err, fragment)
    path = write_chain(tmp_path, [formula], "y <= 1", name="as_premise")
    code = main(["prove", "--chain", path, "--json"])
    captured = capsys.readouterr()
    _one_line_error(code, captured.err, fragment)
    assert json.loads(captured.out)["entailed"] is None


def _run_guarded(args, timeout=300):
    """The CLI in a subprocess, at most 2 GiB of address space and ``timeout`` seconds."""
    def limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "depthcert", "prove", *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit, env=env, cwd=ROOT)


def test_dev_zero_is_refused_quickly():
    r = _run_guarded(["--chain", "/dev/zero"])
    _one_line_error(r.returncode, r.stderr, "--chain")
    assert "bytes" in r.stderr


@pytest.mark.parametrize("text", [
    "premises = " + "[" * 5000 + "]" * 5000 + '\nconclusion = "a <= b"',                 # nested arrays
    "x = " + "{a = " * 3000 + "1" + "}" * 3000 + '\npremises = []\nconclusion = "a <= b"',  # nested inline tables
], ids=["arrays", "inline_tables"])
def test_deeply_nested_toml_exit_two(tmp_path, text):
    path = tmp_path / "deep.toml"
    path.write_text(text, encoding="utf-8")
    r = _run_guarded(["--chain", str(path)])
    _one_line_error(r.returncode, r.stderr, "--chain")


def test_oversized_file_exit_two(tmp_path):
    from proofs_check import LIMITS

    path = tmp_path / "big.toml"
    path.write_text('premises = ["a <= b"]\nconclusion = "a <= b"\n' + "#" * LIMITS.max_file_bytes + "\n")
    r = _run_guarded(["--chain", str(path)])
    _one_line_error(r.returncode, r.stderr, str(LIMITS.max_file_bytes))


def test_nul_bytes_exit_two(tmp_path, capsys):
    path = tmp_path / "nul.toml"
    path.write_bytes(b'premises = ["a <= b"]\x00\nconclusion = "a <= b"\n')
    _one_line_error(main(["prove", "--chain", str(path)]), capsys.readouterr().err, "--chain")


def test_chain_size_limits(tmp_path, capsys):
    from proofs_check import LIMITS

    n = LIMITS.max_formulas + 1
    path = write_chain(tmp_path, [f"x{i} <= x{i + 1}" for i in range(n)], "x0 <= x1")
    _one_line_error(main(["prove", "--chain", path]), capsys.readouterr().err, str(LIMITS.max_formulas))
    k = LIMITS.max_transcendental_terms + 1
    path = write_chain(tmp_path, [" + ".join(f"exp(x{i})" for i in range(k)) + " >= 0"], "y <= y", name="exp")
    _one_line_error(main(["prove", "--chain", path]), capsys.readouterr().err, str(LIMITS.max_transcendental_terms))
    k = LIMITS.max_symbols + 1
    per = 100
    premises = [" + ".join(f"v{j}" for j in range(i, min(i + per, k))) + " >= 0" for i in range(0, k, per)]
    path = write_chain(tmp_path, premises, "y <= y", name="symbols")
    _one_line_error(main(["prove", "--chain", path]), capsys.readouterr().err, str(LIMITS.max_symbols))


def test_help_states_the_limits(capsys):
    from proofs_check import LIMITS

    with pytest.raises(SystemExit):
        main(["prove", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for value in (LIMITS.max_file_bytes, LIMITS.max_formulas, LIMITS.max_formula_chars, LIMITS.max_symbols,
                  LIMITS.max_transcendental_terms):
        assert str(value) in text, value


# ---- garbage in, no traceback out ----------------------------------------------------------
TOKENS = ["x", "y", "z1", "exp(", "log(", "sqrt(", "(", ")", "+", "-", "*", "/", "^", "**", "<=", ">=", "<", ">",
          "=", "==", "0", "1", "2.5", "1e300", "1e-300", "1e999", "-8", "(1/3)", "\u09ea", "\uff14", " ", "'", "@",
          "\x00", "\u00b2", "E", "pi", "__import__", "sin(", ",", ".", "e", "1e", "]", "[", "\"", "\\",
          "(-8)^(1/3)", "exp(exp(1000))", "*1e300*1e300*1e300*1e300*1e300*1e300*1e300", "x^64", "/(x-x)"]
NASTY = ["x", "y", "2", "1e-30", "sqrt(x)", "log(y)", "exp(x)", "(-8)^(1/3)", "exp(exp(exp(1000)))",
         "*".join(["1e300"] * 15), "\u09ea", "\uff14", "log(0)", "x/(x-x)", "(x^64)^64", "1e300*1e300",
         "exp(2000)*exp(2000)", "log(exp(-2) - 1)", "sqrt(-1-x^2)", "(" * 70 + "x" + ")" * 70]
structured = st.tuples(st.sampled_from(NASTY), st.sampled_from(["+", "-", "*", "/", "^"]), st.sampled_from(NASTY),
                       st.sampled_from(["<=", "<", ">=", ">", "="]), st.sampled_from(NASTY)).map(" ".join)
formula = st.lists(st.sampled_from(TOKENS), max_size=14).map("".join) | structured


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(premises=st.lists(formula, max_size=3), conclusion=formula, assume=st.lists(formula, max_size=2))
def test_garbage_formulas_never_crash(tmp_path, capsys, premises, conclusion, assume):
    path = write_chain(tmp_path, premises, conclusion, assume)
    code = main(["prove", "--chain", path, "--json", "--timeout", "1"])   # an exception fails the test
    captured = capsys.readouterr()
    assert code in (0, 1, 2)
    out = json.loads(captured.out)
    if code == 2:
        assert captured.err.count("\n") == 1 and out["entailed"] is None
    elif code == 0:
        assert out["entailed"] is True
    else:
        assert out["entailed"] in (False, None) and out["status"] in ("not entailed", "vacuous", "unknown")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300) | st.text(alphabet='[]{}="a,.#\n\\ 01', max_size=300))
def test_garbage_files_never_crash(tmp_path, capsys, blob):
    path = tmp_path / "garbage.toml"
    path.write_bytes(blob if isinstance(blob, bytes) else blob.encode())
    code = main(["prove", "--chain", str(path), "--timeout", "1"])
    err = capsys.readouterr().err
    assert code in (0, 1, 2)
    if code == 2:
        assert err.count("\n") == 1 and "Traceback" not in err


def test_a_product_of_many_sums_is_never_expanded():
    """A premise whose expansion has 8^100 monomials (issue 20): no checker expands it, the chain is
    answered (z3 on the unexpanded terms), and the limit is stated in the help text."""
    import sympy as sp

    from proofs_check import describe_limits
    from proofs_check._exact_points import _compile_linear
    from proofs_check._linear import MAX_TERMS, expanded_size
    from proofs_check.chain import check_chain, parse_chain

    syms = sp.symbols("a b c d e f g h", positive=True)
    big = sp.Mul(*[sum(syms) + k for k in range(100)], evaluate=True)
    assert expanded_size(big) > 10**80 > MAX_TERMS
    assert _compile_linear(sp.Le(big, 1)) is None            # returned at once: Poly would expand 9^100 terms
    text = "*".join(["(a+b+c+d+e+f+g+h)"] * 100)
    result = check_chain(parse_chain({"name": "big", "assume": ["a > 0"], "premises": [f"{text} <= 1"],
                                      "conclusion": "a <= 2"}))
    assert result.entailed is False
    assert str(MAX_TERMS) in describe_limits()
