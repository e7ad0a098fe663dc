"""SMT entailment with z3: ``premises and not(conclusion)`` unsatisfiable over the reals.

The sympy expressions are translated by :class:`proofs_check._translate.Translator`
(tree walk, never strings; exp/log with the lemmas of :mod:`proofs_check._transcendental`:
monotonicity, ``exp(log y) = y``, tangents, log of products, rigorous enclosures of
constants). The **domain** of each formula (as written for user chains, of the tree for
theorem objects, :mod:`proofs_check._domain`) is assumed for premises and is part of the
goal for the conclusion (an ill-defined conclusion is not entailed).

:class:`Problem` keeps **one** solver per chain: every premise (with its domain) is
guarded by an assumption literal, the negated goal by another, so consistency,
entailment, premise necessity and minimal inconsistent subsets are all
``check(assumptions)`` calls on the same solver, with unsat cores. A ``sat`` answer is
a countermodel only once it is **confirmed** in exact arithmetic
(:mod:`proofs_check._rigorous`); otherwise the model's exp/log values are refined and
z3 asked again, and what stays unconfirmed is ``unknown``. Sign assumptions of sympy
symbols (``positive``, ``nonnegative``) are explicit, labelled constraints.
"""
from __future__ import annotations

import dataclasses
import time
from fractions import Fraction

import sympy as sp
import z3
from z3 import z3core

from proofs_check import _rigorous
from proofs_check._domain import domain_of
from proofs_check._exact_points import _compile_linear, _differs, _exact, _linear_holds, _sign_ok, _visible  # noqa: F401
from proofs_check._numbers import TooLarge, fraction_of_string
from proofs_check._translate import Translator, Untranslatable

MAX_ROUNDS = 6       # refinement rounds before a countermodel is declared unconfirmable
#: Where a watcher reads the deadline (``time.monotonic()``) of the query running now, 0.0 when none
#: (:mod:`proofs_check._isolate` sets a shared value in its child process).
WATCH = None
#: Likewise the deadline of the whole chain (set by :func:`proofs_check.chain.check_chain`).
WATCH_CHAIN = None


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """A premise or side condition: ``label``, ``relation`` and its ``domain`` (``None``:
    read from the sympy tree with :func:`proofs_check._domain.domain_of`)."""

    label: str
    relation: object
    domain: tuple | None = None

    def conditions(self) -> tuple:
        return tuple(self.domain) if self.domain is not None else domain_of(self.relation)


@dataclasses.dataclass(frozen=True)
class SmtOutcome:
    """``status``: "unsat" (entailed / inconsistent), "sat" (a confirmed countermodel) or "unknown".

    ``countermodel`` maps symbol names to exact values (Fraction or an exact sympy
    constant such as ``exp(3/2)``); ``core`` names the hypotheses an unsat answer used.
    """

    status: str
    countermodel: dict
    abstracted: bool    # the query used exp/log terms
    detail: str = ""
    core: tuple = ()


