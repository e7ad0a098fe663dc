"""Issue 25: the seeds' words decide, one verdict per convention, and 'not detected' is never 'not reproduced'."""
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from numerics.studies import reproduce as rp
from numerics.studies.reproduce import _mnist1d_conventions as mc
from numerics.studies.reproduce import _mnist1d_signals as sg
from numerics.studies.reproduce._claims import (CLAIM_SETS, PRESET_VERDICTS, Claim, Rule, convention_rule, decide,
                                                 summarise)
from numerics.studies.reproduce._seeds import SEED_WORDS

ALL = [c for claims in CLAIM_SETS.values() for c in claims]
SEEDS_DIR = Path(__file__).resolve().parents[3] / ".." / "shared" / "seeds"
NOT_DETECTED_TESTS = {"joint_improves": False, "joint_worsens": False, "rebound": False, "depth_alone_improves": True,
                      "depth_alone_monotone": False, "early_drop": False, "early_rise": False, "flat": False}


def test_every_claim_carries_its_seed_sentence():
    for c in ALL:
        assert c.seed_words and c.paper_says == c.seed_words, c.id
        assert re.fullmatch(r"00[0-4]_[0-9a-f]{16}\.txt", c.seed), c.id
        assert c.seed.startswith("001") == c.source.startswith("Paper B"), c.id     # 001 is Paper B
        if SEEDS_DIR.is_dir():
            assert (SEEDS_DIR / c.seed).is_file(), c.seed
    assert set(SEED_WORDS) >= {c.id for c in ALL}


def test_nothing_but_the_seed_is_printed_as_what_the_paper_says():
    """The project's own formalisations stay out of paper_says: Assumption G's exponent, a failure probability."""
    for c in ALL:
        assert "2 alpha - 1" not in c.paper_says and "probability" not in c.paper_says, c.id
        assert not c.choice or c.conventions or c.id in ("exponent_agreement",) or c in CLAIM_SETS["teacher"], c.id
    ids = {c.id: c for c in ALL}
    assert "Assumption G" in ids["exponent_agreement"].choice


def _not_detected(rule: Rule) -> dict:
    """Evidence whose interval covers both the claimed side and the other: an effect not detected."""
    t = rule.threshold
    a = t if rule.against is None else rule.against
    lo, hi = min(t, a, -t) - 1.0, max(t, a, -t) + 1.0
    return {"estimate": (lo + hi) / 2, "interval": [lo, hi], "confidence": 0.95,
            "details": {"tests": dict(NOT_DETECTED_TESTS), "alpha_interval": [-1.0, 1.0]}}


@pytest.mark.parametrize("claim", ALL, ids=lambda c: c.id)
def test_no_rule_says_not_reproduced_when_the_effect_is_not_detected(claim):
    assert claim.rule.decide(_not_detected(claim.rule)) == "inconclusive"


def test_the_not_detected_scan_can_fail():
    """A rule of the form 'effect not detected -> not reproduced' is caught by the same planted evidence."""
    class Bad(Rule):
        def decide(self, evidence):
            lo, hi = evidence["interval"]
            return "reproduced" if hi < self.threshold else "not reproduced"

    assert Bad("below", 0.5).decide(_not_detected(Bad("below", 0.5))) == "not reproduced"


def planted_study(ctx):
    """A planted claim's study: three conventions, none with a detected effect, one preset unresolved."""
    convs = [{"convention": f"c{k}", "statistic": "x", "estimate": 0.0, "interval": [-1.0, 1.0], "mde": 0.7}
             for k in range(2)] + [{"convention": "c2", "statistic": "x", "estimate": math.nan,
                                    "interval": [math.nan, math.nan], "verdict": "inconclusive"}]
    return {"measured": "x = 0 [-1, 1]", "estimate": 0.0, "interval": [-1.0, 1.0], "confidence": 0.95, "figures": [],
            "details": {"conventions": convs}}


def test_a_planted_claim_not_detected_under_every_convention_is_inconclusive(tmp_path):
    claim = Claim("planted", "Paper A", "w", "tests.numerics.studies.test_reproduce_conventions:planted_study", "x",
                  Rule("above", 0.0), seed_words="w", seed="000_fa3b3d02841b3a6c.txt", choice="ours")
    res = rp._measure(claim, rp.ReproduceContext(rp.SUITES["quick"], tmp_path, {}, {}))
    assert res.verdict == "inconclusive" and [c["verdict"] for c in res.conventions] == ["inconclusive"] * 3
    d = res.to_dict()
    assert d["seed_words"] == "w" and len(d["conventions"]) == 3 and d["conventions"][0]["mde"] == 0.7


