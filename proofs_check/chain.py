"""User proof chains: a TOML file of premises and a conclusion, checked like a theorem.

::

    name = "my variant"
    assume = ["epsM >= 0", "dR >= 0"]            # side conditions
    premises = ["Rnew <= RSnew + epsM", "RSnew = RSjump - dERM"]
    conclusion = "Lnew <= Lold - dR/2 - dERM + 2*epsM"

Formulas go through the restricted grammar of :mod:`proofs_check._parser` (never
``sympify``). Linear chains get an exact Farkas certificate and a z3 proof; non-linear
ones go to z3's non-linear real arithmetic with a timeout; the result says which engine
decided. Every symbol is real with no sign: signs must be stated in ``assume``.
"""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Mapping

from bounds._validation import MISSING, InputError
from proofs_check._parser import ChainSyntaxError, parse_relation
from proofs_check._results import Check
from proofs_check._verify import (DEFAULT_TIMEOUT_S, _agreement, consistency_check, farkas_check, necessity_checks,
                                  z3_check)

_KEYS = {"name": "a string", "assume": "a list of strings", "premises": "a list of strings",
         "conclusion": "a string"}


@dataclasses.dataclass(frozen=True)
class _ChainPremise:
    name: str
    relation: object


@dataclasses.dataclass(frozen=True)
class Chain:
    """A parsed user chain (duck-types the parts of :class:`bounds.Theorem` the checks read)."""

    name: str
    conclusion: object
    premises: tuple[_ChainPremise, ...]
    side_conditions: tuple = ()
    texts: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class ChainResult:
    """``entailed``: True (proved), False (countermodel or no proof), with the engines' checks."""

    name: str
    entailed: bool
    status: str                 # "entailed", "not entailed" or "unknown"
    checks: tuple[Check, ...]
    countermodel: Mapping[str, object] | None

    @property
    def engines(self) -> dict[str, str]:
        return {c.name.split("/")[1]: c.status for c in self.checks if c.name.startswith("entailment/")}

    def to_dict(self) -> dict:
        cm = None if self.countermodel is None else {k: float(v) for k, v in self.countermodel.items()}
        return {"name": self.name, "entailed": self.entailed, "status": self.status,
                "engines": self.engines, "countermodel": cm, "checks": [c.to_dict() for c in self.checks]}


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
        InputError: a missing/unknown key or a value of the wrong type (names the key).
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
    assume = [parse_relation(t, f"assume[{i}]") for i, t in enumerate(_strings(data, "assume", False))]
    texts = _strings(data, "premises", True)
    premises = tuple(_ChainPremise(f"premises[{i}]", parse_relation(t, f"premises[{i}]")) for i, t in enumerate(texts))
    conclusion = parse_relation(data["conclusion"], "conclusion")
    return Chain(name, conclusion, premises, tuple(assume),
                 {f"premises[{i}]": t for i, t in enumerate(texts)} | {"conclusion": data["conclusion"]})


def load_chain(path: str | Path) -> Chain:
    """Read and parse a chain TOML file.

    Raises:
        InputError: unreadable file or invalid TOML (names the file and the TOML error).
        ChainSyntaxError: a malformed formula.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError("--chain", "a readable TOML file", f"{path} ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("--chain", "valid TOML", f"{path} ({exc})") from None
    return parse_chain(data, default_name=path.stem)


def check_chain(chain: Chain, timeout_s: float = DEFAULT_TIMEOUT_S, necessity: bool = True) -> ChainResult:
    """Does the chain's conclusion follow from its premises and assumptions?

    Farkas (exact, linear over monomial atoms) and z3 (linear or non-linear real
    arithmetic) both run; z3 decides, Farkas gives the certificate. With ``necessity``,
    one more z3 query per premise reports superfluous premises as findings.

    Returns:
        :class:`ChainResult` with ``entailed``, ``status``, the checks and, when not
        entailed, z3's ``countermodel`` (symbol name -> number).
    """
    labelled = [(p.name, p.relation) for p in chain.premises]
    labelled += [(f"assume[{i}]", c) for i, c in enumerate(chain.side_conditions)]
    relations = [rel for _, rel in labelled]
    checks = [farkas_check(chain.name, labelled, chain.conclusion),
              z3_check(chain.name, "entailment/z3", relations, chain.conclusion, timeout_s)]
    smt = checks[1]
    disagreement = _agreement(chain.name, checks[0], smt)
    checks += disagreement
    entailed = not disagreement and (smt.status == "PASS" or checks[0].status == "PASS")
    if entailed:
        checks += _vacuity(chain.name, relations, timeout_s)
    if entailed and necessity:
        checks += necessity_checks(chain, timeout_s)
    status = ("entailed" if entailed else "engines disagree" if disagreement
              else "not entailed" if smt.status == "FAIL" else "unknown")
    return ChainResult(chain.name, entailed, status, tuple(checks), smt.countermodel if not entailed else None)


def _vacuity(name: str, relations: list, timeout_s: float) -> list[Check]:
    """An inconsistent chain entails everything: report it as a FINDING, not a proof."""
    c = consistency_check(name, relations, timeout_s)
    if c.status == "FAIL":
        c = Check(c.subject, c.name, "FINDING", c.engine, c.detail, seconds=c.seconds)
    return [c]


__all__ = ["Chain", "ChainResult", "ChainSyntaxError", "check_chain", "load_chain", "parse_chain"]
