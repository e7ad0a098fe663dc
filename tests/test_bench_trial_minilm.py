"""The MiniLM acceptance benchmark's machinery (``benchmarks/bench_trial_minilm.py``) on a tiny stand-in (the planted
problem of ``tests/api/_planted.py``, not MiniLM): one seed's row, its truth arms, the pass rule on planted numbers
and the summary's verdict and interval (scipy's exact binomial interval as the independent computation)."""
from __future__ import annotations

import pytest
from scipy import stats

from benchmarks.bench_trial_minilm import ACCEPT_COST, first_rung, seed_passes, seed_row, summary
from tests.api._planted import Planted, draw, squared


@pytest.fixture(scope="module")
def row():
    return seed_row(Planted(), draw(400, 1), draw(200, 2), draw(300, 3), sites="blocks.*", steps=9, eta=3, loss=squared,
                    lr=2e-2, batch_size=64, seed=0, scan_kwargs={"curvature_n": 64})


def test_seed_row_has_every_arm_and_reproduces_the_trials_arm(row):
    assert set(row["truth"]) == {"block@blocks.0", "block@blocks.1", "block@blocks.2", "no change",
                                 next(a["arm"] for a in row["arms"] if a["arm"].startswith("tune@"))}
    assert row["truth"]["no change"] == 0.0
    assert row["best_realised_gain"] == max(row["truth"].values())
    assert row["chosen_realised_gain"] == row["truth"][row["chosen"]]
    # the truth retrains the chosen arm from the trial's own construction: its held-out gain is the trial's
    assert row["trial_matches_truth"], (row["trial_heldout_gain"], row["chosen_realised_gain"])
    assert row["total_steps"] == sum(a["steps_trained"] for a in row["arms"])
    assert row["cost_ratio"] == pytest.approx(row["total_steps"] / 9)
    # 3 blocks + the tune arm, eta 3: all 4 to 9 // 3 = 3 steps, then ceil(4 / 3) = 2 of them up to 9: 4 * 3 + 2 * 6 = 24
    assert row["rungs"] == [3, 9] and row["total_steps"] == 24
    assert row["passes"] == seed_passes(row["chosen_realised_gain"], row["best_realised_gain"])


def test_pass_rule_on_planted_numbers():
    best = 0.037
    assert not seed_passes(0.89 * best, best)
    assert seed_passes(0.91 * best, best)
    assert seed_passes(best, best)
    # every trained arm <= 0: the best arm is "no change" (0); the chosen arm passes iff its gain is >= 0
    assert seed_passes(0.0, 0.0) and not seed_passes(-1e-4, 0.0)


def _rows(passes, cost=3.0):
    return [{"passes": p, "cost_ratio": cost, "all_arms_nonpositive": False, "trial_matches_truth": True} for p in passes]


def test_summary_verdict_and_clopper_pearson():
    s = summary(_rows([True] * 8 + [False] * 2))
    ci = stats.binomtest(8, 10).proportion_ci(confidence_level=0.95, method="exact")
    assert s["verdict"] == "PASS" and s["rate"] == 0.8
    assert s["rate_cp95"] == pytest.approx([ci.low, ci.high], abs=1e-9)
    assert summary(_rows([True] * 7 + [False] * 3))["verdict"] == "FAIL"
    assert summary(_rows([True] * 10, cost=ACCEPT_COST + 0.01))["verdict"] == "FAIL"
    assert summary(_rows([True] * 10, cost=4.33))["verdict"] == "FAIL"


def test_first_rung_reads_the_arms_order_against_the_truth_and_the_best_arms_survival():
    arms = [{"arm": a, "select_gains": g} for a, g in (("a", [0.3, 0.5]), ("b", [0.2, 0.4]), ("c", [0.1]), ("d", [0.0]))]
    row = {"arms": arms, "rungs": [4, 20], "truth": {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "no change": 0.0}, "best_arm": "d"}
    f = first_rung(row)                             # the first rung orders the arms exactly against the truth
    assert f["rho_first_rung_vs_truth"] == pytest.approx(-1.0) and not f["best_survived_first_rung"]
    row = {**row, "truth": {"a": 0.4, "b": 0.3, "c": 0.2, "d": 0.1}, "best_arm": "a"}
    f = first_rung(row)
    assert f["rho_first_rung_vs_truth"] == pytest.approx(1.0) and f["best_survived_first_rung"]
    assert "first_rung" not in summary(_rows([True] * 10))      # rows without arms: no diagnostic


