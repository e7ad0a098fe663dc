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
