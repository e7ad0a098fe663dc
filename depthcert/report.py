"""Human-readable reports (plain-text tables) of route evaluations."""
from __future__ import annotations

import dataclasses

from bounds.regimes import DegenerateRegime
from bounds.routes import RoutesReport, Setup


def setup_dict(setup: Setup) -> dict:
    """The setup as plain JSON-able values."""
    return {f.name: (dict(v) if isinstance(v := getattr(setup, f.name), dict) else v)
            for f in dataclasses.fields(setup)}


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return "—" if v != v else f"{v:.6g}"
    return str(v)


def routes_table(rep: RoutesReport, regime: DegenerateRegime | None = None) -> str:
    """A two-column table (population | direct) of one setup's route evaluation."""
    pop, dire = rep.population.to_dict(), rep.direct.to_dict()
    rows = [("bound on L_test(f_new)", "bound"), ("improvement (L_test_old - bound)", "improvement"),
            ("failure probability", "failure_probability"), ("certified", "certified"),
            ("vacuous (failure prob >= 1)", "vacuous"), ("min M to certify", "min_M"),
            ("min K to certify", "min_K")]
    w = 34
    lines = [f"eps_M = {float(rep.eps_M):.6g}   eps_K = {float(rep.eps_K):.6g}   level = {rep.level:g}", "",
             f"{'':{w}} {'population (Thm 2)':>20} {'direct (Thm 3)':>20}", "-" * (w + 42)]
    lines += [f"{label:{w}} {_fmt(pop[key]):>20} {_fmt(dire[key]):>20}" for label, key in rows]
    lines += ["", f"population: {pop['message']}", f"direct:     {dire['message']}"]
    if rep.any_route is not None:
        lines += [f"some route: {rep.any_route.to_dict()['message']}"]
    if rep.population_risk is not None:
        pr = rep.population_risk.to_dict()
        bound = "" if pr["bound"] is None else f"R(f_new) <= {_fmt(pr['bound'])}; "
        lines += [f"population risk: {bound}R(f_new) < R(f_old) "
                  f"{'certified' if pr['certified'] else 'not certified'} (margin {_fmt(pr['improvement'])}, "
                  f"failure probability {_fmt(pr['failure_probability'])})"]
    lines += [f"note: {n}" for n in rep.notes]
    if regime is not None:
        lines += [f"degenerate regime: {regime.summary}"]
    return "\n".join(lines)
