"""``dc.saturation(curvature=..., suggest=...)`` and ``report.costs`` (issue 38: pay for what you ask).

The forwards are counted by a forward pre-hook on the model (each input batch recorded), and each
batch is matched to the sample it came from: the probe, the step sample (the curvature sample's
first half: ``beta`` and the jumpboard steps) or the gain sample (its second half: the insertion
check). The full call is the reference the cheaper calls must equal.
"""
import json
import math

import pytest
import torch
from torch import nn

import depthcert as dc

N, K = 2048, 256           # data; curvature_n (the first K samples of the data: step sample K/2, gain sample K/2)
SITES = ["1", "2"]
SCAN_FIELDS = ("site", "layout", "d", "P", "r", "n", "P_linear", "P_affine", "P_readout", "P_block", "P_all", "G_sq",
               "G_norm", "AG_max", "rho_phi", "log_wealth", "threshold", "reject", "b_violations", "sigma2", "n_to_reject")


def _net_and_data():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()),
                        nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(N, 3, generator=g, dtype=torch.float64)
    return net, x, (x[:, 0] > 0).long()


class Forwards:
    """Every forward's input batch, labelled by the sample its rows come from (by value)."""

    def __init__(self, net, x):
        self.x, self.seen = x, []
        self.handle = net.register_forward_pre_hook(lambda m, args: self.seen.append(args[0].detach().clone()))

    def roles(self) -> list[str]:
        out = []
        for b in self.seen:
            if b.shape[0] <= 2:                       # site resolution / shapes: x[:2] of the curvature sample
                out.append("shape")
                continue
            rows = [int(torch.nonzero((self.x == r).all(1))[0, 0]) for r in b]
            lo, hi = min(rows), max(rows)
            out.append("probe" if lo >= K else "step" if hi < K // 2 else "gain" if lo >= K // 2 else "mixed")
        return out

    def close(self):
        self.handle.remove()


def _call(net, x, y, **kw):
    fw = Forwards(net, x)
    try:
        rep = dc.saturation(net, (x, y), sites=SITES, curvature_n=K, **kw)
    finally:
        fw.close()
    return rep, fw.roles()


@pytest.fixture(scope="module")
def full():
    net, x, y = _net_and_data()
    rep, roles = _call(net, x, y)
    return net, x, y, rep, roles


def test_the_full_call_runs_every_part(full):
    _, _, _, rep, roles = full
    assert rep.curvature == "all" and rep.curvature_sites == SITES and rep.suggestion_reason.startswith("suggested")
    assert {"probe", "step", "gain"} <= set(roles) and "mixed" not in roles


def test_without_the_suggestion_no_gain_sample_forward_and_the_same_verdict_and_scores(full):
    net, x, y, ref, ref_roles = full
    rep, roles = _call(net, x, y, suggest=False)
    assert "gain" not in roles and "mixed" not in roles and "gain" in ref_roles
    assert roles.count("step") < ref_roles.count("step")          # the jumpboard steps' forwards are gone
    assert roles.count("probe") == ref_roles.count("probe")
    for key in ("verdict", "best_site", "predicted_gain", "certified_gain", "gain_ucb", "n_needed", "n_needed_improvable",
                "n_needed_saturated"):
        assert getattr(rep, key) == getattr(ref, key), key
    assert rep.sites == ref.sites                                   # every field of every site, exactly
    assert rep.insertion is None and rep.suggestion is None and rep.suggestion_reason.startswith("not asked")
    with pytest.raises(ValueError, match="suggest=False"):
        rep.gain_interval("readout")


def test_the_scan_alone_runs_only_probe_forwards_and_keeps_every_scan_score(full):
    net, x, y, ref, _ = full
    rep, roles = _call(net, x, y, curvature="none")
    assert set(roles) <= {"probe", "shape"} and roles.count("probe") == math.ceil((N - K) / 256)
    assert rep.curvature_sites == [] and rep.insertion is None
    for a, b in zip(rep.sites, ref.sites):
        assert {k: a[k] for k in SCAN_FIELDS} == {k: b[k] for k in SCAN_FIELDS}
        assert a["beta"] is None and a["predicted_gain"] is None and a["gain_ucb"] == math.inf
    # both sites reject in the full call: the scan alone says improvable (never saturated), nothing certified
    assert all(r["reject"] for r in ref.sites) and ref.verdict == "improvable"
    assert rep.verdict == "improvable" and rep.certified_gain == 0.0 and rep.predicted_gain is None
    assert rep.best_site == max(ref.sites, key=lambda r: r["G_sq"])["site"]


def test_auto_gives_the_full_calls_verdict_site_and_predicted_gain(full):
    """Both sites reject: both are candidates for best_site and must get beta_natural (a variant that
    measured only the first candidate picks site 1 here, not the full call's site 2)."""
    net, x, y, ref, ref_roles = full
    rep, roles = _call(net, x, y, curvature="auto")
    assert ref.best_site == "2"
    for key in ("verdict", "best_site", "predicted_gain"):
        assert getattr(rep, key) == getattr(ref, key), key
    assert 0.0 < rep.certified_gain <= ref.certified_gain
    best = rep.site(rep.best_site)
    assert best["beta"] == ref.site(ref.best_site)["beta"] and best["beta_natural"] == ref.site(ref.best_site)["beta_natural"]
    assert roles.count("step") <= ref_roles.count("step")
    assert rep.suggestion_reason == ref.suggestion_reason


def test_costs_are_reported_non_negative_and_add_up(full, tmp_path):
    _, _, _, rep, _ = full
    parts = ("scan_s", "curvature_s", "suggestion_s", "other_s")
    assert set(rep.costs) == set(parts) | {"total_s"}
    assert all(isinstance(rep.costs[k], float) and rep.costs[k] >= 0 for k in rep.costs)
    assert sum(rep.costs[k] for k in parts) == pytest.approx(rep.costs["total_s"], rel=1e-6)
    assert rep.costs["scan_s"] > 0 and rep.costs["curvature_s"] > 0 and rep.costs["suggestion_s"] > 0
    back = json.loads(rep.to_json(tmp_path / "r.json").read_text())
    assert back["costs"] == pytest.approx(rep.costs) and back["curvature"] == "all" and back["curvature_sites"] == SITES
    assert rep.cost_text().startswith("cost: scan ") and "beta at 2 of 2 sites" in rep.cost_text()


@pytest.mark.parametrize("kw, match", [({"curvature": "some"}, r"curvature == 'some', must be one of \['all', 'auto', 'none'\]"),
                                       ({"suggest": "yes"}, r"suggest == 'yes', must be True, False or None"),
                                       ({"curvature": "none", "suggest": True}, r"must be suggest=False")])
def test_bad_modes_are_refused_by_name(full, kw, match):
    net, x, y, _, _ = full
    with pytest.raises(ValueError, match=match):
        dc.saturation(net, (x, y), sites=SITES, curvature_n=K, **kw)


def test_auto_without_a_rejecting_site_stops_beta_where_the_answer_is_fixed():
    """No site rejects (noise labels, 96 samples): every site gets beta_natural (best_site ranks all), and beta
    in decreasing ||G|| + radius until one site has n_to_saturate None (its gain >= eps: not saturated, and
    n_needed_saturated None whatever the rest). The verdict, best_site, predicted_gain and n_needed equal the
    full call's, with fewer step-sample forwards."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), *[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)], nn.Linear(8, 2)).double()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(96, 3, generator=g, dtype=torch.float64)
    y = torch.randint(0, 2, (96,), generator=g)
    kw = dict(sites=["1", "2", "3"], curvature_n=32, n_chunks=4, eps=1e-3)
    fw = Forwards(net, x)
    ref = dc.saturation(net, (x, y), **kw)
    n_ref, fw.seen = len(fw.seen), []
    rep = dc.saturation(net, (x, y), curvature="auto", **kw)
    n_auto = len(fw.seen)
    fw.close()
    assert not any(r["reject"] for r in ref.sites) and ref.verdict == "undetermined"
    for key in ("verdict", "saturated", "best_site", "predicted_gain", "certified_gain", "n_needed", "n_needed_improvable",
                "n_needed_saturated"):
        assert getattr(rep, key) == getattr(ref, key), key
    for a, b in zip(rep.sites, ref.sites):
        assert a["beta_natural"] == b["beta_natural"] and a["predicted_gain"] == b["predicted_gain"]
        assert a["beta"] is None or (a["beta"] == b["beta"] and a["n_to_saturate"] == b["n_to_saturate"])
    from depthcert.api._modes import ucb_norm
    order = sorted(ref.sites, key=lambda r: -ucb_norm(r, 0.05 / 3))
    stop = next(i for i, r in enumerate(order) if r["n_to_saturate"] is None)
    assert stop > 0                                  # the first site does not fix it: a variant stopping there would differ
    assert [r["site"] for r in rep.sites if r["beta"] is not None] == sorted(r["site"] for r in order[:stop + 1])
    assert stop + 1 < len(rep.sites) and n_auto < n_ref              # beta skipped where it cannot change the answer
