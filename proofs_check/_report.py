"""Human-readable reports: one line per check (PASS/FAIL/FINDING/...), certificates, countermodels."""
from __future__ import annotations

from fractions import Fraction

from proofs_check._results import Check, ProveReport

_WIDTH = 44


def _num(v) -> str:
    if isinstance(v, Fraction):
        return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def format_countermodel(cm) -> str:
    """``name=value, ...`` with exact fractions where z3 gave them."""
    return ", ".join(f"{k}={_num(v)}" for k, v in cm.items())


def format_certificate(cert) -> str:
    """``conclusion = 1*premise_a + 1/2*premise_b`` (multipliers of ``lhs - rhs <= 0`` forms)."""
    return " + ".join(f"{v}*[{k}]" for k, v in cert.items())


def format_check(c: Check) -> list[str]:
    """One line for the check, plus indented lines for its certificate and countermodel."""
    lines = [f"{c.status:<8}{c.name:<{_WIDTH}} [{c.engine}] {c.detail} ({c.seconds * 1000:.0f} ms)"]
    if c.certificate:
        lines.append(f"{'':8}certificate: {format_certificate(c.certificate)}")
    if c.countermodel:
        lines.append(f"{'':8}countermodel: {format_countermodel(c.countermodel)}")
    return lines


def format_report(report: ProveReport) -> str:
    """The text of ``depthcert prove``: theorems, mutants, side algebra, verdict."""
    lines = []
    for t in report.theorems:
        lines.append(f"== {t.theorem} ({t.reference}): {'VERIFIED' if t.ok else 'NOT VERIFIED'}")
        for c in t.checks:
            lines += format_check(c)
    if report.mutants:
        lines.append("== mutants (wrong variants: each must be rejected with a countermodel)")
    for m in report.mutants:
        c = m.result.check(m.target)
        verdict = "PASS" if m.rejected else "FAIL"
        lines.append(f"{verdict:<8}{'mutant/' + m.name:<{_WIDTH}} {m.description}: "
                     f"{'rejected by' if m.rejected else 'NOT rejected by'} {m.target} [{c.engine}]")
        if c.countermodel:
            lines.append(f"{'':8}countermodel: {format_countermodel(c.countermodel)}")
    if report.side_algebra:
        lines.append("== side algebra (sympy)")
    for c in report.side_algebra:
        lines += format_check(c)
    n_rej = sum(m.rejected for m in report.mutants)
    lines.append(f"RESULT: {'OK' if report.ok else 'FAILED'}: {sum(t.ok for t in report.theorems)}/"
                 f"{len(report.theorems)} theorems verified, {n_rej}/{len(report.mutants)} mutants rejected, "
                 f"{sum(c.ok for c in report.side_algebra)}/{len(report.side_algebra)} side-algebra checks ok "
                 f"({report.seconds:.1f} s)")
    return "\n".join(lines)


def format_chain(result) -> str:
    """The text of ``depthcert prove --chain``: verdict, engines, checks, countermodel, reason."""
    engines = ", ".join(f"{k}: {v}" for k, v in result.engines.items())
    lines = [f"chain {result.name!r}: {result.status.upper()}" + (f" ({engines})" if engines else "")]
    for c in result.checks:
        lines += format_check(c)
    if result.countermodel is not None:
        lines.append(f"countermodel (premises hold, conclusion fails): "
                     f"{format_countermodel(result.countermodel) or '(no symbols)'}")
    if result.status != "entailed" or result.vacuous is not False:
        lines.append(f"{result.status.upper()}: {result.reason}")
    return "\n".join(lines)
