"""``dc.trial_insertion(prefer_earlier=r)``: at an elimination a block's place goes to the earliest block with at least
``r`` times the best select gain left, at the same cost; and the replay of a schedule on the stored MiniLM-L6 design
seeds (``benchmarks/_trial_design.py``) is the implementation run on stored gains: without the option it gives the
stored trial run's own choices.

Why: on MiniLM-L6 the earliest block gains slowly at first and the most by the horizon, so plain halving eliminated
it after a fifth of the steps (``docs/trial-minilm/``). The halving is checked on arms with planted learning curves.
"""
import json
import re
from pathlib import Path

import pytest
import torch

import numerics.user_network._trial as trial
from benchmarks._trial_design import SWEEP, _Train, earliest_lead_ratio, replay, replay_seed

ROOT = Path(__file__).resolve().parents[2]
#: planted select gains per arm at 4 and 20 steps (blocks in the network's order a..f): d leads at 4; a, the earliest,
#: has 0.62 of d's gain then and is the best block at 20; c has 0.9 of d's.
CURVES = {"block@a": (0.031, 0.09), "block@b": (0.010, 0.05), "block@c": (0.045, 0.05), "block@d": (0.050, 0.06),
          "block@e": (0.020, 0.03), "block@f": (0.000, 0.01), "tune@d": (-0.08, 0.02)}


def _run(prefer_earlier, tune_survives=True, curves=CURVES):
    first = {k: v[0] for k, v in curves.items()}
    last = {k: v[1] for k, v in curves.items()}
    return replay_seed(first, last, [4, 20], "d", 5, tune_survives, prefer_earlier)


@pytest.mark.parametrize("r, kept", [(None, "block@d"), (1.0, "block@d"), (0.95, "block@d"), (0.85, "block@c"),
                                     (0.6, "block@a"), (0.5, "block@a"), (0.1, "block@a")])
def test_the_block_place_goes_to_the_earliest_block_within_the_ratio(r, kept):
    out = _run(r)
    assert out["kept"] == ["tune@d", kept]                          # the tune arm joined at the leader d either way
    assert out["chosen"] == kept                                     # the kept block beats the tune arm at 20


def test_the_cost_is_the_same_and_the_tune_site_is_the_leaders(monkeypatch):
    monkeypatch.setattr(trial, "_gains", lambda model, net, sel, old, loss_fn: torch.tensor([CURVES[net.name][net.steps != 4]]))

    def arm(name):
        kind, site = name.split("@")
        return {"arm": name, "kind": kind, "site": site, "train": _Train(name), "select_gains": [], "eliminated_at": None}

    costs = {}
    for r in (None, 0.5):
        arms = {n: arm(n) for n in CURVES if n.startswith("block")}
        trial._halving(None, arms, [4, 20], 5, None, None, None, lambda s: arm(f"tune@{s}"), True, r)
        costs[r] = sum(a["train"].steps for a in arms.values())
        assert "tune@d" in arms and arms["tune@d"]["train"].steps == 20
    assert costs[None] == costs[0.5] == 7 * 4 + 2 * 16


def test_without_tune_survives_the_tune_arm_keeps_a_place_only_by_its_gain():
    curves = {**CURVES, "tune@d": (0.07, 0.02)}                        # the tune arm leads at 4
    assert _run(0.5, tune_survives=False, curves=curves)["kept"] == ["tune@d", "block@a"]
    kept = _run(0.5, tune_survives=False)["kept"]
    assert kept == ["block@a", "block@c"]                              # two block places: a first, then c (0.9 of d)


def test_when_no_block_gains_the_leader_keeps_its_place():
    first = {"block@a": -0.03, "block@b": -0.02, "block@c": -0.01, "tune@c": -0.5}     # c leads, below 0
    last = {"block@a": 0.09, "block@b": 0.05, "block@c": 0.01, "tune@c": 0.0}
    assert replay_seed(first, last, [4, 20], "c", 5, True, 0.5)["kept"] == ["tune@c", "block@c"]
    up = {**first, "block@a": 0.006, "block@c": 0.01}                               # power: c above 0, a within half
    assert replay_seed(up, last, [4, 20], "c", 5, True, 0.5)["kept"] == ["tune@c", "block@a"]


