"""Replay a schedule of ``dc.trial_insertion`` on the stored MiniLM-L6 design seeds, without training.

    python benchmarks/_trial_design.py --prefer-earlier 0.5 --out docs/trial-minilm/stdlib_earlier/design.json

A stored trial run (``--trial-out``, run with ``--tune-survives``; its rungs ``[r, H]``) holds every arm's select gain
after the first rung; the full-budget diagnostic of the same seeds (``--budget-out``) holds every arm's select gain
and held-out gain after ``H`` steps, with the trial's own construction and minibatches (its ``truth_match`` shows the
reproduction). Training is deterministic, so an arm's select gain at a rung does not depend on the schedule: the
halving of :func:`numerics.user_network._trial._halving` (the implementation itself, with ``prefer_earlier``) runs on
these stored gains and gives the arm it would choose in each seed, judged by the trial's rule on the stored held-out
gains. The tune arm's site is the stored trial's, which is the site every schedule here gives it (the block with the
largest select gain after the first rung).

This is how a schedule was chosen on the design seeds before its own run on fresh seeds; it is not a result on
seeds it did not see. Writes ``--out`` (JSON, atomically): per seed the arms kept and chosen, and the count; the
count for each ratio of :data:`SWEEP`; and per seed the first block's select gain after the first rung over the
best block's, with its minimum (every ratio up to that minimum keeps the first block in every design seed: on these
seeds such a ratio cannot be told apart from "always keep the first block").
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repository's packages

__all__ = ["SWEEP", "earliest_lead_ratio", "replay", "replay_seed"]


class _Train:
    """A stand-in for a training arm: its net carries the arm's name and step count (for the stored gains)."""

    def __init__(self, name: str):
        self.net, self.steps = type("Net", (), {"name": name, "steps": 0})(), 0

    def advance(self, rung: int) -> None:
        self.steps = self.net.steps = rung


def replay_seed(first: dict, last: dict, rungs: list, tune_site: str, eta: int, tune_survives: bool,
                prefer_earlier: float | None) -> dict:
    """One seed: ``first``/``last``: every arm's select gain after the first/last rung (block arms in the network's
    order, and the tune arm at ``tune_site``); returns the arms kept after the first rung and the arm chosen."""
    import torch

    import numerics.user_network._trial as trial

    if len(rungs) != 2:
        raise ValueError(f"rungs == {rungs}, must be two (the first rung's and the horizon's gains are all that is stored).")

    def gains(model, net, sel, old, loss_fn):
        return torch.tensor([(first if net.steps == rungs[0] else last)[net.name]], dtype=torch.float64)

    def arm(name):
        kind, site = name.split("@", 1)
        return {"arm": name, "kind": kind, "site": site, "train": _Train(name), "select_gains": [], "eliminated_at": None}

    arms = {n: arm(n) for n in first if n.startswith("block@")}
    saved, trial._gains = trial._gains, gains
    try:
        live = trial._halving(None, arms, rungs, eta, None, None, None, lambda s: arm(f"tune@{s}"), tune_survives, prefer_earlier)
    finally:
        trial._gains = saved
    if arms.get(f"tune@{tune_site}") is None:
        raise ValueError(f"the replay's tune arm is not the stored trial's (tune@{tune_site}): the schedule moved it.")
    best = max(live, key=lambda a: a["select_gains"][-1])
    return {"kept": [a["arm"] for a in live], "chosen": best["arm"] if best["select_gains"][-1] > 0 else "no change"}


def _check_same_training(row: dict, last: dict, H: int) -> None:
    """The full-budget run's select gains at ``H`` equal the trial's own for every arm the trial trained to ``H``
    (relative 1e-9): the arms' training does not depend on the schedule, so its gains can stand in for any arm's."""
    if row["rungs"][-1] != H:
        raise SystemExit(f"seed {row['seed']}: the trial's last rung is {row['rungs'][-1]}, the horizon {H}.")
    for a in row["arms"]:
        if a["steps_trained"] == H and a["arm"] != "no change" and abs(a["select_gains"][-1] - last[a["arm"]]) > 1e-9 * abs(last[a["arm"]]):
            raise SystemExit(f"seed {row['seed']}: {a['arm']}'s select gain at {H} differs between the trial ({a['select_gains'][-1]}) "
                             f"and the full-budget run ({last[a['arm']]}): their training differs.")


def earliest_lead_ratio(trial_out: Path) -> dict:
    """Per seed of ``trial_out``: the first block's (network order) select gain after the first rung over the best
    block's; their minimum (every ``prefer_earlier`` up to it keeps the first block in every seed)."""
    res = json.loads((trial_out / "results.json").read_text())
    out = {}
    for r in res["rows"]:
        blocks = [a for a in r["arms"] if a["arm"].startswith("block@")]
        out[str(r["seed"])] = blocks[0]["select_gains"][0] / max(a["select_gains"][0] for a in blocks)
    return {"per_seed": out, "min": min(out.values())}