def test_the_results_page_words_follow_the_stored_run():
    """The sentences of docs/RESULTS.md on the stored MiniLM run (docs/trial-minilm/results.json), each checked."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    res = json.loads((root / "docs/trial-minilm/results.json").read_text())
    rows, s = res["rows"], res["summary"]
    page = " ".join((root / "docs/RESULTS.md").read_text().split())
    assert s["n_seeds"] >= 10 and res["config"]["eta"] == 5 and s["cost_ratio_max"] <= 3.0
    assert s["verdict"] == ("PASS" if s["n_pass"] / s["n_seeds"] >= 0.8 else "FAIL")
    assert [r["passes"] for r in rows] == [seed_passes(r["chosen_realised_gain"], r["best_realised_gain"]) for r in rows]
    tune_best = [r for r in rows if r["best_arm"].startswith("tune@")]
    assert len(tune_best) == 2 and "in two seeds the best arm was the existing layer tuned" in page
    tune = [next(a for a in r["arms"] if a["arm"].startswith("tune@")) for r in rows]
    assert all(a["eliminated_at"] == r["rungs"][0] and a["select_gains"][0] < 0 for a, r in zip(tune, rows))
    others = [r for r in rows if not r["passes"] and r not in tune_best]
    assert all(r["chosen_kind"] == "block" and r["chosen"] != r["best_arm"] for r in others)
    assert all(r["trial_matches_truth"] for r in rows)


def _corpus():
    """A stand-in corpus: role ``a`` with documents of 5, 1 and 3 sequences, role ``b`` with one of 4 (ids = row)."""
    from types import SimpleNamespace

    import torch

    doc = {"a": torch.tensor([0, 0, 0, 0, 0, 1, 2, 2, 2]), "b": torch.tensor([0, 0, 0, 0])}
    x = {"a": torch.arange(9)[:, None], "b": 100 + torch.arange(4)[:, None]}
    return SimpleNamespace(x=x, y={r: v.clone() for r, v in x.items()}, doc_of=doc,
                           sample=lambda r, n, seed: (x[r][:n], x[r][:n]))


@pytest.mark.parametrize("per_doc", [1, 2, 3, 10])
def test_capped_keeps_at_most_per_doc_sequences_of_every_document(per_doc):
    import collections

    import torch

    from benchmarks._trial_samples import _capped

    doc = _corpus().doc_of["a"]
    for seed in range(5):
        keep = _capped(doc, per_doc, torch.Generator().manual_seed(seed)).tolist()
        counts = collections.Counter(doc[keep].tolist())
        assert len(set(keep)) == len(keep) and counts == {d: min(per_doc, k) for d, k in {0: 5, 1: 1, 2: 3}.items()}


def test_from_roles_draws_from_the_union_and_caps_each_document():
    from benchmarks._trial_samples import _from_roles

    c = _corpus()
    x, y = _from_roles(c, ["a", "b"], 50, seed=0)                 # no cap: every sequence of both roles, once
    assert sorted(x[:, 0].tolist()) == list(range(9)) + [100, 101, 102, 103] and (x == y).all()
    x, _ = _from_roles(c, ["a", "b"], 50, seed=1, per_doc=2)     # 2 + 1 + 2 of a, 2 of b
    assert len(x) == 7 and sum(v >= 100 for v in x[:, 0].tolist()) == 2
    assert len(_from_roles(c, "a", 4, seed=2, per_doc=2)[0]) == 4 and _from_roles(c, "a", 3, seed=0)[0][:, 0].tolist() == [0, 1, 2]



def test_a_run_with_options_names_them_in_its_pages_title():
    from benchmarks.bench_trial_minilm import _variant

    base = "OMP_NUM_THREADS=1 python benchmarks/bench_trial_minilm.py"
    assert _variant(base) == "" and _variant(base + " --out docs/x") == ""
    assert _variant(base + " --first-seed 20 --out docs/x --tune-survives") == " (`--first-seed 20 --tune-survives`)"


def test_a_seed_whose_corpus_is_too_small_is_skipped_and_the_next_seed_added(tmp_path, monkeypatch):
    import json

    import benchmarks.bench_trial_minilm as bench

    small = {1, 4}                                   # seeds whose roles hold too few sequences
    (tmp_path / "seeds").mkdir()
    got = {}

    def planted_row(net, fit, select, heldout, *, seed, **kw):
        return {"seed": seed, "passes": True, "chosen": "a", "chosen_realised_gain": 0.0, "best_arm": "a",
                "best_realised_gain": 0.0, "cost_ratio": 3.0, "seconds": 0.0}

    def fake_store(out, command, config, h, seeds, rows, summ, *a):
        got.update(seeds=seeds, rows=rows, skipped=summ.get("skipped_seeds"), h=h)
        return {"summary": summ}
    def read(out, s):        # the stored seed as benchmarks._trial_store.stored_seeds reads it back
        rec = json.loads((out / "seeds" / f"seed_{s}.json").read_text())
        return rec["row"] if "row" in rec else {"skipped": rec["skipped"]}
    monkeypatch.setattr(bench, "stored_seeds", lambda out, seeds, config, model=None: (
        {s: read(out, s) for s in seeds if (out / "seeds" / f"seed_{s}.json").exists()}, *(model or ("net", "tok", "cfg", "h0"))))
    monkeypatch.setattr(bench, "_samples", lambda tok, cfg, s, *a: "too few" if s in small else
                        {"fit": 0, "select": 0, "heldout": 0})
    monkeypatch.setattr(bench, "seed_row", planted_row)
    monkeypatch.setattr(bench, "summary", lambda rows: {"n_seeds": len(rows)})
    monkeypatch.setattr(bench, "store_results", fake_store)
    (tmp_path / "seeds" / "seed_5.json").write_text(json.dumps({"row": {"seed": 5, "stored": True}}))
    bench.run(tmp_path, [0, 1, 2, 3], "cmd")
    # 1 skipped -> 4 added, skipped -> 5 added (stored earlier: read back, not recomputed)
    assert got["seeds"] == [0, 2, 3, 5] and set(got["skipped"]) == {"1", "4"}
    assert [r["seed"] for r in got["rows"]] == [0, 2, 3, 5] and got["rows"][-1].get("stored") is True
    assert sorted(p.name for p in (tmp_path / "seeds").iterdir()) == [f"seed_{s}.json" for s in range(6)]
    assert json.loads((tmp_path / "seeds" / "seed_4.json").read_text())["skipped"] == "too few"   # the skip is stored
    monkeypatch.setattr(bench, "_samples", lambda *a: pytest.fail("a stored seed or skip recomputed"))
    bench.run(tmp_path, [0, 1, 2, 3], "cmd")                      # a rerun: every seed and skip read back
    assert got["seeds"] == [0, 2, 3, 5] and set(got["skipped"]) == {"1", "4"}
    small.update(range(100))
    for p in (tmp_path / "seeds").iterdir():
        p.unlink()
    monkeypatch.setattr(bench, "_samples", lambda tok, cfg, s, *a: "too few")
    with pytest.raises(SystemExit, match="5 seeds skipped.*ask for fewer"):   # no seed holds the sizes: stops, not forever
        bench.run(tmp_path, [0, 1, 2, 3], "cmd")


def test_the_results_page_words_on_the_larger_corpus_follow_its_stored_run():
    """docs/RESULTS.md's sentences on the fourth design (docs/trial-minilm/stdlib/results.json), each checked: where the
    failing seeds' best arm was, where it was lost, and the seeds the corpus could not hold."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    res = json.loads((root / "docs/trial-minilm/stdlib/results.json").read_text())
    rows, s, page = res["rows"], res["summary"], " ".join((root / "docs/RESULTS.md").read_text().split())
    assert [r["passes"] for r in rows] == [seed_passes(r["chosen_realised_gain"], r["best_realised_gain"]) for r in rows]
    failing = [r for r in rows if not r["passes"]]
    assert {r["best_arm"] for r in failing} <= {"block@encoder.layer.0", "block@encoder.layer.1"}
    assert "the best arm was a block at `encoder.layer.0` or `encoder.layer.1`" in page
    lost = [r for r in failing if any(a["arm"] == r["best_arm"] and a["eliminated_at"] == r["rungs"][0] for a in r["arms"])]
    kept = [r for r in failing if r not in lost]
    assert all(r["chosen_kind"] == "block" and int(r["chosen"].rsplit(".", 1)[1]) > int(r["best_arm"].rsplit(".", 1)[1])
               for r in lost) and "in favour of a block at a later layer" in page
    assert len(kept) == 1 and kept[0]["chosen_kind"] == "tune" and "the tuned layer was chosen over it at the last rung" in page
    first = lambda r, arm: next(a["select_gains"][0] for a in r["arms"] if a["arm"] == arm)   # noqa: E731
    assert all(first(r, r["chosen"]) > first(r, r["best_arm"]) for r in lost) and "that was ahead then" in page
    assert all(r["trial_matches_truth"] for r in rows) and s["cost_ratio_max"] <= 3.0
    c = res["config"]
    assert c["H"] * c["batch_size"] <= c["N"]["fit"] and "no sequence seen twice" in page     # every minibatch new
    # "the first 20 seeds from 40 on": the seeds run and the seeds skipped make one unbroken range
    assert sorted(res["seeds"] + [int(k) for k in s["skipped_seeds"]]) == list(range(res["seeds"][0], res["seeds"][-1] + 1))
    assert len(res["seeds"]) == s["n_seeds"] == 20