@pytest.mark.parametrize("bad", [0, 0.0, 1.5, -0.2, True, "0.5"])
def test_prefer_earlier_is_validated(bad):
    with pytest.raises(ValueError, match=re.escape(f"prefer_earlier == {bad!r}, must be None or a number in (0, 1].")):
        trial._check(10, 3, "zero", 1e-3, 8, 0.05, 0, False, bad)


def test_the_replay_without_the_option_gives_the_stored_trials_own_choices():
    """The replay is faithful: on the fourth design's seeds, without ``prefer_earlier``, every seed's chosen arm, kept
    arms and pass are the stored trial run's (``docs/trial-minilm/stdlib``)."""
    res = replay(ROOT / "docs/trial-minilm/stdlib", ROOT / "docs/trial-minilm/stdlib_full_budget", None)
    stored = json.loads((ROOT / "docs/trial-minilm/stdlib/results.json").read_text())
    assert len(res["rows"]) == len(stored["rows"]) == stored["summary"]["n_seeds"]
    for got, row in zip(res["rows"], stored["rows"]):
        assert got["seed"] == row["seed"] and got["chosen"] == row["chosen"] and got["passes"] == row["passes"]
        assert sorted(got["kept"]) == sorted(a["arm"] for a in row["arms"] if a["eliminated_at"] is None and a["arm"] != "no change")
    assert res["n_pass"] == stored["summary"]["n_pass"]


def test_the_stored_design_replay_is_the_replay_of_today():
    path = ROOT / "docs/trial-minilm/stdlib_earlier/design.json"
    stored = json.loads(path.read_text())
    res = replay(ROOT / stored["trial_out"], ROOT / stored["budget_out"], stored["prefer_earlier"])
    drop = ("command", "trial_out", "budget_out", "sweep", "earliest_over_best_first_rung")
    assert {k: v for k, v in stored.items() if k not in drop} == {k: v for k, v in json.loads(json.dumps(res)).items() if k not in drop}
    for w in stored["sweep"]:
        assert replay(ROOT / stored["trial_out"], ROOT / stored["budget_out"], w["prefer_earlier"])["n_pass"] == w["n_pass"]
    assert [w["prefer_earlier"] for w in stored["sweep"]] == list(SWEEP)
    e = stored["earliest_over_best_first_rung"]
    assert e == earliest_lead_ratio(ROOT / stored["trial_out"]) and e["min"] == min(e["per_seed"].values())
    # every ratio up to the minimum keeps the first block in every design seed
    res = replay(ROOT / stored["trial_out"], ROOT / stored["budget_out"], e["min"])
    assert all("block@encoder.layer.0" in r["kept"] for r in res["rows"])
    res = replay(ROOT / stored["trial_out"], ROOT / stored["budget_out"], min(1.0, e["min"] + 0.01))
    assert not all("block@encoder.layer.0" in r["kept"] for r in res["rows"])           # and just above it, not
    assert stored["command"].endswith(f"--prefer-earlier {stored['prefer_earlier']:g} --out {path.relative_to(ROOT)}")


def test_end_to_end_the_option_runs_at_the_same_cost_and_says_so():
    from tests.api._planted import Planted, draw, squared

    import depthcert as dc

    def run(sites="blocks.*", **kw):
        return dc.trial_insertion(Planted(), draw(600, 1), draw(400, 2), sites=sites, steps=60, lr=2e-2, loss=squared,
                                  eta=2, seed=0, scan_kwargs={"curvature_n": 64}, tune_survives=True, **kw)

    plain, early = run(), run(prefer_earlier=0.5)
    assert early.total_steps == plain.total_steps and early.chosen == "block@blocks.0"    # the planted site still wins
    assert any("prefer_earlier" in n for n in early.notes) and not any("prefer_earlier" in n for n in plain.notes)
    # the option reaches the halving: with the sites listed late-first, a tiny ratio keeps the first listed block
    plain, early = run(sites=["blocks.1", "blocks.0"]), run(sites=["blocks.1", "blocks.0"], prefer_earlier=0.01)
    survived = lambda r: {a["arm"] for a in r.arms if a["eliminated_at"] is None and a["kind"] == "block"}   # noqa: E731
    assert survived(plain) == {"block@blocks.0"} and survived(early) == {"block@blocks.1"}
    assert early.total_steps == plain.total_steps


