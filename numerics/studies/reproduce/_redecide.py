"""Decide a stored ``depthcert reproduce`` report again with the current registry, from its stored evidence.

``depthcert reproduce`` on a folder that holds every cell decides the claims afresh from the cells. A
stored report (``docs/reproduce-*``) keeps ``claims.json`` (every claim's evidence: estimates, intervals,
per-convention tests) but not its cells; when a decision rule changes, this module applies the current
registry's rules (:func:`numerics.studies.reproduce._claims.decide`) to that stored evidence and rewrites
``claims.json`` and ``report.md``. A claim whose new rule needs a statistic the stored evidence lacks is
measured again (``refresh``) from the cells under ``DIR/sweeps`` (e.g. the depth sweep re-run with the
suite's configs: same seeds, same cells); every other number is the stored one, unchanged.

``python -m numerics.studies.reproduce._redecide DIR --suite NAME [--refresh CLAIM_ID ...]``
"""
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Iterable

__all__ = ["redecide", "stored_plateau"]


def _absolute(ev, out: Path):
    """Stored figure paths are relative to the report's folder (``_relative``); the renderer wants them absolute."""
    if not ev:
        return ev
    return {**ev, "figures": [str(out / p) if not Path(p).is_absolute() else p for p in ev.get("figures", [])]}


_RATIO = re.compile(r"\|late/early\| ([-+.\deE]+) \[([-+.\deE]+), ([-+.\deE]+)\]")


def stored_plateau(ev: dict, level_ev: dict | None) -> dict:
    """The ``ag_max_plateau`` evidence of a report stored before the plateau rule read the linear scale and the
    seed's level: each convention's ``flat_upper`` is the upper end of its stored log-scale ``|late/early|``
    interval (read from its note, 3 significant digits); the linear-scale ratio is not in the stored evidence
    (said in the note: that convention is decided on the log scale only); the seed's-level convention of each
    sample set and site is built from the stored ``ag_max_plateau_level`` interval with the per-sample loss."""
    from numerics.studies.reproduce._mnist1d_conventions import SEED_LEVEL

    levels = {c["convention"]: c for c in (level_ev or {}).get("details", {}).get("conventions", [])}
    convs = []
    for c in ev["details"]["conventions"]:
        if "seed's level" in c["convention"] or "flat_upper" in c.get("details", {}).get("tests", {}):
            return ev                                    # already in the current form
        t = dict(c["details"]["tests"])
        m = _RATIO.search(c.get("note", ""))
        if m:
            t["flat_upper"] = float(m.group(3))
        convs.append({**c, "details": {**c["details"], "tests": t},
                      "note": c.get("note", "") + "; linear-scale |late/early| not in the stored evidence (the cells "
                                                  "were not kept): decided on the log scale only"})
        lv = levels.get(f"{c['convention']}, per-sample loss")
        if lv is None:
            continue
        lo, hi = lv["interval"]
        convs.append({"convention": f"{c['convention']}, the seed's level (< 5e-3 at the deepest depth)",
                      "statistic": "early slope of log AG_max vs log D, and AG_max at the deepest depth",
                      "estimate": c["estimate"], "interval": c["interval"], "mde": c.get("mde"),
                      "note": f"AG_max at the deepest depth {lv['estimate']:.3g} [{lo:.3g}, {hi:.3g}] (stored "
                              f"ag_max_plateau_level, per-sample loss) against the seed's 5e-3; early slope "
                              f"{c['estimate']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]",
                      "details": {"tests": {"early_drop": t["early_drop"], "early_rise": t["early_rise"],
                                            "near_zero": hi < SEED_LEVEL, "above_level": lo > SEED_LEVEL}}})
    return {**ev, "details": {**ev["details"], "conventions": convs}}