def test_stored_seeds_reads_rows_and_skips_and_refuses_another_configuration(tmp_path):
    import json

    from benchmarks._trial_store import stored_seeds

    (tmp_path / "seeds").mkdir()
    cfg = {"H": 20}
    for s, rec in {0: {"row": {"seed": 0}}, 1: {"skipped": "too few"}}.items():
        (tmp_path / "seeds" / f"seed_{s}.json").write_text(json.dumps({"config": cfg, "f_old_hash": "h", **rec}))
    done, *model = stored_seeds(tmp_path, [0, 1], cfg)                     # every seed stored: no f_old trained
    assert done == {0: {"seed": 0}, 1: {"skipped": "too few"}} and model == [None, None, None, "h"]
    with pytest.raises(SystemExit, match="seed_0.json: computed with another configuration"):
        stored_seeds(tmp_path, [0], {"H": 10}, ("net", "tok", "cfg", "h"))
    with pytest.raises(SystemExit, match="another configuration or f_old"):
        stored_seeds(tmp_path, [1], cfg, ("net", "tok", "cfg", "other hash"))


def test_the_budget_reads_the_trial_runs_samples_and_its_skipped_seeds(tmp_path):
    """``_trial_config`` rebuilds the stored full-budget folder's configuration from its trial run (so the stored seeds
    still read back), and takes a planted trial run's sizes, cap, corpus and skipped seeds."""
    import json
    from pathlib import Path

    import benchmarks.bench_trial_minilm_budget as budget

    root = Path(__file__).resolve().parents[1]
    samples, seeds, skipped = budget._trial_config(root / "docs/trial-minilm", list(range(10)))
    stored = json.loads((root / "docs/trial-minilm/full_budget/seeds/seed_0.json").read_text())["config"]
    assert {k: stored[k] for k in samples} == samples and seeds == list(range(10)) and skipped == {}
    (tmp_path / "seeds").mkdir()
    tc = {"N": {"fit": 9, "select": 8, "heldout": 7}, "roles": {"fit": "S"}, "per_doc": 3, "corpus": "stdlib", "H": 1}
    (tmp_path / "seeds" / "seed_5.json").write_text(json.dumps({"config": tc, "row": {}}))
    (tmp_path / "results.json").write_text(json.dumps({"summary": {"skipped_seeds": {"4": "too few"}}}))
    samples, seeds, skipped = budget._trial_config(tmp_path, [4, 5])
    assert samples == {k: tc[k] for k in ("N", "roles", "per_doc", "corpus")} and seeds == [5] and skipped == {4: "too few"}
    with pytest.raises(SystemExit, match="skipped every seed"):
        budget._trial_config(tmp_path, [4])


