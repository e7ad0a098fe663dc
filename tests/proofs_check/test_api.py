"""The public API is re-exported explicitly (STYLE: Architecture)."""
import proofs_check


def test_public_names_exist():
    for name in proofs_check.__all__:
        assert hasattr(proofs_check, name), name
    for name in ("verify", "verify_all", "check_chain", "parse_relation", "MUTANTS", "TheoremResult",
                 "Check", "ChainResult", "ChainSyntaxError"):
        assert name in proofs_check.__all__


def test_proofs_check_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, proofs_check; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_check_rejects_unknown_status():
    import pytest

    with pytest.raises(ValueError, match="status == 'MAYBE'"):
        proofs_check.Check("s", "n", "MAYBE", "z3")


def test_verify_rejects_bad_timeout():
    import pytest
    from bounds import THEOREM_3

    with pytest.raises(ValueError, match="timeout_s == 0"):
        proofs_check.verify(THEOREM_3, timeout_s=0)
