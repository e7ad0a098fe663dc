"""The reproduce study: every empirical claim of THEORY §8-§9, measured and decided (``depthcert reproduce``).

:func:`reproduce` runs the sweeps of a :class:`Suite` (resumable, through
:mod:`numerics.studies.sweeps`), measures each claim of the registry
(:data:`numerics.studies.reproduce._claims.CLAIMS`: claims as data, each naming its
study by import path and its decision rule, fixed in code before running), and writes
``DIR/report.md`` (one row per claim: what the paper says, what we measured with
intervals, the verdict), ``DIR/claims.json`` and the figures under ``DIR/figures``.
Claims whose study does not exist yet are reported as ``not run``.

Suites: ``quick`` (< 10 min on 2 CPU cores) and ``full`` (sized for a bigger machine or a
Ray cluster; :attr:`Suite.expected` says how long it should take).
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Mapping

from plumbing.io import atomic_write_text, dumps, versions
from plumbing.validation import InputError
from plumbing.config import merge_config
from numerics.studies.reproduce import _suites as suites
from numerics.studies.reproduce._claims import CLAIM_SETS, CLAIMS, Claim, NotRun, decide, resolve_study
from numerics.studies.reproduce._report import render_report
from numerics.studies.sweeps import make_spec, sweep

__all__ = ["CLAIMS", "CLAIM_SETS", "NotRun", "SUITES", "ClaimResult", "ReproduceContext", "ReproduceReport", "Suite", "default_workers",
           "reproduce"]


@dataclasses.dataclass(frozen=True)
class Suite:
    """The sizes of one reproduction: sweeps (base config, grid), the growth study, the bootstrap."""

    name: str
    sweeps: Mapping[str, Mapping[str, Any]]
    growth: Mapping[str, Any]
    n_boot: int
    expected: str
    validity: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    ag_max: Mapping[str, Any] = dataclasses.field(default_factory=dict)   # AG_max vs depth (Paper B)
    claims: str = "teacher"                      # the claim set (CLAIM_SETS) this suite decides
    power: Mapping[str, Any] = dataclasses.field(default_factory=dict)    # pilot estimates (MNIST-1D suites)

    def specs(self) -> dict:
        """``{name: SweepSpec}``: each sweep validated by its ``validate`` (default: the run study's)."""
        return {name: _spec(s) for name, s in self.sweeps.items()}

    def n_cells(self) -> int:
        return sum(len(spec.cells) for spec in self.specs().values())


def _spec(s: Mapping):
    from numerics.studies.reproduce._claims import resolve_study

    validate = resolve_study(s["validate"]) if "validate" in s else None
    return make_spec(s["base"], s["grid"], s.get("zip"), validate=validate)


SUITES: Mapping[str, Suite] = {name: Suite(name, **spec) for name, spec in suites.SUITES.items()}


@dataclasses.dataclass(frozen=True)
class ReproduceContext:
    """What a claim's study receives: the suite, the output folder, the sweep folders, run options."""

    suite: Suite
    out_dir: Path
    sweeps: Mapping[str, Path]
    options: Mapping[str, Any]
    cache: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """One row of the report."""

    claim: Claim
    verdict: str
    measured: str
    evidence: Mapping[str, Any] | None
    conventions: tuple | None = None     # [{convention, statistic, verdict, mde, ...}]

    def to_dict(self) -> dict:
        c = self.claim
        return {"id": c.id, "source": c.source, "paper_says": c.paper_says, "seed_words": c.seed_words,
                "seed": c.seed, "choice": c.choice, "open_conventions": c.conventions, "study": c.study,
                "statistic": c.statistic, "rule": c.rule.text(), "verdict": self.verdict,
                "conventions": list(self.conventions) if self.conventions else [],
                "measured": self.measured, "evidence": self.evidence}


@dataclasses.dataclass(frozen=True)
class ReproduceReport:
    """Everything ``report.md`` shows."""

    suite: str
    out_dir: str
    claims: tuple[ClaimResult, ...]
    wall_s: float
    sweeps: Mapping[str, Any]
    versions: Mapping[str, str]
    expected: str

    def to_dict(self) -> dict:
        return {"suite": self.suite, "out_dir": self.out_dir, "wall_s": self.wall_s, "expected": self.expected,
                "sweeps": dict(self.sweeps), "versions": dict(self.versions),
                "claims": [c.to_dict() for c in self.claims]}


def default_workers(backend: str) -> int | None:
    """Local: one single-threaded worker per core (cells are small); Ray: its own scheduling."""
    from numerics.studies.sweeps import available_cores

    return available_cores() if backend == "local" else None


def _suite(name: str) -> Suite:
    if name not in SUITES:
        raise InputError("--suite", f"one of {sorted(SUITES)}", name)
    return SUITES[name]


def _run_sweeps(suite: Suite, out: Path, options: Mapping) -> dict:
    from numerics.studies.sweeps import DEFAULT_RUNNER

    done = {}
    for name, spec in suite.specs().items():
        runner = suite.sweeps[name].get("runner", DEFAULT_RUNNER)
        done[name] = sweep(spec, out / "sweeps" / name, runner=runner, **options).to_dict()
    return done


def _measure(claim: Claim, ctx: ReproduceContext) -> ClaimResult:
    fn = resolve_study(claim.study)
    if fn is None:
        return ClaimResult(claim, "not run", f"not run: {claim.study} does not exist yet", None)
    try:
        ev = dict(fn(ctx))
    except NotRun as exc:          # the study refuses this workload (e.g. run/validity before they support it)
        return ClaimResult(claim, "not run", f"not run: {exc}", None)
    except (ValueError, ArithmeticError) as exc:   # a fit or a study that cannot decide on this data
        return ClaimResult(claim, "inconclusive", f"the study could not be carried out: {exc}", None)
    verdict, conventions = decide(claim, ev)
    return ClaimResult(claim, verdict, ev["measured"], ev, tuple(conventions) if conventions else None)


def _overridden(s: Suite, overrides: Mapping) -> Suite:
    growth = {**s.growth, "config": merge_config(s.growth["config"], overrides)} if s.growth else {}
    return dataclasses.replace(s, sweeps={k: {**v, "base": merge_config(v["base"], overrides)}
                                          for k, v in s.sweeps.items()}, growth=growth,
                               validity={**s.validity, "config": merge_config(s.validity.get("config", {}), overrides)})


def _relative(obj, out: Path):
    """Every path under ``out`` written relative to it (``"."`` for ``out`` itself): a stored report names
    its own files, never the folder of the machine that ran it."""
    root = str(out)
    if isinstance(obj, dict):
        return {k: _relative(v, out) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_relative(v, out) for v in obj]
    if isinstance(obj, str) and (obj == root or obj.startswith(root + "/")):
        return obj[len(root) + 1:] or "."
    return obj


def reproduce(suite: str, out_dir: str | Path, *, backend: str = "local", workers: int | None = None,
              threads: int | None = None, address: str | None = None, progress: bool = True,
              overrides: Mapping | None = None) -> ReproduceReport:
    """Run the ``suite`` (resumable), measure and decide every claim, write the report.

    Args:
        suite: ``"quick"`` or ``"full"``.
        out_dir: ``DIR``; ``DIR/report.md``, ``DIR/claims.json``, ``DIR/figures``,
            ``DIR/sweeps/<name>/`` (a re-run reuses every stored cell).
        backend, workers, threads, address, progress: as for :func:`numerics.studies.sweeps.sweep`.
        overrides: merged into every sweep's base config (e.g. smaller sizes in tests).

    Raises:
        InputError: an unknown suite, or bad sweep options.
    """
    from plumbing.io import check_writable_dir
    from numerics.studies.sweeps import resolve_parallelism

    t0, s, out = time.perf_counter(), _suite(suite), Path(out_dir)
    resolve_parallelism(backend, workers, threads)   # bad options fail before anything runs
    check_writable_dir(out)
    if overrides:
        s = _overridden(s, overrides)
    options = {"backend": backend, "workers": workers, "threads": threads, "address": address, "progress": progress}
    ran = _run_sweeps(s, out, options)
    ctx = ReproduceContext(s, out, {k: out / "sweeps" / k for k in s.sweeps}, options)
    results = tuple(_measure(c, ctx) for c in CLAIM_SETS[s.claims])
    report = ReproduceReport(suite, str(out), results, time.perf_counter() - t0, ran, versions(), s.expected)
    atomic_write_text(out / "claims.json", dumps(_relative(report.to_dict(), out), indent=2) + "\n")
    atomic_write_text(out / "report.md", render_report(report, out))
    return report
