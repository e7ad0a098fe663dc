"""Data types for a theorem as a symbolic object: events, premises, statement.

A :class:`Theorem` is the single source of truth for one result of THEORY.md: the CLI,
:mod:`proofs_check`, the plots and the notebooks all read the same object. It holds

* ``conclusion`` -- a sympy relation ``lhs <= rhs`` (the bound is ``rhs``);
* ``premises`` -- the proof chain, each a relation with its justification and the name
  of the failure event it lives on (``None`` for definitions);
* ``events`` -- the failure events with their probabilities; a Hoeffding event also
  records ``(n, t, range)`` so the tail can be re-derived;
* ``failure_probability`` -- the probability the theorem states (the checker compares
  it with the union bound over the events the premises use);
* ``side_conditions`` -- sign conditions (sizes, margins, epsilons >= 0) stated
  explicitly for the SMT encoding.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Mapping

import numpy as np
import sympy as sp


@dataclasses.dataclass(frozen=True)
class Hoeffding:
    """One-sided Hoeffding tail ``P(mean - E >= t) <= exp(-2 n t^2 / range^2)``."""

    n: sp.Expr
    t: sp.Expr
    range: sp.Expr

    def tail(self) -> sp.Expr:
        """The tail ``exp(-2 n t^2 / range^2)`` derived from ``(n, t, range)``."""
        return sp.exp(-2 * self.n * self.t**2 / self.range**2)


@dataclasses.dataclass(frozen=True)
class Event:
    """A failure event of a proof chain (``E_S``, ``E_T``, a Hoeffding tail)."""

    name: str
    probability: sp.Expr
    description: str
    hoeffding: Hoeffding | None = None


@dataclasses.dataclass(frozen=True)
class Premise:
    """One step of a proof chain.

    ``event`` names the :class:`Event` outside of which the step holds; ``None`` for a
    definition, which holds surely.
    """

    name: str
    relation: sp.core.relational.Relational
    justification: str
    event: str | None = None


@dataclasses.dataclass(frozen=True)
class Theorem:
    """One statement of THEORY.md, with its proof chain and its numeric evaluators."""

    name: str
    reference: str
    conclusion: sp.core.relational.Relational
    premises: tuple[Premise, ...]
    events: tuple[Event, ...]
    failure_probability: sp.Expr
    side_conditions: tuple[sp.core.relational.Relational, ...]
    description: str = ""

    # ---- derived symbolic pieces --------------------------------------------------
    @property
    def bound(self) -> sp.Expr:
        """Right-hand side of the conclusion ``lhs <= bound``."""
        return self.conclusion.rhs

    @property
    def event_map(self) -> Mapping[str, Event]:
        return {e.name: e for e in self.events}

    def union_bound(self) -> sp.Expr:
        """Union bound over the distinct events the premises use (THEORY §5, §6)."""
        used = []
        for p in self.premises:
            if p.event is not None and p.event not in used:
                used.append(p.event)
        return sp.Add(*[self.event_map[name].probability for name in used])

    def free_symbols(self) -> set[sp.Symbol]:
        syms = set(self.conclusion.free_symbols) | set(self.failure_probability.free_symbols)
        for p in self.premises:
            syms |= p.relation.free_symbols
        return syms

    def without(self, premise_name: str) -> "Theorem":
        """The same statement with one premise dropped (for necessity checks)."""
        kept = tuple(p for p in self.premises if p.name != premise_name)
        if len(kept) == len(self.premises):
            names = [p.name for p in self.premises]
            raise ValueError(f"premise_name == {premise_name!r}, must be one of {names}.")
        return dataclasses.replace(self, premises=kept)

    def replace(self, **changes) -> "Theorem":
        return dataclasses.replace(self, **changes)

    def substitute(self, mapping: Mapping[sp.Symbol, sp.Expr], name: str | None = None) -> "Theorem":
        """Specialise every expression of the statement (e.g. ``t -> delta_R/4``)."""
        sub = lambda e: e.subs(mapping)  # noqa: E731
        return dataclasses.replace(
            self,
            name=name or self.name,
            conclusion=sub(self.conclusion),
            premises=tuple(dataclasses.replace(p, relation=sub(p.relation)) for p in self.premises),
            events=tuple(
                dataclasses.replace(
                    e,
                    probability=sub(e.probability),
                    hoeffding=None if e.hoeffding is None else Hoeffding(
                        sub(e.hoeffding.n), sub(e.hoeffding.t), sub(e.hoeffding.range)),
                )
                for e in self.events
            ),
            failure_probability=sub(self.failure_probability),
            side_conditions=tuple(sub(c) for c in self.side_conditions),
        )


@functools.lru_cache(maxsize=None)
def lambdified(expr: sp.Expr, args: tuple[sp.Symbol, ...]):
    """``numpy`` evaluator of ``expr`` in the positional ``args``, cached per pair.

    Vectorised: every argument may be a numpy array (broadcast together).
    """
    return sp.lambdify(args, expr, modules="numpy")


def evaluate(expr: sp.Expr, values: Mapping[str, object]) -> np.ndarray:
    """Evaluate ``expr`` at ``values`` (symbol name -> float or array), in float64.

    Raises:
        KeyError: a free symbol of ``expr`` has no value.

    Example:
        >>> from bounds import _symbols as s
        >>> float(evaluate(s.delta_R / 2 + s.eps_M, {"delta_R": 0.5, "eps_M": 1.0}))
        1.25
    """
    args = tuple(sorted(expr.free_symbols, key=lambda x: x.name))
    missing = [a.name for a in args if a.name not in values]
    if missing:
        raise KeyError(f"no value for {missing} (needed by {expr})")
    fn = lambdified(expr, args)
    arrays = [np.asarray(values[a.name], dtype=np.float64) for a in args]
    out = fn(*arrays) if args else float(expr)
    return np.asarray(out, dtype=np.float64) * np.ones(np.broadcast_shapes(*[a.shape for a in arrays]) if arrays else ())