class Problem:
    """One z3 solver for a chain: hypotheses and the negated goal behind assumption literals.

    Args:
        hypotheses: :class:`Hypothesis` list (premises and side conditions).
        conclusion: the relation to entail (``None``: consistency questions only).
        conclusion_domain: the conclusion's domain as written (the tree's is added).
        timeout_s: z3 timeout per query.
        deadline: ``time.monotonic()`` after which every query answers "unknown".

    Raises:
        Untranslatable: an expression outside the supported fragment.
    """

    def __init__(self, hypotheses, conclusion=None, conclusion_domain=(), timeout_s: float = 5.0,
                 deadline: float | None = None):
        self.tr = Translator()
        self.hypotheses = {h.label: h for h in hypotheses}
        self.timeout_s, self.deadline = timeout_s, deadline
        self.assertions: list = []
        self.literal: dict[str, z3.BoolRef] = {}
        for i, h in enumerate(self.hypotheses.values()):
            body = [self.tr.relation(h.relation)] + [self.tr.relation(d) for d in h.conditions()]
            self.literal[h.label] = z3.Bool(f"!h{i}")
            self.assertions.append(z3.Implies(self.literal[h.label], z3.And(*body)))
        self.conclusion = conclusion
        self.goal_domain = ()
        if conclusion is not None:
            self.goal_domain = tuple(dict.fromkeys(tuple(conclusion_domain) + domain_of(conclusion)))
            goal = z3.And(self.tr.relation(conclusion), *[self.tr.relation(d) for d in self.goal_domain])
            self.goal = z3.Bool("!goal")
            self.assertions.append(z3.Implies(self.goal, z3.Not(goal)))
        self.assertions += self.tr.table.lemmas()
        self.assertions += self.tr.aux
        self.signs = {}
        for i, (label, fact) in enumerate(self.tr.signs):
            self.signs[label] = z3.Bool(f"!s{i}")
            self.assertions.append(z3.Implies(self.signs[label], fact))
        self._incremental = self._linear_arithmetic()
        self.solver = z3.Solver()
        self.solver.add(*self.assertions)
        self._names = {**{str(v): k for k, v in self.literal.items()}, **{str(v): k for k, v in self.signs.items()}}
        self._decls: list = []
        self._signed = [(n, sym) for n, sym in self.tr.symbols.items()
                        if sym.is_positive or sym.is_nonnegative or sym.is_negative]
        self._linear = {h.label: f for h in self.hypotheses.values()
                        if not h.conditions() and (f := _compile_linear(h.relation)) is not None}

    @property
    def linear(self) -> bool:
        """Linear real arithmetic (one incremental solver; z3 keeps its timeouts there)."""
        return self._incremental

    @property
    def labels(self) -> list[str]:
        return list(self.literal)

    def _linear_arithmetic(self) -> bool:
        """Linear real arithmetic: one incremental solver answers every query, and fast.

        Non-linear queries get a fresh solver each (same assertions): z3's incremental core
        does not honour timeouts on non-linear arithmetic, its non-incremental tactic does.
        """
        goal = z3.Goal()
        goal.add(*self.assertions)
        return z3.Probe("is-qflra")(goal) == 1.0

    def _add(self, facts) -> None:
        self.assertions += facts
        self.solver.add(*facts)

    def check(self, active=None, goal: bool = True, confirm: bool = True) -> SmtOutcome:
        """Satisfiability of the ``active`` hypotheses (default all) and, with ``goal``, not(conclusion).

        Returns:
            :class:`SmtOutcome`: "unsat" with the ``core`` (labels, signs included), "sat"
            with a countermodel confirmed in exact arithmetic (only with ``confirm``; else
            z3's raw model), or "unknown" with the reason.
        """
        active = list(self.literal) if active is None else list(active)
        assumptions = [self.literal[a] for a in active] + list(self.signs.values())
        if goal:
            assumptions.append(self.goal)
        why = ""
        for _ in range(MAX_ROUNDS if confirm else 1):
            remaining = self._remaining()
            if remaining <= 0:
                return SmtOutcome("unknown", {}, self.tr.uses_functions, "time budget of the chain spent")
            self._timeout_ms = max(1, int(1000 * min(self.timeout_s, remaining)))
            self.solver.set("timeout", self._timeout_ms)
            result = self._check(assumptions)
            if result == z3.unsat:
                core = tuple(self._names[str(c)] for c in self.solver.unsat_core() if str(c) in self._names)
                return SmtOutcome("unsat", {}, self.tr.uses_functions, core=core)
            if result == z3.unknown:
                return SmtOutcome("unknown", {}, self.tr.uses_functions,
                                  f"z3 unknown ({self.solver.reason_unknown()}, timeout {self.timeout_s:g} s)")
            model = self.solver.model()
            try:
                point = self._point(model)
            except Untranslatable as exc:
                return SmtOutcome("unknown", {}, self.tr.uses_functions, str(exc))
            if not confirm:
                return SmtOutcome("sat", point, self.tr.uses_functions)
            confirmed, why = self.confirm(point, active, goal)
            if confirmed is not None:
                return SmtOutcome("sat", _visible(confirmed), self.tr.uses_functions)
            lemmas = self.tr.table.refine(model)
            if not lemmas:
                break
            self._add(lemmas)
        return SmtOutcome("unknown", {}, self.tr.uses_functions,
                          f"z3's model could not be confirmed in exact arithmetic: {why}")

    def _check(self, assumptions) -> z3.CheckSatResult:
        """``solver.check(*assumptions)`` without z3py's per-literal casts (a long chain asks often)."""
        if not self._incremental:
            fresh = z3.Solver()
            fresh.set("timeout", self._timeout_ms)
            fresh.add(*self.assertions)
            self.solver = fresh
        array = (z3.Ast * len(assumptions))(*[a.as_ast() for a in assumptions])
        ctx = self.solver.ctx
        if WATCH is not None:
            WATCH.value = time.monotonic() + self._timeout_ms / 1000
        try:
            r = z3core.Z3_solver_check_assumptions(ctx.ref(), self.solver.solver, len(assumptions), array)
        except z3.Z3Exception:
            return self.solver.check(*assumptions)
        finally:
            if WATCH is not None:
                WATCH.value = 0.0
        return z3.CheckSatResult(r)

    def minimal_core(self, core, goal: bool = False) -> tuple:
        """A minimal unsatisfiable subset of ``core`` (deletion: drop each label that is not needed)."""
        keep = [c for c in core if c in self.literal]
        for label in list(keep):
            if label not in keep:
                continue
            trial = [c for c in keep if c != label]
            out = self.check(trial, goal=goal, confirm=False)
            if out.status == "unsat":
                keep = [c for c in trial if c in out.core] if out.core else trial
        return tuple(c for c in self.literal if c in keep) + tuple(c for c in self.signs if c in core)

    def _remaining(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.monotonic()

    def _point(self, model) -> dict:
        """The model's value of every symbol, exactly (low-level API: a long chain asks this often)."""
        ctx, out = model.ctx.ref(), {}
        if len(self._decls) != len(self.tr.vars):
            self._decls = [(name, v, v.decl().ast) for name, v in self.tr.vars.items()]
        for name, v, decl in self._decls:
            value = None
            try:
                a = z3core.Z3_model_get_const_interp(ctx, model.model, decl)
                if a:
                    value = fraction_of_string(z3core.Z3_get_numeral_string(ctx, a))
            except TooLarge:
                raise Untranslatable("a model value is too large to confirm") from None
            except (z3.Z3Exception, ValueError):   # not a rational numeral (algebraic), or absent
                value = None
            out[name] = value if value is not None else _exact(model.eval(v, model_completion=True))
        return out

    # -- confirmation -----------------------------------------------------------------------
    def confirm(self, point: dict, active, goal: bool):
        """``(point, "")`` if the exact values satisfy every active hypothesis (with its domain)
        and the symbols' signs, and (with ``goal``) violate the conclusion or its domain;
        else ``(None, reason)``.

        z3's values are rational (or algebraic); where a hypothesis ``s = e``, ``s <= e`` or
        ``s >= e`` (``s`` a symbol) fails or cannot be decided there, ``s`` is set to the exact
        value of ``e`` (``log(3/2)``, ``exp(1)``) and the point checked again: the boundary
        points of transcendental constraints are rarely rational.
        """
        env, tried = dict(point), set()
        why = ""
        for _ in range(min(len(active), 20) + 1):
            failing, why = self._confirm_once(env, active, goal)
            if failing is None:
                return env, ""
            fix = self._definition(failing)
            if not failing or fix is None or fix[0] in tried:
                break
            tried.add(fix[0])
            try:
                env[fix[0]] = _rigorous.Evaluator(env).value(fix[1])
            except (_rigorous.Undefined, _rigorous.Undecided):
                break
        return None, why

    def _definition(self, label: str):
        """``(name, e)`` when hypothesis ``label`` reads ``name op e`` (op in =, <=, >=), else None."""
        rel = self.hypotheses[label].relation if label in self.hypotheses else None
        if not isinstance(rel, (sp.Equality, sp.LessThan, sp.GreaterThan)):
            return None
        for s, e in ((rel.lhs, rel.rhs), (rel.rhs, rel.lhs)):
            if isinstance(s, sp.Symbol) and s not in e.free_symbols and not s.name.startswith("!"):
                return s.name, e
        return None

    def _confirm_once(self, env: dict, active, goal: bool):
        """``(None, "")`` if confirmed; else ``(label of the failing hypothesis or "", reason)``."""
        ev = _rigorous.Evaluator(env)
        for name, sym in self._signed:
            v = env.get(name)
            if v is not None and not _sign_ok(sym, v):
                return "", f"the sign assumption of {name} fails at z3's point"
        for label in active:
            h = self.hypotheses[label]
            fast = self._linear.get(label)
            try:
                if fast is not None:
                    if not _linear_holds(fast, env):
                        return label, f"{label} does not hold at z3's point"
                elif not all(ev.holds(d) for d in h.conditions()) or not ev.holds(h.relation):
                    return label, f"{label} does not hold at z3's point"
            except (_rigorous.Undefined, _rigorous.Undecided) as exc:
                return label, f"{label} not decided at z3's point ({exc})"
        if goal:
            fails, why = self._goal_fails(ev)
            return (None, "") if fails else ("", why)
        return None, ""

    def _goal_fails(self, ev):
        try:
            for d in self.goal_domain:
                if not ev.holds(d):
                    return True, ""
            if not ev.holds(self.conclusion):
                return True, ""
        except _rigorous.Undefined:
            return True, ""
        except _rigorous.Undecided as exc:
            return False, f"the conclusion is not decided at z3's point ({exc})"
        return False, "the conclusion holds at z3's point"


def entails(premises, conclusion, timeout_s: float = 5.0) -> SmtOutcome:
    """Whether ``premises`` (sympy relations, side conditions included) entail ``conclusion``.

    Returns:
        "unsat": entailed; "sat": not entailed, with a countermodel (symbol name ->
        exact value) satisfying every premise and violating the conclusion, confirmed in
        exact arithmetic; "unknown" on timeout, incompleteness or an unconfirmable model.

    Raises:
        Untranslatable: an expression outside the supported fragment.
    """
    hyps = [Hypothesis(f"p{i}", rel) for i, rel in enumerate(premises)]
    return Problem(hyps, conclusion, timeout_s=timeout_s).check()


def satisfiable(relations, timeout_s: float = 5.0) -> SmtOutcome:
    """Whether the conjunction of ``relations`` has a real model (consistency check)."""
    hyps = [Hypothesis(f"p{i}", rel) for i, rel in enumerate(relations)]
    return Problem(hyps, timeout_s=timeout_s).check(goal=False)


def confirm(countermodel: dict, premises, conclusion) -> bool:
    """True when the exact values satisfy every premise (and its domain) and violate ``conclusion``."""
    env = {k: (Fraction(v) if isinstance(v, (int, float)) else v) for k, v in countermodel.items()}
    ev = _rigorous.Evaluator(env)
    try:
        for p in premises:
            if not (all(ev.holds(d) for d in domain_of(p)) and ev.holds(p)):
                return False
    except (_rigorous.Undefined, _rigorous.Undecided):
        return False
    try:
        return not (all(ev.holds(d) for d in domain_of(conclusion)) and ev.holds(conclusion))
    except _rigorous.Undefined:
        return True
    except _rigorous.Undecided:
        return False