@pytest.mark.parametrize("argv", [["--trial-seeds", "--seeds", "3"], ["--trial-seeds", "--first-seed", "2"]])
def test_the_budget_refuses_seed_flags_beside_trial_seeds(argv, capsys):
    import benchmarks.bench_trial_minilm_budget as budget

    with pytest.raises(SystemExit) as e:
        budget.main(argv)
    assert e.value.code == 2 and "give neither --seeds nor --first-seed" in capsys.readouterr().err


def test_the_results_page_words_on_the_fifth_design_follow_its_stored_run():
    """docs/RESULTS.md's sentences on the fifth design (docs/trial-minilm/stdlib_earlier/), each checked against its files:
    fresh seeds (none a design seed, one unbroken range from the protocol's first seed), the seed where the first block
    lost its place, the failing seeds, and the protocol's fixed command."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    folder = root / "docs/trial-minilm/stdlib_earlier"
    res, proto = (json.loads((folder / f).read_text()) for f in ("results.json", "protocol.json"))
    design = json.loads((folder / "design.json").read_text())
    rows, s, page = res["rows"], res["summary"], " ".join((root / "docs/RESULTS.md").read_text().split())
    assert res["command"] == proto["command"] and res["config"]["trial_kwargs"] == {"tune_survives": True, "prefer_earlier": 0.5}
    assert design["prefer_earlier"] == res["config"]["trial_kwargs"]["prefer_earlier"]
    budget = json.loads((root / "docs/trial-minilm/stdlib_full_budget/results.json").read_text())["summary"]
    assert design["n_pass"] == budget["n_pass"] and "the budget diagnostic's ceiling" in page      # "as ... the ceiling"
    assert not set(res["seeds"]) & {r["seed"] for r in design["rows"]} and "(none a design seed)" in page
    assert sorted(res["seeds"] + [int(k) for k in s["skipped_seeds"]]) == list(range(proto["first_seed"], res["seeds"][-1] + 1))
    assert [r["passes"] for r in rows] == [seed_passes(r["chosen_realised_gain"], r["best_realised_gain"]) for r in rows]
    kept = lambda r: [a["arm"] for a in r["arms"] if a["arm"].startswith("block@") and a["eliminated_at"] is None]   # noqa: E731
    first = lambda r, arm: next(a["select_gains"][0] for a in r["arms"] if a["arm"] == arm)   # noqa: E731
    other = [r for r in rows if kept(r) != ["block@encoder.layer.0"]]
    assert len(other) == 1 and kept(other[0]) == ["block@encoder.layer.1"] == [other[0]["best_arm"]]
    lead = max(first(other[0], a["arm"]) for a in other[0]["arms"] if a["arm"].startswith("block@"))
    assert first(other[0], "block@encoder.layer.0") < 0.5 * lead and "was below half the best block's" in page
    failing = [r for r in rows if not r["passes"]]
    assert len(failing) == 2 and "In both failing seeds" in page
    assert all(r["best_arm"] == "block@encoder.layer.0" and r["chosen_kind"] == "tune" for r in failing)
    assert all(r["trial_matches_truth"] for r in rows) and s["cost_ratio_max"] <= 3.0
    earlier = [json.loads((root / "docs/trial-minilm" / d / "results.json").read_text())["summary"]["verdict"]
               for d in ("", "tune_survives", "per_doc", "stdlib")]
    assert earlier == ["FAIL"] * 4 and s["verdict"] == "PASS" and "the first four fail the acceptance, and the fifth" in page