@pytest.mark.parametrize("value", ["0", "1.5", "-1"])
def test_the_benchmark_refuses_a_ratio_outside_0_1_with_exit_2(value, capsys):
    from benchmarks.bench_trial_minilm import main

    with pytest.raises(SystemExit) as e:
        main(["--prefer-earlier", value, "--out", "/nonexistent/never-written"])
    assert e.value.code == 2 and f"--prefer-earlier == {float(value)}, must be in (0, 1]" in capsys.readouterr().err


def test_the_benchmarks_command_names_the_option():
    import argparse

    from benchmarks._trial_cli import ROLES, _command

    a = argparse.Namespace(out="docs/x", first_seed=64, n_fit=320, n_select=64, n_heldout=128, tune_survives=True, per_doc=None,
                           corpus="pydoc", prefer_earlier=0.5)
    sizes = {"fit": 320, "select": 64, "heldout": 128}
    assert _command(a, 20, sizes, ROLES, sizes).endswith("--tune-survives --prefer-earlier 0.5")
    assert "--prefer-earlier" not in _command(argparse.Namespace(**{**vars(a), "prefer_earlier": None}), 20, sizes, ROLES, sizes)


def test_the_benchmarks_flag_reaches_the_trial(monkeypatch):
    import benchmarks.bench_trial_minilm as bench

    seen = {}
    monkeypatch.setattr(bench, "run", lambda out, seeds, cmd, sizes, roles, trial_kwargs, per_doc, corpus: seen.update(
        kw=trial_kwargs, cmd=cmd) or {"summary": {"verdict": "PASS"}})
    assert bench.main(["--tune-survives", "--prefer-earlier", "0.5", "--out", "/nonexistent/never"]) == 0
    assert seen["kw"] == {"tune_survives": True, "prefer_earlier": 0.5} and "--prefer-earlier 0.5" in seen["cmd"]
    bench.main(["--out", "/nonexistent/never"])
    assert seen["kw"] is None                                          # power: no flag, no keyword


def test_the_replay_refuses_more_than_two_rungs():
    with pytest.raises(ValueError, match=re.escape("rungs == [2, 4, 20], must be two")):
        replay_seed({k: v[0] for k, v in CURVES.items()}, {k: v[1] for k, v in CURVES.items()}, [2, 4, 20], "d", 5, True, 0.5)


def _live(gains: dict) -> list:
    arms = [{"arm": k, "kind": k.split("@")[0], "select_gains": [g]} for k, g in gains.items()]
    return sorted(arms, key=lambda a: -a["select_gains"][-1])


def test_one_place_taken_by_the_tune_arm_leaves_no_block_without_tune_survives():
    live = _live({"tune@c": 0.09, "block@a": 0.04, "block@c": 0.05})
    order = {"block@a": 0, "block@c": 1}
    assert [a["arm"] for a in trial._kept_preferring_earlier(live, 1, order, 0.5, False)] == ["tune@c"]       # as plain halving
    assert [a["arm"] for a in trial._kept_preferring_earlier(live, 1, order, 0.5, True)] == ["tune@c", "block@a"]


def test_a_ratio_of_1_keeps_the_best_and_the_earlier_block_on_a_tie():
    live = _live({"block@a": 0.05, "block@b": 0.05, "block@c": 0.06})
    order = {"block@a": 0, "block@b": 1, "block@c": 2}
    assert [a["arm"] for a in trial._blocks_kept(live, 1, order, 1.0)] == ["block@c"]
    tied = _live({"block@a": 0.05, "block@b": 0.05})
    assert [a["arm"] for a in trial._blocks_kept(tied[::-1], 1, order, 1.0)] == ["block@a"]
    assert [a["arm"] for a in trial._blocks_kept(live, 0, order, 0.5)] == []