def _stored_result(claim, by_id: dict, out: Path):
    """The claim decided by the current rules on its stored evidence (its stored verdict where it has none)."""
    from numerics.studies.reproduce import ClaimResult
    from numerics.studies.reproduce._claims import decide, validity_power_note

    old = by_id.get(claim.id)
    if old is None or old["evidence"] is None:
        return ClaimResult(claim, old["verdict"] if old else "not run",
                           old["measured"] if old else "not run: not in the stored report", None)
    ev = _absolute(old["evidence"], out)
    if claim.id == "ag_max_plateau" and claim.rule.kind == "plateau" and "conventions" in ev.get("details", {}):
        ev = stored_plateau(ev, (by_id.get("ag_max_plateau_level") or {}).get("evidence"))
    if claim.rule.kind == "validity" and "power shown" not in ev["measured"]:
        ev = {**ev, "measured": ev["measured"] + validity_power_note(ev.get("details", {}))}
    verdict, convs = decide(claim, ev)
    return ClaimResult(claim, verdict, ev["measured"], ev, tuple(convs) if convs else None)


def redecide(out_dir: str | Path, suite: str, refresh: Iterable[str] = ()):
    """Rewrite ``out_dir``'s ``claims.json`` and ``report.md``: each claim of ``suite``'s registry decided by the
    current rules on its stored evidence, the claims in ``refresh`` measured again from ``out_dir/sweeps``.

    Raises:
        ValueError: ``refresh`` names a claim not in the suite's registry, or the stored report is of another suite.
    """
    from plumbing.io import atomic_write_text, dumps, versions
    from numerics.studies.reproduce import SUITES, ReproduceContext, ReproduceReport, _measure, _relative
    from numerics.studies.reproduce._claims import CLAIM_SETS
    from numerics.studies.reproduce._report import render_report

    t0, out, s = time.perf_counter(), Path(out_dir), SUITES[suite]
    stored = json.loads((out / "claims.json").read_text())
    if stored["suite"] != suite:
        raise ValueError(f"{out / 'claims.json'} is a report of suite {stored['suite']!r}, not {suite!r}")
    claims, refresh = CLAIM_SETS[s.claims], set(refresh)
    unknown = refresh - {c.id for c in claims}
    if unknown:
        raise ValueError(f"refresh names claims not in the {suite} registry: {sorted(unknown)}")
    by_id = {c["id"]: c for c in stored["claims"]}
    ctx = ReproduceContext(s, out, {k: out / "sweeps" / k for k in s.sweeps}, {})
    results = []
    for claim in claims:
        results.append(_measure(claim, ctx) if claim.id in refresh else _stored_result(claim, by_id, out))
    sweeps = {k: {**v, **{f: str(out / v[f]) for f in ("out_dir", "table") if f in v}} for k, v in stored["sweeps"].items()}
    report = ReproduceReport(suite, str(out), tuple(results), stored["wall_s"], sweeps, versions(), s.expected)
    took = time.perf_counter() - t0
    redecided = {"command": f"python -m numerics.studies.reproduce._redecide DIR --suite {suite}"
                            + (f" --refresh {' '.join(sorted(refresh))}" if refresh else ""),
                 "wall_s": took, "note": "claims decided again with the current rules from the stored evidence; "
                                         "wall_s above is the stored run's"}
    atomic_write_text(out / "claims.json", dumps(_relative({**report.to_dict(), "redecided": redecided}, out), indent=2) + "\n")
    text = render_report(report, out).split("\n")
    text.insert(3, f"Claims decided again from the stored evidence with the current rules (`{redecided['command']}`, "
                   f"{took:.1f} s; the cells were not kept; the wall time above is the stored run's).")
    atomic_write_text(out / "report.md", "\n".join(text))
    return report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m numerics.studies.reproduce._redecide", description=__doc__.splitlines()[0])
    p.add_argument("dir")
    p.add_argument("--suite", required=True)
    p.add_argument("--refresh", nargs="*", default=[])
    a = p.parse_args(argv)
    r = redecide(a.dir, a.suite, a.refresh)
    print(", ".join(f"{c.claim.id}: {c.verdict}" for c in r.claims))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
