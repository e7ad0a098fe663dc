"""Markdown tables of a stored ``validity.json`` (issue 34): numbers a README quotes are rendered, never typed.

``python -m numerics.studies.validity._report DIR`` prints the block; a README holds it between
:data:`BEGIN` and :data:`END` and ``tests/numerics/studies/test_validity_testable.py`` checks that it is
the rendering of the ``validity.json`` beside it.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Mapping

__all__ = ["BEGIN", "END", "render"]

BEGIN = "<!-- BEGIN rendered from validity.json by `python -m numerics.studies.validity._report DIR` -->"
END = "<!-- END rendered -->"


def _g(x) -> str:
    return "—" if x is None else f"{x:.3g}"


def _needed(t: Mapping, n: int | None) -> str:
    r = t.get("tolerance_over_term_max")
    if r is None or n is None:
        return "—"
    return f"{n * max(r, 0.0) ** 2:.2g}" if r >= 1 else f"<= {n:.2g}"


def render(s: Mapping) -> str:
    """The testability, power and per-draw tables of a summary (markdown)."""
    n = (s.get("truth") or {}).get("check_population")
    t = s.get("testability") or {}
    out = [BEGIN, "",
           f"{s['draws']} draws (of {s['draws_requested']} requested), truth size {n}; tolerance = z se with z = "
           f"{_g(t.get('z'))} (two-sided level {_g(t.get('level'))} per relation), "
           f"{'paired differences on one shared truth sample' if t.get('paired') else 'unpaired (older records)'}.",
           "Testable: tolerance < term at every draw (the largest tolerance and the smallest term may come from "
           "different draws; the ratio column is per draw).",
           "", "| event | failures | tolerance (max over draws) | smallest term | tolerance/term (max over draws) | "
           "testable draws | verdict | truth size that makes it testable |", "|---|---|---|---|---|---|---|---|"]
    for name, e in s["events"].items():
        te = e.get("testability")
        if not te:
            continue
        fails = f"{e['failures']} of {e['draws']}" if te["testable"] else "—"
        out.append(f"| `{name}` | {fails} | {_g(te['tolerance_max'])} | {_g(te['smallest_term'])} | "
                   f"{_g(te.get('tolerance_over_term_max'))} | "
                   f"{te['testable_draws']} of {te['draws']} | {te['verdict']} | {_needed(te, n)} |")
    h = (s["routes"].get("heldout_paired") or {}).get("testability")
    if h:
        out.append(f"| `heldout_paired` (conclusion, term `t_T(d_new)`) | "
                   f"{s['routes']['heldout_paired']['violations'] if h['testable'] else '—'} | {_g(h['tolerance_max'])} | "
                   f"{_g(h['smallest_term'])} | {_g(h.get('tolerance_over_term_max'))} | {h['testable_draws']} of "
                   f"{h['draws']} | {h['verdict']} | {_needed(h, n)} |")
    out += ["", "Power (weakened bound terms; flagged = one-sided exact test at the study's level):", "",
            "| check | failures | stated | tolerance (max) | term (smallest) | tolerance/term (max) | verdict | truth size "
            "that makes it testable |", "|---|---|---|---|---|---|---|---|"]
    for name, p in s["power"].items():
        tp = p.get("testability")
        if not tp or not (name.startswith(("U_S", "t_T_d")) or "E_U" in name):
            continue
        verdict = tp["verdict"] if not tp["testable"] else ("FLAGGED" if p["flagged"] else "not flagged")
        out.append(f"| `{name}` | {p['failures']} of {p['draws']} | {_g(p['stated'])} | {_g(tp['tolerance_max'])} | "
                   f"{_g(tp['smallest_term'])} | {_g(tp.get('tolerance_over_term_max'))} | {verdict} | {_needed(tp, n)} |")
    out += _power_localised_rows(s.get("power_localised"), n)
    pd = s.get("per_draw_summary")
    if pd:
        out += ["", f"Per draw (`validity.json`: `per_draw`), median [quartiles] (min, max); margin = {pd['margin_is']}.", "",
                "| route | certified | certified improvement | / trained f_new's gain on T | / L_test_old | margin | cap |",
                "|---|---|---|---|---|---|---|"]
        f = lambda d: "—" if d is None else f"{d['median']:.3g} [{d['q25']:.3g}, {d['q75']:.3g}] ({d['min']:.3g}, {d['max']:.3g})"  # noqa
        for name, r in pd["routes"].items():
            if not name.startswith(("localised_train", "heldout", "population", "direct")) or "_tight_" in name:
                continue
            out.append(f"| `{name}` | {r['certified']} of {s['draws']} | {f(r['improvement'])} | "
                       f"{f(r['improvement_over_trained_gain'])} | {f(r['improvement_over_loss'])} | {f(r['margin'])} | "
                       f"{f(r['cap'])} |")
    return "\n".join(out + ["", END])


def _power_localised_rows(p: Mapping | None, n: int | None) -> list[str]:
    """Per localised route and term: the largest flagged weakening and the looseness (``power_localised``; absent
    in older summaries, which render as before)."""
    if not p or not p.get("routes"):
        return []
    x = lambda c: "none" if c is None else f"x {c:g}"  # noqa: E731
    q = lambda d: "—" if d is None else f"{d['median']:.3g} [{d['q25']:.3g}, {d['q75']:.3g}] ({d['min']:.3g}, {d['max']:.3g})"  # noqa
    out = ["", f"Localised power per route and term (truth size {n}): looseness = realised deviation / term over draws, "
           "median [quartiles] (min, max); the truth size that would flag a weakening, were each realised deviation "
           "the true one.", "",
           "| route | term | largest flagged factor (Holm) | failures x 0.5 / 0.1 / 0.01 / 0.001 / 0 (needed) | looseness | "
           "(deviation + tolerance)/term, max | truth size to flag x 0.1 / x 0.01 / x 0 | verdict |",
           "|---|---|---|---|---|---|---|---|"]
    g = lambda v: "none" if v is None else f"{v:.2g}"  # noqa: E731
    for route, terms in p["routes"].items():
        for term, e in terms.items():
            f = e["failures"]
            fails = " / ".join(str(f.get(c, "—")) for c in ("0.5", "0.1", "0.01", "0.001", "0"))
            up = e["looseness_upper"]
            sizes = " / ".join(g(e["truth_size_to_flag"].get(c)) for c in ("0.1", "0.01", "0"))
            out.append(f"| `{route}` | `{term}` | {x(e['largest_flagged_factor'])} | {fails} of {e['draws']} "
                       f"({e['failures_needed']}) | {q(e['looseness'])} | {_g(None if up is None else up['max'])} | "
                       f"{sizes} | {e['verdict']} |")
    return out


def main(argv=None) -> int:
    from plumbing.store import load_json

    d = Path((argv or sys.argv[1:])[0])
    print(render(load_json(d / "validity.json" if d.is_dir() else d)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
