"""Shared fixtures: the full ``verify_all`` report is computed once per session."""
import pytest


@pytest.fixture(scope="session")
def theorem_results():
    """``verify`` of every built-in theorem (fast: a few hundred ms)."""
    from bounds import ALL_THEOREMS
    from proofs_check import verify

    return {t.name: verify(t) for t in ALL_THEOREMS}


@pytest.fixture(scope="session")
def mutant_results():
    from proofs_check import verify_mutants

    return {m.name: m for m in verify_mutants()}


def write_chain(tmp_path, premises, conclusion, assume=(), name="c"):
    """A chain TOML file (strings JSON-quoted, so any character survives)."""
    import json

    path = tmp_path / f"{name}.toml"
    path.write_text(f"name = {json.dumps(name)}\nassume = {json.dumps(list(assume), ensure_ascii=False)}\n"
                    f"premises = {json.dumps(list(premises), ensure_ascii=False)}\n"
                    f"conclusion = {json.dumps(conclusion, ensure_ascii=False)}\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def run_chain(tmp_path, capsys):
    """``run_chain(premises, conclusion, assume=())`` -> (exit code, JSON dict, stderr) of ``depthcert prove --chain``."""
    import json

    from depthcert.cli import main

    def run(premises, conclusion, assume=(), *extra):
        code = main(["prove", "--chain", write_chain(tmp_path, premises, conclusion, assume), "--json", *extra])
        captured = capsys.readouterr()
        return code, json.loads(captured.out), captured.err

    return run
