"""Checks that can fail (issue 34, item 3): paired truth, tolerance beside the term each event tests, "not testable".

Synthetic draws: the localised routes of one stored MNIST-1D validity record (``_mnist1d_localised_record.json``,
draw 0 of ``examples/mnist1d_converged_seeds.toml`` before the truth was paired), its risks moved and a paired
truth covariance planted, so that the tolerance and the violations are known by construction.
"""
from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from numerics.sampled_task import TRUTH_Z
from numerics.studies.validity._localised_power import at_function_variants
from numerics.studies.validity._routes import LOCALISED_ROUTE_SPECS, event_failures, event_testability
from numerics.studies.validity._summary import summarize
from numerics.studies.validity import _testable
from numerics.studies.validity._testable import NOT_TESTABLE, TESTABLE

ROUTE = "localised_train_linearised_bernstein"
BASE = json.loads((Path(__file__).parent / "_mnist1d_localised_record.json").read_text())


def _record(i: int, *, se_D: float, n: int = 10**6, shift_T: float = 0.0) -> dict:
    """Draw ``i``: the stored record with a planted paired truth whose ``se(D_new)`` is ``se_D``;
    ``shift_T``: ``DT_new - D_new`` set to it (``> t_T_d`` plants a failure of ``H_T_diff``)."""
    rec = copy.deepcopy(BASE)
    rec["index"] = i
    var_d = se_D**2 * n
    cov = np.diag([0.04, 1e-6, 1e-6, 1e-6, var_d])       # basis (l_old, d_new, d_jump_S, d_jump_pop, d_localised)
    rec["values"].update(truth_cov=cov.tolist(), truth_n=n,
                         truth_basis=["l_old", "d_new", "d_jump_S", "d_jump_pop", "d_localised"])
    for name, r in rec["routes"].items():
        v = r.get("values")
        if v is not None and "DT_new" in v:
            v["D_new"] = v["DT_new"] - shift_T
            v["DS_new"] = v["D_new"]          # E_U's premise D_new <= DS_new + U_S holds with room U_S
    rec["routes"]["heldout_paired"]["D_new"] = rec["routes"][ROUTE]["values"]["D_new"]
    return rec


def _t_T(rec=BASE) -> float:
    return rec["routes"][ROUTE]["values"]["t_T_d"]


def _specs():
    return [s for s in LOCALISED_ROUTE_SPECS if s.name in BASE["routes"]]


def test_tolerance_is_z_times_the_paired_standard_error():
    """D_new's tolerance is z sqrt(var(d) / n) -- computed here from the planted numbers, not by the code."""
    se = 2e-6
    tests = event_testability(_record(0, se_D=se), _specs())
    tol, term = tests[f"{ROUTE}/H_T_diff"]
    assert tol == pytest.approx(3.2905267314918945 * se, rel=1e-9)
    assert term == pytest.approx(_t_T(), rel=1e-9)           # the term H_T_diff tests: t_T_d
    tol_U, term_U = tests[f"{ROUTE}/E_U"]
    assert tol_U == pytest.approx(TRUTH_Z * se, rel=1e-9)
    assert term_U == pytest.approx(BASE["routes"][ROUTE]["values"]["U_S"], rel=1e-9)   # and E_U's: U_S


