"""``dc.trial_insertion(tune_survives=True)``: the tune arm keeps a place at every elimination, at the same cost.

Why: tuning a trained layer can first cost loss and then gain (MiniLM-L6: after a fifth of the steps the tuned
layer's select gain was below 0 in every seed, so plain halving always eliminated it, also where it was the best
arm at the horizon; ``docs/trial-minilm/``). The halving is checked on arms with planted learning curves (the
select gain of each arm at each step count, read from a table), and end to end on the planted network.
"""
import re

import pytest
import torch

import depthcert as dc
import numerics.user_network._trial as trial
from tests.api._planted import Planted, draw, squared

#: planted select gains per arm at 4 and 20 steps: the tune arm first loses, then is the best by far.
CURVES = {"block@a": (0.05, 0.06), "block@b": (0.04, 0.05), "block@c": (0.01, 0.02), "block@d": (0.03, 0.04),
          "block@e": (0.02, 0.03), "block@f": (0.00, 0.01), "tune@a": (-0.08, 0.20)}


class _Net:
    def __init__(self, name):
        self.name, self.steps = name, 0


class _Train:
    def __init__(self, name):
        self.net = _Net(name)
        self.steps = 0

    def advance(self, rung):
        self.steps = self.net.steps = rung


def _arm(name):
    kind, site = name.split("@")
    return {"arm": name, "kind": kind, "site": site, "train": _Train(name), "select_gains": [], "eliminated_at": None}


def _run(monkeypatch, tune_survives):
    monkeypatch.setattr(trial, "_gains", lambda model, net, sel, old, loss_fn: torch.tensor(
        [CURVES[net.name][0 if net.steps == 4 else 1]]))
    arms = {n: _arm(n) for n in CURVES if n.startswith("block")}
    live = trial._halving(None, arms, [4, 20], 5, None, None, None, lambda site: _arm(f"tune@{site}"), tune_survives)
    return arms, live


@pytest.mark.parametrize("survives", [False, True])
def test_the_tune_arm_keeps_a_place_only_with_tune_survives_and_the_cost_is_the_same(monkeypatch, survives):
    arms, live = _run(monkeypatch, survives)
    names = {a["arm"] for a in live}
    chosen = max(live, key=lambda a: a["select_gains"][-1])["arm"]
    cost = sum(a["train"].steps for a in arms.values())
    assert cost == 7 * 4 + 2 * 16                                   # 7 arms to 4 steps, 2 survivors to 20: 3.0 x 20
    if survives:
        assert names == {"tune@a", "block@a"} and chosen == "tune@a"      # the best block and the tune arm
        assert arms["tune@a"]["eliminated_at"] is None and arms["block@b"]["eliminated_at"] == 4
    else:   # power: plain halving drops the tune arm at the first rung and chooses a block
        assert names == {"block@a", "block@b"} and chosen == "block@a" and arms["tune@a"]["eliminated_at"] == 4


def test_with_one_place_the_tune_arm_and_the_best_block_both_go_on(monkeypatch):
    monkeypatch.setattr(trial, "_gains", lambda model, net, sel, old, loss_fn: torch.tensor(
        [CURVES[net.name][0 if net.steps == 4 else 1]]))
    arms = {n: _arm(n) for n in ("block@a", "block@b")}
    live = trial._halving(None, arms, [4, 20], 5, None, None, None, lambda site: _arm(f"tune@{site}"), True)
    assert {a["arm"] for a in live} == {"tune@a", "block@a"}        # ceil(3 / 5) = 1 place: at least one block too


def test_with_the_rungs_of_halving_rungs_every_elimination_keeps_two_places_so_the_cost_never_changes():
    """The docstring's claim, over arm counts, halving factors and horizons: before each elimination the live arms
    number more than ``eta`` (``n > eta^(R - 1)``), so ``ceil(live / eta) >= 2``; a planted one-rung-too-many
    schedule would break it (power)."""
    import math

    from numerics.trial import halving_rungs

    def places(n, rungs, eta):
        live, out = n, []
        for _ in rungs[:-1]:
            out.append(math.ceil(live / eta))
            live = out[-1]
        return out

    for n in range(2, 41):
        for eta in range(2, 8):
            for steps in (1, 7, 20, 100, 1000):
                assert all(k >= 2 for k in places(n, halving_rungs(n, steps, eta), eta)), (n, eta, steps)
    assert min(places(7, [1, 2, 4, 20], 2)) == 1           # a hand-made extra rung leaves one place


def _planted(**kw):
    return dc.trial_insertion(Planted(), draw(600, 1), draw(400, 2), sites="blocks.*", steps=60, lr=2e-2, loss=squared,
                              eta=2, seed=0, scan_kwargs={"curvature_n": 64}, **kw)


def test_end_to_end_the_tune_arm_is_trained_to_the_horizon_at_the_same_total_cost():
    plain, kept = _planted(), _planted(tune_survives=True)
    t = kept.table().set_index("arm")
    assert t.loc["tune@blocks.0", "steps_trained"] == 60 and kept.total_steps == plain.total_steps
    assert kept.chosen == "block@blocks.0"                         # the planted site still wins at the horizon
    assert any("tune_survives" in n for n in kept.notes) and not any("tune_survives" in n for n in plain.notes)


def test_tune_survives_is_validated():
    with pytest.raises(ValueError, match=re.escape("tune_survives == 'yes', must be True or False.")):
        _planted(tune_survives="yes")
