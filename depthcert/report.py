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


def variants_table(rep: RoutesReport, variants) -> str:
    """One row per route: Paper A's two (``paper``) and this project's variants (``Choice``).

    Each row's ``certified`` is that route's own statement (valid for a route fixed before the
    data); below the rows: the ``any route`` claim (Bonferroni over every row), the route
    fixed by ``[variants] use`` if any, and the notes (the population variants' assumption).

    Args:
        rep: the paper routes (:func:`bounds.routes.evaluate_routes`).
        variants: :class:`bounds.variant_routes.VariantsReport` on the same setup.
    """
    rows = [("population (Thm 2)", "paper", rep.population.to_dict()),
            ("direct (Thm 3)", "paper", rep.direct.to_dict())]
    rows += [(name, "Choice", r.to_dict()) for name, r in variants.variants.items()]
    w = 38
    head = f"{'route':{w}} {'statement':>9} {'bound':>10} {'improvement':>12} {'failure p':>10} {'certified*':>10}"
    lines = ["tighter variants (THEORY §6): 'paper' = Paper A's statement, 'Choice' = this project's variant",
             head, "-" * len(head)]
    for label, origin, d in rows:
        lines.append(f"{label:{w}} {origin:>9} {_fmt(d['bound']):>10} {_fmt(d['improvement']):>12} "
                     f"{_fmt(d['failure_probability']):>10} {_fmt(d['certified']):>10}")
    lines += ["* each row alone, valid only for a route fixed before seeing the data ([variants] use)."]
    lines += _choice_lines(variants)
    lines += [f"skipped: {name}: {why}" for name, why in variants.skipped.items()]
    lines += [f"note: {n}" for n in variants.notes if not n.startswith("skipped variants")]
    return "\n".join(lines)


def _choice_lines(variants) -> list[str]:
    out = []
    if variants.any_route is not None:
        a = variants.any_route.to_dict()
        n = len(a["routes_included"])
        out.append(f"any route, picked after seeing the data (Bonferroni over {n} routes, each at level/{n} = "
                   f"{a['share']:.4g}): {a['message']}")
    if variants.chosen is not None:
        d = variants.chosen.to_dict()
        out.append(f"certificate of the route fixed before the data (use = {variants.use}): {d['message']}")
    return out