SWEEP = (None, 0.05, 0.1, 0.25, 0.5, 0.6, 0.75, 0.8, 0.9, 0.95, 1.0)


def replay(trial_out: Path, budget_out: Path, prefer_earlier: float | None) -> dict:
    """Every design seed of ``trial_out`` replayed (module docstring): per seed the chosen arm, its held-out gain over
    the best arm's, and whether it passes; the count."""
    from benchmarks.bench_trial_minilm import seed_passes

    res = json.loads((trial_out / "results.json").read_text())
    cfg = res["config"]
    if not cfg.get("trial_kwargs", {}).get("tune_survives"):
        raise SystemExit(f"{trial_out}: the replay needs a run with --tune-survives (its tune arm reaches the horizon).")
    rows = []
    for tr in res["rows"]:
        fb = json.loads((budget_out / "seeds" / f"seed_{tr['seed']}.json").read_text())["row"]
        if not all(fb["truth_match"].values()):
            raise SystemExit(f"{budget_out}: seed {tr['seed']} did not reproduce the stored truth; its gains cannot stand in.")
        first = {a["arm"]: a["select_gains"][0] for a in tr["arms"] if a["arm"] != "no change"}
        last = {k: g["select"] for k, g in fb["gains"].items() if k != "no change"}
        _check_same_training(tr, last, cfg["H"])
        tune_site = fb["tune_site"]
        r = replay_seed(first, last, tr["rungs"], tune_site, cfg["eta"], True, prefer_earlier)
        truth = fb["truth_stored"]
        best = max(truth, key=truth.get)
        gain = truth.get(r["chosen"], 0.0)
        rows.append({"seed": tr["seed"], **r, "chosen_heldout_gain": gain, "best_arm": best, "best_heldout_gain": truth[best],
                     "ratio_to_best": gain / truth[best] if truth[best] > 0 else None, "passes": seed_passes(gain, truth[best])})
    return {"prefer_earlier": prefer_earlier, "trial_out": str(trial_out), "budget_out": str(budget_out), "rows": rows,
            "n_seeds": len(rows), "n_pass": sum(r["passes"] for r in rows)}


def main(argv=None) -> int:
    from plumbing.io import atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trial-out", default="docs/trial-minilm/stdlib")
    ap.add_argument("--budget-out", default="docs/trial-minilm/stdlib_full_budget")
    ap.add_argument("--prefer-earlier", type=float, help="dc.trial_insertion(prefer_earlier=...) (default: None)")
    ap.add_argument("--out", help="write the replay here (JSON)")
    a = ap.parse_args(argv)
    if a.prefer_earlier is not None and not 0 < a.prefer_earlier <= 1:
        ap.error(f"--prefer-earlier == {a.prefer_earlier}, must be in (0, 1]")
    res = replay(Path(a.trial_out), Path(a.budget_out), a.prefer_earlier)
    res["sweep"] = [{"prefer_earlier": r, "n_pass": replay(Path(a.trial_out), Path(a.budget_out), r)["n_pass"]} for r in SWEEP]
    res["earliest_over_best_first_rung"] = earliest_lead_ratio(Path(a.trial_out))
    res["command"] = "python benchmarks/_trial_design.py" + ("" if a.prefer_earlier is None else f" --prefer-earlier {a.prefer_earlier!r}") + (
        "" if a.trial_out == "docs/trial-minilm/stdlib" else f" --trial-out {a.trial_out}") + (
        "" if a.budget_out == "docs/trial-minilm/stdlib_full_budget" else f" --budget-out {a.budget_out}") + (f" --out {a.out}" if a.out else "")
    for r in res["rows"]:
        print(f"{r['seed']:>4} kept {', '.join(r['kept']):60} chose {r['chosen']:24} ratio "
              f"{'n/a' if r['ratio_to_best'] is None else format(r['ratio_to_best'], '.3f')} pass {r['passes']}")
    print(f"{res['n_pass']}/{res['n_seeds']} design seeds pass (prefer_earlier {a.prefer_earlier})")
    print("sweep: " + ", ".join(f"{w['prefer_earlier']}: {w['n_pass']}" for w in res["sweep"]))
    print(f"the first block's select gain over the best block's after the first rung: min "
          f"{res['earliest_over_best_first_rung']['min']:.3f} over the seeds (any ratio up to it keeps the first block in every seed)")
    if a.out:
        atomic_write_json(Path(a.out), res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
