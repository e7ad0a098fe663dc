"""``verify_all``: every theorem of :mod:`bounds`, every mutant, the side algebra."""
from __future__ import annotations

import time

from bounds import ALL_THEOREMS
from bounds.localised import LOCALISED_THEOREMS
from bounds.variants import VARIANT_THEOREMS
from proofs_check._results import MutantResult, ProveReport
from proofs_check._verify import DEFAULT_TIMEOUT_S, verify
from proofs_check.mutants import MUTANTS
from proofs_check.side_algebra import side_algebra_checks


def verify_mutants(timeout_s: float = DEFAULT_TIMEOUT_S) -> tuple[MutantResult, ...]:
    """Verify each catalogued wrong variant; each must come back rejected (:attr:`MutantResult.rejected`)."""
    out = []
    for m in MUTANTS:
        result = verify(m.build(), timeout_s=timeout_s, necessity=False)
        out.append(MutantResult(m.name, m.description, m.target, result))
    return tuple(out)


#: What ``depthcert prove`` verifies: the paper's statements, this project's variants (THEORY §6, Choice) and
#: the localised certificates on loss differences (THEORY §6b, Choice).
DEFAULT_THEOREMS = ALL_THEOREMS + VARIANT_THEOREMS + LOCALISED_THEOREMS


def verify_all(theorems=DEFAULT_THEOREMS, timeout_s: float = DEFAULT_TIMEOUT_S, *, mutants: bool = True,
               side_algebra: bool = True) -> ProveReport:
    """Run every check of ``depthcert prove`` (THEORY §3-§8).

    Args:
        theorems: the statements to verify (default: :data:`bounds.ALL_THEOREMS` and
            :data:`bounds.variants.VARIANT_THEOREMS`).
        timeout_s: z3 timeout per query, in seconds.
        mutants: also verify the catalogue :data:`proofs_check.mutants.MUTANTS`.
        side_algebra: also run :func:`proofs_check.side_algebra.side_algebra_checks`.

    Returns:
        :class:`ProveReport`; ``ok`` iff every theorem verifies, every mutant is
        rejected and every side-algebra check passes (or is skipped).
    """
    t0 = time.perf_counter()
    results = tuple(verify(t, timeout_s=timeout_s) for t in theorems)
    rejected = verify_mutants(timeout_s) if mutants else ()
    side = side_algebra_checks() if side_algebra else ()
    return ProveReport(results, rejected, side, seconds=time.perf_counter() - t0)
