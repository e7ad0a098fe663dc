"""A catalogue of wrong variants of the theorems; the checker must reject every one.

Each :class:`Mutant` is built by transforming a theorem object of :mod:`bounds` (a
changed conclusion, a flipped premise, a wrong failure probability), never by re-typing
it, so the catalogue follows the statements when they change. ``target`` names the check
that must FAIL with a countermodel: ``entailment/z3`` for a wrong inequality,
``ledger/...`` for wrong probability bookkeeping. This is what shows the checker can
fail (THEORY §3, §5, §6).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Sequence

import sympy as sp

from bounds import (THEOREM_1, THEOREM_1_OPTIMAL, THEOREM_2, THEOREM_2_GENERAL, THEOREM_3, THEOREM_POPULATION_RISK,
                    Hoeffding)
from bounds import _symbols as s
from bounds.routes import BUILT_IN, REGISTRY
from proofs_check._localised_mutants import LOCALISED_MUTANT_SPECS
from proofs_check._variant_mutants import VARIANT_MUTANT_SPECS


@dataclasses.dataclass(frozen=True)
class Mutant:
    """A named wrong variant: ``build()`` returns the mutated theorem."""

    name: str
    description: str
    target: str
    build: Callable[[], object]


def _swap_bound(theorem, old: sp.Expr, new: sp.Expr, name: str):
    """The theorem with ``old`` replaced by ``new`` in the bound (rhs of the conclusion)."""
    c = theorem.conclusion
    bound = sp.expand(c.rhs)
    changed = sp.expand(bound - old + new)
    if sp.expand(changed - bound) == 0:
        raise ValueError(f"mutant {name}: {old} -> {new} does not change {c}")
    return theorem.replace(name=name, conclusion=c.func(c.lhs, changed))


def _swap_premise(theorem, premise: str, relation, name: str):
    new = tuple(dataclasses.replace(p, relation=relation(p.relation)) if p.name == premise else p
                for p in theorem.premises)
    return theorem.replace(name=name, premises=new)


def _swap_event(theorem, event: str, name: str, **changes):
    new = tuple(dataclasses.replace(e, **changes) if e.name == event else e for e in theorem.events)
    return theorem.replace(name=name, events=new)


def _flip(rel):
    """``a <= b`` -> ``a >= b`` (the premise points the wrong way)."""
    return sp.Ge(rel.lhs, rel.rhs) if isinstance(rel, sp.LessThan) else sp.Le(rel.lhs, rel.rhs)


def _tail_with_n(n: sp.Expr) -> sp.Expr:
    """The Theorem-2 tail ``2 exp(-2 n t^2 / B^2)`` at ``t = Delta_R/4`` with sample size ``n``."""
    h = THEOREM_2.event_map["H_new"].hoeffding
    return 2 * Hoeffding(n, h.t, h.range).tail()


_T2_TAIL = THEOREM_2.failure_probability - s.delta

_BUILT_IN: tuple[Mutant, ...] = (
    Mutant("t2_delta_R_not_halved", "Theorem 2 with -Delta_R instead of -Delta_R/2", "entailment/z3",
           lambda: _swap_bound(THEOREM_2, -s.delta_R / 2, -s.delta_R, "t2_delta_R_not_halved")),
    Mutant("t2_single_eps_M", "Theorem 2 with + eps_M instead of + 2 eps_M", "entailment/z3",
           lambda: _swap_bound(THEOREM_2, 2 * s.eps_M, s.eps_M, "t2_single_eps_M")),
    Mutant("t2_flipped_eps_sign", "Theorem 2 with - 2 eps_M instead of + 2 eps_M", "entailment/z3",
           lambda: _swap_bound(THEOREM_2, 2 * s.eps_M, -2 * s.eps_M, "t2_flipped_eps_sign")),
    Mutant("t2_general_single_t", "Theorem 2 (any t) with + t instead of + 2t", "entailment/z3",
           lambda: _swap_bound(THEOREM_2_GENERAL, 2 * s.t, s.t, "t2_general_single_t")),
    Mutant("t2_flipped_premise", "Theorem 2 with the Hoeffding step on f_old pointing the wrong way",
           "entailment/z3", lambda: _swap_premise(THEOREM_2, "hoeffding_old", _flip, "t2_flipped_premise")),
    Mutant("t3_single_eps", "Theorem 3 with 2 eps_M + eps_K instead of 2 (eps_M + eps_K)", "entailment/z3",
           lambda: _swap_bound(THEOREM_3, 2 * s.eps_K, s.eps_K, "t3_single_eps")),
    Mutant("t3_margin_doubled", "Theorem 3 with -2 Delta_test^R instead of -Delta_test^R", "entailment/z3",
           lambda: _swap_bound(THEOREM_3, -s.delta_test_R, -2 * s.delta_test_R, "t3_margin_doubled")),
    Mutant("t1_curvature_quartered", "Theorem 1 with eta (1 - beta eta / 4): a non-linear wrong bound",
           "entailment/z3",
           lambda: _swap_bound(THEOREM_1, s.beta * s.eta**2 * s.G_sq / 2, s.beta * s.eta**2 * s.G_sq / 4,
                               "t1_curvature_quartered")),
    Mutant("t1_optimal_no_half", "Theorem 1 at eta = 1/beta with ||G||^2/beta instead of ||G||^2/(2 beta)",
           "entailment/z3",
           lambda: _swap_bound(THEOREM_1_OPTIMAL, s.G_sq / (2 * s.beta), s.G_sq / s.beta, "t1_optimal_no_half")),
    # ---- ledger mutants (THEORY §5, §6) ---------------------------------------------
    Mutant("t2_dropped_hoeffding_factor", "Theorem 2 failure probability delta + exp(...) (factor 2 dropped)",
           "ledger/union_bound",
           lambda: THEOREM_2.replace(name="t2_dropped_hoeffding_factor",
                                     failure_probability=s.delta + _T2_TAIL / 2)),
    Mutant("t2_wrong_exponent", "Theorem 2 failure probability with exp(-K Delta_R^2/(4 B^2)) (t = Delta_R/(2 sqrt 2))",
           "ledger/union_bound",
           lambda: THEOREM_2.replace(name="t2_wrong_exponent", failure_probability=s.delta + _tail_with_n(2 * s.K))),
    Mutant("t2_sqrt_K", "Theorem 2 failure probability with sqrt(K) for K in the Hoeffding exponent",
           "ledger/union_bound",
           lambda: THEOREM_2.replace(name="t2_sqrt_K", failure_probability=s.delta + _tail_with_n(sp.sqrt(s.K)))),
    Mutant("t2_tail_not_from_t", "Theorem 2 with P(H_new) = exp(-K Delta_R^2/(4 B^2)), not the tail at t = Delta_R/4",
           "ledger/hoeffding/H_new",
           lambda: _swap_event(THEOREM_2, "H_new", "t2_tail_not_from_t",
                               probability=_tail_with_n(2 * s.K) / 2)),
    Mutant("t2_deviation_mismatch", "Theorem 2 with the Hoeffding record at t = Delta_R/2 while the premise uses Delta_R/4",
           "ledger/hoeffding/H_old",
           lambda: _swap_event(THEOREM_2, "H_old", "t2_deviation_mismatch",
                               hoeffding=Hoeffding(s.K, s.delta_R / 2, s.B),
                               probability=Hoeffding(s.K, s.delta_R / 2, s.B).tail())),
    Mutant("t2_hoeffding_on_M", "Theorem 2 with the test-sample Hoeffding tail computed with the training size M",
           "ledger/hoeffding/H_new",
           lambda: _swap_event(THEOREM_2, "H_new", "t2_hoeffding_on_M",
                               hoeffding=Hoeffding(s.M, s.delta_R / 4, s.B),
                               probability=Hoeffding(s.M, s.delta_R / 4, s.B).tail())),
    Mutant("t3_missing_delta_prime", "Theorem 3 failure probability delta (E_T forgotten)", "ledger/union_bound",
           lambda: THEOREM_3.replace(name="t3_missing_delta_prime", failure_probability=s.delta)),
    # ---- population-level consequence (THEORY §5, steps 1-4) ------------------------------
    Mutant("pop_risk_single_eps_M", "R(f_new) bound with + eps_M instead of + 2 eps_M", "entailment/z3",
           lambda: _swap_bound(THEOREM_POPULATION_RISK, 2 * s.eps_M, s.eps_M, "pop_risk_single_eps_M")),
    Mutant("pop_risk_unpaid_estimate", "R(f_new) bound at failure delta: the estimated Delta_R not paid for",
           "ledger/union_bound",
           lambda: THEOREM_POPULATION_RISK.replace(name="pop_risk_unpaid_estimate", failure_probability=s.delta)),
) + tuple(Mutant(*spec) for spec in VARIANT_MUTANT_SPECS + LOCALISED_MUTANT_SPECS)   # THEORY §6, §6b (Choice)


class MutantCatalogue(Sequence):
    """A live, read-only catalogue: the built-in mutants, then every registered route's own
    (:attr:`bounds.routes.Route.mutants`, ``(name, description, target, build)``); equal to the tuple it shows."""

    def _items(self) -> tuple[Mutant, ...]:
        return _BUILT_IN + tuple(Mutant(*spec) for r in REGISTRY.values() if r.name not in BUILT_IN for spec in r.mutants)

    def __getitem__(self, i):
        return self._items()[i]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Mutant]:
        return iter(self._items())

    def __eq__(self, other) -> bool:
        return self._items() == (tuple(other) if isinstance(other, (tuple, list, MutantCatalogue)) else other)

    __hash__ = None

    def __add__(self, other) -> tuple:
        return self._items() + tuple(other)

    def __repr__(self) -> str:
        return repr(self._items())


#: Every mutant ``depthcert prove`` must see rejected: the catalogue above and the registered routes' own.
MUTANTS: MutantCatalogue = MutantCatalogue()


def mutant(name: str) -> Mutant:
    """The catalogue entry called ``name``.

    Raises:
        ValueError: unknown name (the message lists the catalogue).
    """
    for m in MUTANTS:
        if m.name == name:
            return m
    raise ValueError(f"name == {name!r}, must be one of {[m.name for m in MUTANTS]}.")