def test_a_convention_cannot_preset_a_decided_verdict():
    claim = Claim("p", "Paper A", "w", "m:f", "x", Rule("above", 0.0))
    ev = {"details": {"conventions": [{"convention": "c", "statistic": "x", "interval": [1, 2],
                                       "verdict": "not reproduced"}]}}
    with pytest.raises(ValueError, match="only a rule decides"):
        decide(claim, ev)
    assert "not reproduced" not in PRESET_VERDICTS and "reproduced" not in PRESET_VERDICTS


def test_a_convention_is_decided_by_its_own_interval_rule_when_it_names_one():
    claim = Claim("p", "Paper A", "w", "m:f", "x", Rule("above", 0.0))
    conv = {"convention": "c", "statistic": "x", "interval": [-0.03, -0.01]}
    ev = {"details": {"conventions": [conv, {**conv, "convention": "d", "rule": {"kind": "above", "threshold": -0.05}}]}}
    verdict, out = decide(claim, ev)
    assert [c["verdict"] for c in out] == ["not reproduced", "reproduced"] and verdict == "convention-dependent"
    for bad in ({"kind": "plateau"}, {"kind": "anything", "threshold": 0}):
        with pytest.raises(ValueError, match="rule kind"):
            decide(claim, {"details": {"conventions": [{**conv, "rule": bad}]}})
    with pytest.raises(ValueError, match="names no rule"):
        convention_rule(conv)


def test_the_summary_names_convention_dependence():
    assert summarise(["reproduced", "reproduced"]) == "reproduced"
    assert summarise(["reproduced", "not reproduced"]) == "convention-dependent"
    assert summarise(["inconclusive", "not run"]) == "inconclusive" and summarise(["not run"]) == "not run"
    claim = Claim("p", "Paper A", "w", "m:f", "x", Rule("below", 0.5))
    ev = {"details": {"conventions": [{"convention": "a", "statistic": "r", "interval": [0.1, 0.2]},
                                      {"convention": "b", "statistic": "r", "interval": [0.8, 0.9]}]}}
    verdict, convs = decide(claim, ev)
    assert verdict == "convention-dependent" and [c["verdict"] for c in convs] == ["reproduced", "not reproduced"]


def test_within_rule():
    r = Rule("within", 1.0)
    assert r.decide({"interval": [-0.5, 0.8]}) == "reproduced"
    assert r.decide({"interval": [1.2, 3.0]}) == "not reproduced" and r.decide({"interval": [-3, -1.5]}) == "not reproduced"
    assert r.decide({"interval": [0.5, 2.0]}) == "inconclusive"


def test_u_statistic_and_its_jackknife_against_a_loop():
    X = torch.as_tensor(np.random.default_rng(0).normal(0.2, 1.0, size=(30, 3, 2)))
    U, se = sg.u_statistic_sq(X)
    flat = X.reshape(30, -1).numpy()

    def u(a):
        n = a.shape[0]
        return sum(a[i] @ a[j] for i in range(n) for j in range(n) if i != j) / (n * (n - 1))

    assert U == pytest.approx(u(flat), rel=1e-10)
    loo = np.array([u(np.delete(flat, i, 0)) for i in range(30)])
    assert se == pytest.approx(math.sqrt(29 / 30 * ((loo - loo.mean()) ** 2).sum()), rel=1e-8)
    with pytest.raises(ValueError, match="n == 2"):
        sg.u_statistic_sq(X[:2])


def test_u_statistic_is_unbiased_and_its_se_covers():
    """Monte Carlo: mean of U = ||mu||^2 (the plug-in is biased up by tr(Sigma)/n); 95% intervals U +- 1.96 se
    cover ||mu||^2 at about 95% (a halved se would cover at ~68%)."""
    rng = np.random.default_rng(1)
    mu, n, reps = np.array([0.3, -0.2, 0.1, 0.0]), 200, 400
    us, cover, half = [], 0, 0
    for _ in range(reps):
        X = torch.as_tensor(mu + rng.normal(size=(n, 4)))
        U, se = sg.u_statistic_sq(X)
        us.append(U)
        cover += abs(U - mu @ mu) <= 1.96 * se
        half += abs(U - mu @ mu) <= 0.98 * se
    assert np.mean(us) == pytest.approx(mu @ mu, abs=3 * np.std(us) / math.sqrt(reps))
    assert 0.91 <= cover / reps <= 0.98 and half / reps < 0.8


