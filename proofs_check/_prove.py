"""``verify_all``: every theorem of :mod:`bounds`, every mutant, the side algebra."""
from __future__ import annotations

import time

from typing import Iterator, Sequence

from bounds import ALL_THEOREMS
from bounds.routes import REGISTRY
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


class TheoremList(Sequence):
    """A live, read-only list: :data:`bounds.ALL_THEOREMS`, then every registered route's proof chain
    (:attr:`bounds.routes.Route.proof_chain`), each statement once (by name); equal to the tuple it shows."""

    def _items(self) -> tuple:
        out = {T.name: T for T in ALL_THEOREMS}
        for r in REGISTRY.values():
            for T in r.proof_chain:
                out.setdefault(T.name, T)
        return tuple(out.values())

    def __getitem__(self, i):
        return self._items()[i]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator:
        return iter(self._items())

    def __eq__(self, other) -> bool:
        return self._items() == (tuple(other) if isinstance(other, (tuple, list, TheoremList)) else other)

    __hash__ = None

    def __add__(self, other) -> tuple:
        return self._items() + tuple(other)


#: What ``depthcert prove`` verifies: the paper's statements, this project's variants (THEORY §6, Choice),
#: the localised certificates on loss differences (THEORY §6b, Choice) and every registered route's proof chain:
#: a live view of the route registry (:data:`bounds.routes.REGISTRY`).
DEFAULT_THEOREMS = TheoremList()


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
