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
  explicitly for the SMT encoding;
* ``functions``/``risk_terms`` (optional data, this project's **Choice** for the tighter
  variants of THEORY §6) -- which function depends on which sample, and which function
  and sample (or the population) each risk symbol is about, so that the ledger can reject
  a one-function tail applied to a function that depends on its sample. An event may
  carry a :class:`Tail`: its kind, sample, function(s) and deviation formula.
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


#: Kinds of :class:`Tail`: one-function tails (the function must not depend on the sample),
#: uniform deviations over the capped class (closed-form or empirical Rademacher), and the
#: Monte-Carlo error of an empirical Rademacher estimate (THEORY §4, §6).
TAIL_KINDS = ("hoeffding", "bernstein", "uniform", "uniform_empirical", "monte_carlo",
              "uniform_linearised", "uniform_exact")   # the last two: THEORY §6b(b), (c), bounds.localised
ONE_FUNCTION_KINDS = ("hoeffding", "bernstein")


@dataclasses.dataclass(frozen=True)
class Tail:
    """How the slack ``symbol`` of the premises on an event is derived (THEORY §4, §6).

    Attributes:
        kind: one of ``TAIL_KINDS``.
        symbol: the symbol the premises use as slack (``A <= B + symbol``), e.g. ``t_T_new``.
        deviation: its value as a formula of sizes, levels and constants; the evaluators
            read the numeric value from here (the formula is written once).
        n: the size of the sample the event is about (``M`` for ``S``, ``K`` for ``T``).
        level: the event's probability (the union over ``copies`` and ``sides``).
        range: the length of the interval holding the function's values: the loss range ``B``,
            or ``2 r_d`` for a loss difference (:data:`bounds.dependence.RANGES`).
        variance: Bernstein only: the sample-variance symbol of the function's losses.
        sides: uniform kinds: 2 when premises use both directions (each side at
            ``level / 2``), 1 when only one is used.
        copies: a union bound over this many functions/caps (a post-hoc cap grid).
        rademacher: uniform and ``monte_carlo`` kinds: the vector-Rademacher symbol of
            the uniform deviation (for ``monte_carlo``: the exact empirical value the
            estimate replaces).
        estimate: ``monte_carlo`` only: what replaces ``rademacher`` in the uniform
            deviation (the Monte-Carlo value plus its error).
    """

    kind: str
    symbol: sp.Symbol
    deviation: sp.Expr
    n: sp.Expr
    level: sp.Expr
    range: sp.Expr
    variance: sp.Expr | None = None
    sides: int = 1
    copies: sp.Expr = sp.Integer(1)
    rademacher: sp.Expr | None = None
    estimate: sp.Expr | None = None

    def __post_init__(self):
        if self.kind not in TAIL_KINDS:
            raise ValueError(f"kind == {self.kind!r}, must be one of {list(TAIL_KINDS)}.")
        if self.sides not in (1, 2):
            raise ValueError(f"sides == {self.sides!r}, must be 1 or 2.")

    def substitute(self, sub) -> "Tail":
        """Apply ``sub`` (an expression map) to every expression of the record."""
        opt = lambda e: None if e is None else sub(e)  # noqa: E731
        return dataclasses.replace(self, deviation=sub(self.deviation), n=sub(self.n), level=sub(self.level),
                                   range=sub(self.range), variance=opt(self.variance), copies=sub(self.copies),
                                   rademacher=opt(self.rademacher), estimate=opt(self.estimate))


@dataclasses.dataclass(frozen=True)
class Event:
    """A failure event of a proof chain (``E_S``, ``E_T``, a Hoeffding tail).

    ``sample`` (``"S"``/``"T"``), ``functions`` (the functions its premises are about) and
    ``tail`` are optional data read by the ledger (THEORY §6 variants).
    """

    name: str
    probability: sp.Expr
    description: str
    hoeffding: Hoeffding | None = None
    sample: str | None = None
    functions: tuple[str, ...] = ()
    tail: Tail | None = None


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
    #: ``((function, (samples it depends on, ...)), ...)``, e.g. ``(("f_new", ("S",)), ...)``.
    functions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: ``((risk symbol name, (function, "S" | "T" | "population")), ...)``.
    risk_terms: tuple[tuple[str, tuple[str, str]], ...] = ()

    # ---- derived symbolic pieces --------------------------------------------------
    @property
    def bound(self) -> sp.Expr:
        """Right-hand side of the conclusion ``lhs <= bound``."""
        return self.conclusion.rhs

    @property
    def event_map(self) -> Mapping[str, Event]:
        return {e.name: e for e in self.events}

    @property
    def depends_on(self) -> Mapping[str, tuple[str, ...]]:
        """Function name -> the samples it depends on (empty when not recorded)."""
        return dict(self.functions)

    @property
    def risk_map(self) -> Mapping[str, tuple[str, str]]:
        """Risk symbol name -> ``(function, "S" | "T" | "population")``."""
        return dict(self.risk_terms)

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
                    tail=None if e.tail is None else e.tail.substitute(sub),
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
