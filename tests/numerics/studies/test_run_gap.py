"""The gap of issue 29 in ``depthcert run``: ``M_needed`` per route beside the scan's ``n_needed_improvable``.

Checked against independent computations: each localised route re-evaluated from the written
inputs (``localised.inputs``, the ``[localised]`` table of ``bounds_config.toml``) at ``M_needed``
certifies and at ``M_needed / 1.5`` does not; ``n_needed_improvable`` re-derived from the scan's
stored wealth; Paper A's rows are ``ceil(min_M)`` of the routes' own closed form.
"""
import dataclasses
import math

import pytest

from bounds.localised_routes import LocalisedSetup, evaluate_localised
from numerics.studies.run import format_table, run_experiment

TINY = {"sizes": {"M": 3000, "K": 2500, "population": 3000}, "reference": {"n": 500, "steps": 15},
        "block_training": {"steps": 60, "batch_size": 512}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return run_experiment(TINY, tmp_path_factory.mktemp("run_gap"))


def _setup(res) -> LocalisedSetup:
    inputs = {k: v for k, v in res["localised"]["inputs"].items() if k != "use"}
    return LocalisedSetup(**inputs)


def test_every_localised_route_has_M_needed_that_certifies_there(tiny):
    st, gap, checked = _setup(tiny), tiny["localised"]["gap"], 0
    for name, g in gap["routes"].items():
        r = tiny["routes"][name]
        assert r["M_needed"] == g["M_needed"] and r["n_needed_improvable"] == gap["n_needed_improvable"]
        if g["M_needed"] is None:
            assert g["reason"].startswith("not certified even at M")
            continue
        at = lambda M: bool(evaluate_localised(dataclasses.replace(st, M=M), tiny["level"]).routes[name].certified)  # noqa
        assert at(g["M_needed"]) and not at(g["M_needed"] / 1.5), name
        assert r["M_needed_ratio"] == pytest.approx(g["M_needed"] / gap["n_needed_improvable"])
        assert r["certified"] == (tiny["quantities"]["M"] >= g["M_needed"])
        checked += 1
    assert checked >= 1


def test_n_needed_improvable_is_the_scans_wealth_extrapolated(tiny):
    sc = tiny["localised"]["gap"]["scan"]
    assert sc["n_probe"] == min(TINY["sizes"]["population"], 200_000) and sc["n_chunks"] == 16
    rate = sc["log_wealth"] / sc["n_bet"]
    n = sc["n_needed_improvable"]
    assert n * (1 - 1 / 16) * rate >= math.log(1 / tiny["level"]) > (n - 1) * (1 - 1 / 16) * rate
    assert sc["improvable"] == (sc["log_wealth"] >= sc["threshold"])


def test_paper_rows_read_the_closed_form_and_the_text_reports_the_gap(tiny):
    paper = tiny["localised"]["gap"]["paper"]
    for name in ("population", "direct"):
        m = tiny["routes"][name]["min_M"]
        assert paper[name]["M_needed"] == (None if m is None else math.ceil(m))
    use = tiny["localised"]["use"]
    assert use["M_needed"] == tiny["localised"]["gap"]["routes"][use["name"]]["M_needed"]
    text = format_table(tiny)
    assert "M_needed" in text and f"n_needed_improvable = {tiny['localised']['gap']['n_needed_improvable']}" in text
