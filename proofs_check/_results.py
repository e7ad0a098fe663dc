"""Immutable result objects of the checks (one :class:`Check` per line of the report)."""
from __future__ import annotations

import dataclasses
from typing import Mapping

#: Statuses that do not make a theorem fail: a FINDING (e.g. a superfluous premise) is
#: reported, N/A means an engine does not apply. SKIP (a check that did not run) fails.
OK_STATUSES = ("PASS", "FINDING", "N/A")
STATUSES = OK_STATUSES + ("FAIL", "UNKNOWN", "SKIP")


def _number(v):
    """A JSON number: floats as they are, exact values (Fraction, exact sympy constants) as the
    nearest float, ``None`` beyond float range (the exact value is in ``countermodel_exact``)."""
    if isinstance(v, (int, float)) or v is None:
        return v
    from proofs_check._rigorous import to_float

    return to_float(v)


def _exact(v) -> str:
    from proofs_check._rigorous import exact_string

    return exact_string(v) if not isinstance(v, (int, float)) else repr(v)


@dataclasses.dataclass(frozen=True)
class Check:
    """One check: ``status`` in PASS/FAIL/FINDING/UNKNOWN/N/A/SKIP, by ``engine``.

    ``certificate`` maps premise labels to exact multipliers (strings such as ``"1/2"``);
    ``countermodel`` maps symbol names to numbers (exact: Fraction or exact sympy constants;
    ``to_dict`` gives floats, ``None`` beyond float range, and the exact strings in
    ``countermodel_exact``).
    """

    subject: str
    name: str
    status: str
    engine: str
    detail: str = ""
    certificate: Mapping[str, str] | None = None
    countermodel: Mapping[str, object] | None = None
    seconds: float = 0.0

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status == {self.status!r}, must be one of {list(STATUSES)}.")

    @property
    def ok(self) -> bool:
        return self.status in OK_STATUSES

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        if self.countermodel is not None:
            out["countermodel"] = {k: _number(v) for k, v in self.countermodel.items()}
            out["countermodel_exact"] = {k: _exact(v) for k, v in self.countermodel.items()}
        if self.certificate is not None:
            out["certificate"] = dict(self.certificate)
        return out


@dataclasses.dataclass(frozen=True)
class TheoremResult:
    """All checks of one theorem (or mutant); ``ok`` iff every check is in OK_STATUSES."""

    theorem: str
    reference: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def check(self, name: str) -> Check:
        """The check called ``name`` (e.g. ``"entailment/z3"``, ``"necessity/selection_C2"``)."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"name == {name!r}, must be one of {[c.name for c in self.checks]}.")

    @property
    def engines(self) -> dict[str, str]:
        """Which engine decided entailment and how (``{"farkas": "PASS", "z3": "PASS"}``)."""
        return {c.name.split("/")[1]: c.status for c in self.checks if c.name.startswith("entailment/")}

    def to_dict(self) -> dict:
        return {"theorem": self.theorem, "reference": self.reference, "ok": self.ok,
                "checks": [c.to_dict() for c in self.checks]}


@dataclasses.dataclass(frozen=True)
class MutantResult:
    """A wrong variant and its verification; ``rejected`` iff ``target`` FAILs with a countermodel."""

    name: str
    description: str
    target: str
    result: TheoremResult

    @property
    def rejected(self) -> bool:
        c = self.result.check(self.target)
        return c.status == "FAIL" and bool(c.countermodel) and not self.result.ok

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "target": self.target,
                "rejected": self.rejected, "result": self.result.to_dict()}


@dataclasses.dataclass(frozen=True)
class ProveReport:
    """``depthcert prove``: every theorem, every mutant, the side algebra."""

    theorems: tuple[TheoremResult, ...]
    mutants: tuple[MutantResult, ...]
    side_algebra: tuple[Check, ...]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (all(t.ok for t in self.theorems) and all(m.rejected for m in self.mutants)
                and all(c.ok for c in self.side_algebra))

    def to_dict(self) -> dict:
        return {"ok": self.ok, "seconds": self.seconds,
                "theorems": [t.to_dict() for t in self.theorems],
                "mutants": [m.to_dict() for m in self.mutants],
                "side_algebra": [c.to_dict() for c in self.side_algebra]}