def test_covariance_conventions_against_numpy_and_the_null():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(300, 1, 5))
    m = torch.as_tensor(z + 0.8 * rng.normal(size=(300, 4, 5)))           # channels share z: correlated
    got = sg.covariance_conventions(m)

    def ratio(rows):
        S = np.cov(rows.T)
        return np.linalg.norm(S - np.diag(np.diag(S))) / np.linalg.norm(S)

    a = m.numpy()
    assert got["per_channel"] == pytest.approx(ratio(a.transpose(0, 2, 1).reshape(-1, 4)), rel=1e-9)
    assert got["summed"] == pytest.approx(ratio(a.sum(-1)), rel=1e-9)
    assert got["state"] == pytest.approx(ratio(a.reshape(300, -1)), rel=1e-9)
    assert got["per_channel"] > 0.6 and got["per_channel_null"] < 0.15   # the null removes the dependence


def test_equicorrelation_reproduces_the_width_dependence():
    """At a fixed correlation 0.28 the ratio is 0.73 at 16 channels and 0.91 at 64 (issue 25); the inverse holds."""
    assert mc._ratio_at(0.28, 16) == pytest.approx(0.735, abs=0.005)
    assert mc._ratio_at(0.28, 64) == pytest.approx(0.912, abs=0.005)
    assert mc.equicorrelation(mc._ratio_at(0.28, 16), 16) == pytest.approx(0.28, rel=1e-9)
    S = 0.28 * np.ones((16, 16)) + 0.72 * np.eye(16)                       # by hand
    assert np.linalg.norm(S - np.diag(np.diag(S))) / np.linalg.norm(S) == pytest.approx(mc._ratio_at(0.28, 16))


def test_a_batch_mean_gradient_is_the_per_sample_gradient_over_b():
    """The level claim's reduction convention is a division: in eval mode the samples do not interact."""
    from numerics.zoo_cnn1d import ResCNN1d

    net = ResCNN1d(1, 8, 2, 10, groups=4, seed=3).eval()
    x, y = torch.randn(16, 1, 40), torch.randint(0, 10, (16,))
    per = sg.activation_gradients(net, ["blocks.0"], x, y, "cross_entropy", batch_size=16)["blocks.0"]
    store = {}

    def keep(mod, args, out):
        out.retain_grad()
        store["u"] = out

    h = dict(net.named_modules())["blocks.0"].register_forward_hook(keep)
    torch.nn.functional.cross_entropy(net(x), y).backward()               # the gradient of the batch mean
    h.remove()
    assert torch.allclose(store["u"].grad, per / 16, rtol=1e-5, atol=1e-12)
    assert float(per.reshape(16, -1).norm(dim=1).max()) > 0


def _curves(ag_onset: int, loss_onset: int, seeds: int = 4):
    D = np.arange(1, 9, dtype=float)
    rng = np.random.default_rng(ag_onset * 10 + loss_onset)
    ag = np.log(np.where(D < ag_onset, 2.0 ** -D, 2.0 ** -ag_onset)) + rng.normal(0, 0.01, (seeds, D.size))
    loss = np.where(D < loss_onset, 1.0 / D, 1.0 / loss_onset) + rng.normal(0, 0.001, (seeds, D.size))
    return D, ag, loss


def test_onsets_coincide_or_not_on_synthetic_curves():
    D, ag, loss = _curves(4, 4)
    assert mc.onset_difference(D, ag, loss) == 0.0
    D, ag, loss = _curves(2, 6)
    assert mc.onset_difference(D, ag, loss) < -1                          # more than a factor 2 apart
    assert Rule("within", 1.0).decide({"interval": [mc.onset_difference(D, ag, loss)] * 2}) == "not reproduced"
    D, ag, loss = _curves(4, 4)
    rising = np.log(np.tile(D, (4, 1)))
    assert math.isnan(mc.onset_difference(D, rising, loss))               # no AG_max onset: undefined


def test_signal_resolution_reports_unresolved_depths():
    def cell(d, s, U, se):
        return {"config": {"seed": s, "model": {"depth": d}, "saturation": {"probe_n": 1000}},
                "diagnostics": {"sites": {"m_sq_ustat": [U], "m_sq_ustat_se": [se]}}}

    cells = [cell(d, s, 1.0 / d, 0.01) for d in (1, 2, 4) for s in (0, 1)]
    D, U, se, ok, need = mc.signal_resolution(cells, "m", "max")
    assert ok.all() and mc._alpha(D, U) == pytest.approx(0.5)
    cells = [cell(d, s, 1.0 / d if d < 4 else 0.01, 0.05) for d in (1, 2, 4) for s in (0, 1)]
    D, U, se, ok, need = mc.signal_resolution(cells, "m", "max")
    assert ok.tolist() == [True, True, False] and need[-1] > 1000
