"""User proof chains: a TOML file of premises and a conclusion, checked like a theorem.

::

    name = "my variant"
    assume = ["epsM >= 0", "dR >= 0"]            # side conditions
    premises = ["Rnew <= RSnew + epsM", "RSnew = RSjump - dERM"]
    conclusion = "Lnew <= Lold - dR/2 - dERM + 2*epsM"

Formulas go through the restricted grammar of :mod:`proofs_check._parser` (never
``sympify``), which also records the domain of each formula as written (``sqrt``, ``log``,
division, powers): premises' domains are assumed, the conclusion's is proved. Linear
chains get an exact Farkas certificate (exact rational LP) and a z3 proof; non-linear
ones go to z3's non-linear real arithmetic (exp/log with the lemmas of
:mod:`proofs_check._transcendental`) with a timeout. One z3 solver answers every question
of a chain (consistency, entailment, necessity of each premise) through assumption
literals. Every symbol is real with no sign: signs must be stated in ``assume``.

Verdicts (``ChainResult.status``): ``entailed``; ``not entailed`` (a countermodel confirmed
in exact arithmetic); ``vacuous`` (the premises contradict each other: a minimal
inconsistent subset is named; not a useful certificate, exit code 1); ``unknown``
(``entailed`` is ``None``: timeout, or a model that could not be confirmed). The size
of a chain is bounded (:data:`proofs_check.LIMITS`).
"""
from __future__ import annotations

import dataclasses
import time
import tomllib
from pathlib import Path
from typing import Mapping

import sympy as sp

from plumbing.config import MAX_NESTING, nesting_depth
from plumbing.validation import InputError, MISSING
from proofs_check import _rigorous, _smt
from proofs_check._limits import LIMITS
from proofs_check._parser import ChainSyntaxError, parse_formula
from proofs_check._results import Check
from proofs_check._verify import (DEFAULT_TIMEOUT_S, _agreement, farkas_check, hypotheses, problem_consistency,
                                  problem_entailment, problem_necessity)

_KEYS = {"name": "a string", "assume": "a list of strings", "premises": "a list of strings",
         "conclusion": "a string"}


@dataclasses.dataclass(frozen=True)
class _ChainPremise:
    name: str
    relation: object


@dataclasses.dataclass(frozen=True)
class Chain:
    """A parsed user chain (duck-types the parts of :class:`bounds.Theorem` the checks read).

    ``domains`` maps ``premises[i]``, ``assume[i]`` and ``conclusion`` to the domain of the
    text as written (:func:`proofs_check.parse_formula`).
    """

    name: str
    conclusion: object
    premises: tuple[_ChainPremise, ...]
    side_conditions: tuple = ()
    texts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    domains: Mapping[str, tuple] = dataclasses.field(default_factory=dict)

    @property
    def side_labels(self) -> tuple[str, ...]:
        return tuple(f"assume[{i}]" for i in range(len(self.side_conditions)))


@dataclasses.dataclass(frozen=True)
class ChainResult:
    """The verdict on a chain.

    ``entailed``: True (proved, premises not shown contradictory), False (a confirmed
    countermodel, or vacuous premises), None (unknown). ``status``: "entailed", "not
    entailed", "vacuous", "unknown" or "engines disagree". ``vacuous``: True when the
    premises contradict each other (``inconsistent_premises`` is a minimal subset), False
    when a model of them was confirmed, None when undecided. ``reason`` says why in words.
    ``countermodel`` maps names to exact values (Fraction or exact sympy constants).
    """

    name: str
    entailed: bool | None
    status: str
    checks: tuple[Check, ...]
    countermodel: Mapping[str, object] | None
    vacuous: bool | None = None
    reason: str = ""
    inconsistent_premises: tuple[str, ...] = ()

    @property
    def engines(self) -> dict[str, str]:
        return {c.name.split("/")[1]: c.status for c in self.checks if c.name.startswith("entailment/")}

    def to_dict(self) -> dict:
        cm = self.countermodel
        return {"name": self.name, "entailed": self.entailed, "status": self.status, "vacuous": self.vacuous,
                "reason": self.reason, "inconsistent_premises": list(self.inconsistent_premises),
                "engines": self.engines,
                "countermodel": None if cm is None else {k: _rigorous.to_float(v) for k, v in cm.items()},
                "countermodel_exact": None if cm is None else {k: _rigorous.exact_string(v) for k, v in cm.items()},
                "checks": [c.to_dict() for c in self.checks]}