def test_planted_tolerance_1000x_the_term_is_not_testable_and_below_it_is():
    t = _t_T()
    big = [_record(i, se_D=1000 * t / TRUTH_Z) for i in range(5)]       # tolerance 1000 t_T_d
    s = summarize(big, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    e = s["events"][f"{ROUTE}/H_T_diff"]
    assert e["testability"]["verdict"] == NOT_TESTABLE and not e["testability"]["testable"]
    assert e["testability"]["tolerance_max"] == pytest.approx(1000 * t, rel=1e-6)
    assert e["testability"]["smallest_term"] == pytest.approx(t, rel=1e-9)
    assert s["routes"]["heldout_paired"]["testability"]["verdict"] == NOT_TESTABLE
    p = s["power"][f"t_T_d x 0.5 ({ROUTE}/H_T_diff at f_new)"]
    assert p["testability"]["verdict"] == NOT_TESTABLE        # no power claimed where untestable
    from depthcert._cmd_validity import format_summary

    text = format_summary(s)
    line = next(x for x in text.splitlines() if x.startswith(f"{ROUTE}/H_T_diff"))
    assert NOT_TESTABLE in line and " 0 " not in line.split(NOT_TESTABLE)[0].split("  ")[-1]
    assert "0.0%" not in line                                  # never "0 failures" for an untestable event
    from numerics.studies.validity._plot import _untestable

    assert _untestable(s, f"{ROUTE}.tail_T_diff [H_T_diff]")   # the slack figure labels its box so

    small = [_record(i, se_D=1e-3 * t / TRUTH_Z) for i in range(5)]     # tolerance t_T_d / 1000
    s = summarize(small, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    e = s["events"][f"{ROUTE}/H_T_diff"]
    assert e["testability"]["verdict"] == TESTABLE and e["testability"]["testable_draws"] == 5
    assert s["routes"]["heldout_paired"]["testability"]["verdict"] == TESTABLE
    assert NOT_TESTABLE not in next(x for x in format_summary(s).splitlines() if x.startswith(f"{ROUTE}/H_T_diff"))
    assert not _untestable(s, f"{ROUTE}.tail_T_diff [H_T_diff]")


def test_a_testable_event_fails_beyond_its_tolerance_and_not_within_it():
    t = _t_T()
    tol = 0.01 * t
    over = _record(0, se_D=tol / TRUTH_Z, shift_T=t + 2 * tol)     # DT_new - D_new beyond t_T_d + tolerance
    within = _record(0, se_D=tol / TRUTH_Z, shift_T=t + 0.5 * tol)
    assert event_failures(over, _specs())[f"{ROUTE}/H_T_diff"]["failed"]
    assert not event_failures(within, _specs())[f"{ROUTE}/H_T_diff"]["failed"]


def test_halved_t_T_is_flagged_where_testable_and_the_true_one_is_not():
    """Power: DT_new - D_new = 0.8 t_T_d at every draw breaks t_T_d / 2, not t_T_d."""
    t = _t_T()
    recs = [_record(i, se_D=1e-3 * t / TRUTH_Z, shift_T=0.8 * t) for i in range(10)]
    s = summarize(recs, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    half, true = (s["power"][f"t_T_d x {c} ({ROUTE}/H_T_diff at f_new)"] for c in ("0.5", "1"))
    assert half["flagged"] and half["failures"] == 10 and half["testability"]["testable"]
    assert not true["flagged"] and true["failures"] == 0
    # the same draws with a truth too small to see t_T_d / 2: not testable, whatever the count
    recs = [_record(i, se_D=t / TRUTH_Z, shift_T=0.8 * t) for i in range(10)]
    s = summarize(recs, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    assert s["power"][f"t_T_d x 0.5 ({ROUTE}/H_T_diff at f_new)"]["testability"]["verdict"] == NOT_TESTABLE


def test_paired_moments_are_the_covariance_of_the_paired_differences():
    """The record's truth_cov against numpy on the same losses; the paired se is far below the unpaired one."""
    from numerics.studies.validity._draws import _PairedMoments
    from numerics.studies.validity._testable import relation_tolerance
    import sympy as sp

    g = torch.Generator().manual_seed(1)
    n = 5000
    l_old = torch.rand(n, generator=g, dtype=torch.float64)
    l_new = l_old - 1e-4 + 1e-5 * torch.randn(n, generator=g, dtype=torch.float64)
    L = torch.stack([l_old, l_new, l_old, l_old, l_new])
    acc = _PairedMoments(5)
    for i in range(0, n, 1234):
        acc.add(L[:, i:i + 1234])
    got = acc.result()
    z = torch.cat([L[:1], L[1:] - L[:1]]).numpy()
    assert np.allclose(got["truth_cov"], np.cov(z), rtol=1e-9, atol=1e-30) and got["truth_n"] == n
    D_new, DS_new, U_S = sp.symbols("D_new DS_new U_S")
    vals = {"truth_cov": got["truth_cov"], "truth_n": n, "D_new": -1e-4, "DS_new": 0.0, "U_S": 1.0}
    want = 3.2905267314918945 * float(np.std((l_new - l_old).numpy(), ddof=1)) / math.sqrt(n)
    assert relation_tolerance(sp.Le(D_new, DS_new + U_S), vals) == pytest.approx(want, rel=1e-9)
    unpaired = 3.2905267314918945 * 2 * float(np.std(l_old.numpy(), ddof=1)) / math.sqrt(n)
    assert want < unpaired / 1000


def test_testability_entry_rule():
    assert _testable.testability_entry([(1.0, 2.0), (0.5, 3.0)])["verdict"] == TESTABLE
    e = _testable.testability_entry([(1.0, 2.0), (5.0, 3.0)])          # one draw where the tolerance reaches the term
    assert e["verdict"] == NOT_TESTABLE and e["testable_draws"] == 1 and e["smallest_term"] == 2.0
    assert e["tolerance_max"] == 5.0


def test_per_draw_rows_store_bound_margin_cap_improvement_and_their_distribution():
    recs = [_record(i, se_D=1e-9) for i in range(4)]
    for i, r in enumerate(recs):           # distinct bounds: the quartiles are known
        r["routes"][ROUTE]["bound"] = BASE["routes"][ROUTE]["bound"] + i * 1e-6
        r["routes"][ROUTE]["improvement"] = r["values"]["L_test_old"] - r["routes"][ROUTE]["bound"]
    s = summarize(recs, 0.05, specs=_specs(), variants=[])
    rows = s["per_draw"]
    assert len(rows) == 4
    for r, row in zip(recs, rows):
        x, own = row["routes"][ROUTE], r["routes"][ROUTE]
        assert x["bound"] == own["bound"] and x["improvement"] == own["improvement"]
        assert x["margin"] == pytest.approx(own["bound"] - own["values"]["L_test_new"], abs=1e-15)
        assert x["cap"] == own["values"]["nu_V"]
        h = row["routes"]["heldout_paired"]
        assert h["margin"] == pytest.approx(r["routes"]["heldout_paired"]["bound"] - r["routes"]["heldout_paired"]["D_new"])
        assert h["cap"] == own["values"]["nu_V"]               # the localised f_new's ball, not the paper's cap
    d = s["per_draw_summary"]["routes"][ROUTE]["improvement"]
    imps = sorted(r["routes"][ROUTE]["improvement"] for r in recs)
    assert d["min"] == pytest.approx(imps[0]) and d["max"] == pytest.approx(imps[-1])
    assert d["median"] == pytest.approx((imps[1] + imps[2]) / 2)


STORED = Path(__file__).resolve().parents[3] / "docs" / "validity-mnist1d-seeds30"


def test_stored_paired_study_readme_tables_are_rendered_from_its_validity_json():
    """The README's tables are the rendering of the stored validity.json (numbers read, not typed); a planted
    change in a copy of the page is caught."""
    from numerics.studies.validity._report import BEGIN, END, render

    s = json.loads((STORED / "validity.json").read_text())
    page = (STORED / "README.md").read_text()
    block = page[page.index(BEGIN):page.index(END) + len(END)]
    assert block == render(s)
    assert s["testability"]["paired"] and all("truth_cov" not in row for row in s["per_draw"])
    assert len(s["per_draw"]) == s["draws"] and all(ROUTE in row["routes"] for row in s["per_draw"])
    e = s["events"][f"{ROUTE}/H_T_diff"]["testability"]
    assert e["verdict"] in block
    planted = block.replace(f"{e['tolerance_max']:.3g}", f"{10 * e['tolerance_max']:.3g}", 1)
    assert planted != render(s)


# ---- localised power: the largest flagged weakening and the looseness of each term (summary.power_localised) ----

def _planted(i: int, *, dev_T: float, dev_U: float, tol: float, n: int = 10**6) -> dict:
    """Draw ``i`` with realised deviations planted: ``DT_new - D_new = dev_T``, ``D_new - DS_new = dev_U``, and the
    paired truth's tolerance ``z se(D_new) = tol``."""
    rec = _record(i, se_D=tol / TRUTH_Z, n=n, shift_T=dev_T)
    for r in rec["routes"].values():
        v = r.get("values")
        if v is not None and "DS_new" in v:
            v["DS_new"] = v["D_new"] - dev_U
    return rec


def _terms():
    v = BASE["routes"][ROUTE]["values"]
    return v["t_T_d"], v["U_S"]


def _needed(p: float, draws: int, tests: int, level: float = 0.05) -> int:
    """Independently: the fewest failures whose binomial tail is <= level / tests (Holm's first cut-off)."""
    from scipy.stats import binom

    return next(k for k in range(1, draws + 1) if binom.sf(k - 1, draws, p) <= level / tests)


def test_a_too_small_term_is_flagged_and_a_true_one_not_with_the_largest_flagged_factor():
    """t_T_d holds with room (deviation 0.2-0.38 of it): x 1 and x 0.5 not flagged, x 0.1 flagged (the largest);
    U_S is planted too small (deviation 2-2.9 U_S): its true term is flagged. Looseness against numpy on the planted
    ratios."""
    t, U = _terms()
    ratios_T = [0.2 + 0.02 * i for i in range(10)]
    ratios_U = [2.0 + 0.1 * i for i in range(10)]
    recs = [_planted(i, dev_T=r * t, dev_U=q * U, tol=1e-4 * t) for i, (r, q) in enumerate(zip(ratios_T, ratios_U))]
    s = summarize(recs, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    e_T = s["power_localised"]["routes"][ROUTE]["t_T_d"]
    assert not s["power"][f"t_T_d x 1 ({ROUTE}/H_T_diff at f_new)"]["flagged"] and not e_T["true_term_flagged"]
    assert e_T["largest_flagged_factor"] == 0.1 and 0.5 not in e_T["flagged_factors"]
    assert e_T["failures"] == {"1": 0, "0.5": 0, "0.1": 10, "0.01": 10, "0.001": 10, "0": 10}
    q = np.quantile(ratios_T, (0, 0.25, 0.5, 0.75, 1))
    got = e_T["looseness"]
    assert [got[k] for k in ("min", "q25", "median", "q75", "max")] == pytest.approx(list(q), rel=1e-6)
    assert e_T["looseness_upper"]["max"] == pytest.approx(ratios_T[-1] + 1e-4, rel=1e-6)
    e_U = s["power_localised"]["routes"][ROUTE]["U_S"]
    assert e_U["true_term_flagged"] and e_U["failures"]["1"] == 10 and "own guarantee failed" in e_U["verdict"]
    assert e_U["looseness"]["min"] == pytest.approx(2.0, rel=1e-6) and e_U["looseness"]["max"] == pytest.approx(2.9, rel=1e-6)
    tests = s["power_family_wise"]["tests"]
    assert tests == len(s["power"]) and e_T["failures_needed"] == _needed(0.024, 10, tests)
    from depthcert._cmd_validity import format_summary

    text = format_summary(s)
    assert f"{ROUTE} t_T_d (H_T_diff): largest flagged factor x 0.1 (Holm)" in text
    assert e_U["largest_flagged_factor"] == 0.5 and f"{ROUTE} U_S (E_U): largest flagged factor x 0.5 (Holm)" in text
    from numerics.studies.validity._report import render

    assert f"| `{ROUTE}` | `t_T_d` | x 0.1 |" in render(s)


def test_deviations_below_the_tolerance_are_not_flagged_even_at_x0_and_the_truth_size_that_would_is_reported():
    """Every realised deviation positive but below the truth's tolerance: nothing is flagged, not even the term
    dropped (x 0); the truth size that would flag x 0 is n (tol / dev_(k))^2 at the k-th largest deviation."""
    t, U = _terms()
    n, tol = 10**6, 0.05 * t
    devs = [0.004 * t * (1 + i) for i in range(12)]            # 0.004 t .. 0.048 t: all below the tolerance 0.05 t
    recs = [_planted(i, dev_T=d, dev_U=0.0, tol=tol, n=n) for i, d in enumerate(devs)]
    s = summarize(recs, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    e = s["power_localised"]["routes"][ROUTE]["t_T_d"]
    assert e["largest_flagged_factor"] is None and e["failures"]["0"] == 0
    assert e["deviation_beyond_tolerance_draws"] == 0 and "not flagged even at x 0" in e["verdict"]
    k = _needed(0.024, len(devs), s["power_family_wise"]["tests"])
    assert e["failures_needed"] == k
    kth = sorted(devs, reverse=True)[k - 1]
    assert e["truth_size_to_flag"]["0"] == pytest.approx(n * (tol / kth) ** 2, rel=1e-6)
    kth_01 = sorted((d - 0.01 * t for d in devs if d > 0.01 * t), reverse=True)[k - 1]
    assert e["truth_size_to_flag"]["0.01"] == pytest.approx(n * (tol / kth_01) ** 2, rel=1e-6)
    assert e["truth_size_to_flag"]["0.1"] is None          # no deviation exceeds 0.1 t: no truth size flags it
    # the same draws at that truth size (tolerance scaled by sqrt(n / n')): x 0 is flagged
    n2 = e["truth_size_to_flag"]["0"] * 1.0001
    recs = [_planted(i, dev_T=d, dev_U=0.0, tol=tol * math.sqrt(n / n2), n=int(n2)) for i, d in enumerate(devs)]
    s2 = summarize(recs, 0.05, specs=_specs(), variants=at_function_variants([ROUTE]))
    e2 = s2["power_localised"]["routes"][ROUTE]["t_T_d"]
    assert e2["failures"]["0"] == k and e2["largest_flagged_factor"] == 0.0


def test_term_dropped_fails_beyond_the_tolerance_only():
    t, _ = _terms()
    var = {v.name: v for v in at_function_variants([ROUTE])}
    x0 = var[f"t_T_d x 0 ({ROUTE}/H_T_diff at f_new)"]
    tol = 1e-2 * t
    assert x0.check(_planted(0, dev_T=1.01 * tol, dev_U=0.0, tol=tol))[0]
    assert not x0.check(_planted(0, dev_T=0.99 * tol, dev_U=0.0, tol=tol))[0]


def test_summaries_without_localised_power_render_as_before():
    """An older summary (no power_localised key) renders no localised power table (the stored READMEs stay their
    rendering)."""
    from numerics.studies.validity._report import render

    s = json.loads((STORED / "validity.json").read_text())
    assert "Localised power" in render(s)                      # the stored study has the key: the table is rendered
    s.pop("power_localised")
    assert "Localised power" not in render(s)