def _strings(data: Mapping, key: str, required: bool) -> list[str]:
    if key not in data:
        if required:
            raise InputError(key, _KEYS[key], MISSING)
        return []
    value = data[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(key, _KEYS[key], value)
    return value


def parse_chain(data: Mapping, default_name: str = "chain") -> Chain:
    """A :class:`Chain` from the TOML mapping (keys ``name``, ``assume``, ``premises``, ``conclusion``).

    Raises:
        InputError: a missing/unknown key, a value of the wrong type, or a chain beyond
            :data:`proofs_check.LIMITS` (names the key).
        ChainSyntaxError: a malformed formula (names e.g. ``premises[2]`` and the column).

    Example:
        >>> c = parse_chain({"premises": ["a <= b", "b <= c"], "conclusion": "a <= c"})
        >>> check_chain(c).entailed
        True
    """
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise InputError(unknown[0], f"one of {sorted(_KEYS)}", data[unknown[0]])
    name = data.get("name", default_name)
    if not isinstance(name, str):
        raise InputError("name", _KEYS["name"], name)
    if not isinstance(data.get("conclusion", MISSING), str):
        raise InputError("conclusion", _KEYS["conclusion"], data.get("conclusion", MISSING))
    assume, texts = _strings(data, "assume", False), _strings(data, "premises", True)
    if len(assume) + len(texts) > LIMITS.max_formulas:
        raise InputError("premises", f"at most {LIMITS.max_formulas} premises and assumptions together",
                         f"{len(texts)} premises and {len(assume)} assumptions")
    labelled = {**{f"premises[{i}]": t for i, t in enumerate(texts)}, **{f"assume[{i}]": t for i, t in enumerate(assume)},
                "conclusion": data["conclusion"]}
    parsed = {label: parse_formula(t, label) for label, t in labelled.items()}
    _check_size(parsed)
    premises = tuple(_ChainPremise(f"premises[{i}]", parsed[f"premises[{i}]"].relation) for i in range(len(texts)))
    return Chain(name, parsed["conclusion"].relation, premises,
                 tuple(parsed[f"assume[{i}]"].relation for i in range(len(assume))), labelled,
                 {label: f.domain for label, f in parsed.items()})


def _check_size(parsed: Mapping) -> None:
    """At most LIMITS.max_symbols names and LIMITS.max_transcendental_terms exp/log/constant terms."""
    symbols, terms = set(), set()
    for f in parsed.values():
        for rel in (f.relation, *f.domain):
            if isinstance(rel, sp.Basic):
                symbols |= {s for s in rel.free_symbols if not s.name.startswith("!")}
                terms |= rel.atoms(sp.exp, sp.log, sp.NumberSymbol)
    if len(symbols) > LIMITS.max_symbols:
        raise InputError("premises", f"a chain with at most {LIMITS.max_symbols} distinct names",
                         f"{len(symbols)} names")
    if len(terms) > LIMITS.max_transcendental_terms:
        raise InputError("premises", f"a chain with at most {LIMITS.max_transcendental_terms} distinct exp/log/"
                         "constant terms", f"{len(terms)} terms")


def load_chain(path: str | Path) -> Chain:
    """Read (at most LIMITS.max_file_bytes bytes) and parse a chain TOML file.

    Raises:
        InputError: not a regular file (a FIFO is refused, never opened), unreadable, too large or
            invalid TOML (names the file and the error).
        ChainSyntaxError: a malformed formula.
    """
    path = Path(path)
    try:   # a FIFO or a device would block or never end: only a regular file is opened
        if path.exists() and not path.is_file():
            raise InputError("--chain", f"a regular TOML file of at most {LIMITS.max_file_bytes} bytes (not a FIFO, "
                             "device or folder: never opened)", str(path))
        with open(path, "rb") as fh:
            raw = fh.read(LIMITS.max_file_bytes + 1)
    except OSError as exc:
        raise InputError("--chain", "a readable TOML file", f"{path} ({exc.strerror})") from None
    if len(raw) > LIMITS.max_file_bytes:
        raise InputError("--chain", f"a file of at most {LIMITS.max_file_bytes} bytes",
                         f"{path} (more than {LIMITS.max_file_bytes} bytes)")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("--chain", "valid TOML", f"{path} ({exc})") from None
    except RecursionError:
        raise InputError("--chain", "valid TOML of moderate nesting", f"{path} (nested too deeply)") from None
    if nesting_depth(data) > MAX_NESTING:      # dotted keys nest without the parser's recursion
        raise InputError("--chain", f"valid TOML nested at most {MAX_NESTING} deep", f"{path} (nested too deeply)")
    return parse_chain(data, default_name=path.stem)


def check_chain(chain: Chain, timeout_s: float = DEFAULT_TIMEOUT_S, necessity: bool = True,
                budget_s: float | None = None) -> ChainResult:
    """Does the chain's conclusion follow from its premises and assumptions, non-vacuously?

    One z3 solver answers, through assumption literals: are the premises consistent
    (else: vacuous, with a minimal inconsistent subset)? does the conclusion follow
    (else: a countermodel confirmed in exact arithmetic, or unknown)? is each premise
    needed (``necessity``; a premise outside the unsat core is superfluous without a
    query)? An exact Farkas certificate is searched beside it; an exact certificate or an
    exact z3 proof suffices, and a floating-point "no" never outvotes either. All
    queries share the budget ``LIMITS.max_seconds``, a non-linear chain's at most ``budget_s``. In
    this process z3's timeout is all that bounds a query; ``depthcert prove --chain`` runs
    this in a child process with hard limits (:func:`proofs_check._isolate.check_chain_limited`).

    Returns:
        :class:`ChainResult`.
    """
    start = time.monotonic()
    hyps = hypotheses(chain)
    try:
        problem = _smt.Problem(hyps, chain.conclusion, chain.domains.get("conclusion", ()), timeout_s,
                               start + LIMITS.max_seconds)
    except _smt.Untranslatable as exc:
        check = Check(chain.name, "entailment/z3", "UNKNOWN", "z3", str(exc))
        return ChainResult(chain.name, None, "unknown", (check,), None, reason=str(exc))
    if budget_s is not None and not problem.linear:   # non-linear queries may each take the whole timeout
        problem.deadline = start + min(budget_s, LIMITS.max_seconds)
    if _smt.WATCH_CHAIN is not None:                    # a watcher (proofs_check._isolate) stops us past it
        _smt.WATCH_CHAIN.value = problem.deadline
    consistency, core = problem_consistency(chain.name, problem)
    if consistency.status == "FAIL":
        return _vacuous(chain, (consistency,), core)
    farkas = farkas_check(chain.name, [(h.label, h.relation) for h in hyps], chain.conclusion,
                          goal_domain=problem.goal_domain, hypotheses=hyps, timeout_s=2 * timeout_s)
    if farkas.status == "FINDING":   # an exactly verified certificate that does not use the conclusion
        return _vacuous(chain, (consistency, farkas), tuple(k for k in farkas.certificate))
    smt, outcome = problem_entailment(chain.name, problem)
    result = _verdict(chain.name, consistency, farkas, smt)
    if result.entailed and necessity:
        core = outcome.core if outcome.status == "unsat" else None
        checks = problem_necessity(chain.name, problem, [p.name for p in chain.premises], core)
        result = dataclasses.replace(result, checks=result.checks + tuple(checks))
    return result


def _verdict(name: str, consistency: Check, farkas: Check, smt: Check) -> ChainResult:
    """Combine the checks: an exact proof (z3 or certificate) entails, a confirmed countermodel refutes."""
    checks = (consistency, farkas, smt)
    disagreement = _agreement(name, farkas, smt)
    vacuous = {"PASS": False}.get(consistency.status)
    if disagreement:
        return ChainResult(name, None, "engines disagree", checks + tuple(disagreement), None, vacuous,
                           disagreement[0].detail)
    if smt.status == "FAIL":
        return ChainResult(name, False, "not entailed", checks, smt.countermodel, vacuous,
                           "a countermodel (confirmed in exact arithmetic) satisfies every premise and violates "
                           "the conclusion or its domain")
    if "PASS" not in (smt.status, farkas.status):
        return ChainResult(name, None, "unknown", checks, None, vacuous,
                           f"no proof and no confirmed countermodel: {smt.detail}")
    reason = "entailed" if vacuous is False else ("entailed, but the consistency of the premises is not "
                                                  f"confirmed ({consistency.detail})")
    return ChainResult(name, True, "entailed", checks, None, vacuous, reason)


def _vacuous(chain: Chain, checks: tuple, core: tuple) -> ChainResult:
    shown = "; ".join(f"{k}: {chain.texts.get(k, k)}" for k in core)
    reason = (f"the premises contradict each other, so every conclusion would follow (not a useful "
              f"certificate); a minimal inconsistent subset is {shown}")
    return ChainResult(chain.name, False, "vacuous", checks, None, True, reason, tuple(core))


__all__ = ["Chain", "ChainResult", "ChainSyntaxError", "check_chain", "load_chain", "parse_chain"]
