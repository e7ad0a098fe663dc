"""``dc.insert_block`` (a copy; zero init function-preserving; jumpboard descends) and ``dc.grow``."""
import copy

import pytest
import torch
from torch import nn

import depthcert as dc
from tests.api._nets import ResCNN, synthetic

KW = dict(width=8, batch_size=64, curvature_n=128)


@pytest.fixture(scope="module")
def scanned():
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(1024, length=16)
    return net, x, y, dc.saturation(net, (x, y), **KW)


def _state(net):
    return {k: v.clone() for k, v in net.state_dict().items()}


def test_insert_block_returns_a_copy_and_zero_init_preserves_the_function(scanned):
    net, x, y, rep = scanned
    before, text = _state(net), str(net)
    new = dc.insert_block(net, rep.best_site, family="readout", init="zero", scan=rep)
    assert new is not net and str(net) == text
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())   # the caller's model is untouched
    assert torch.equal(new(x), net(x))                                            # bitwise the same function
    assert sum(p.numel() for p in new.parameters()) > sum(p.numel() for p in net.parameters())


def test_jumpboard_insertion_lowers_the_loss_on_the_step_sample(scanned):
    """Issue 26 changed this contract: the jumpboard is Theorem 1's step on the step sample (the curvature
    sample's first half; forced here, since its check on the other half may refuse it), and a grown model's
    scan sees the user's sites only -- the inserted unit is a site when named."""
    net, x, y, rep = scanned
    new = dc.insert_block(net, rep.best_site, family="readout", init="jumpboard", scan=rep, force=True)
    xc, yc = x[:64], y[:64]   # the step sample: the first half of the first 128 samples (the report says so)
    assert "first 128 samples" in rep.curvature_source and rep.n_curvature == 64
    ce = nn.functional.cross_entropy
    with torch.no_grad():
        assert float(ce(new(xc), yc)) < float(ce(net(xc), yc))
    rep2 = dc.saturation(new, (x, y), **KW)
    assert [r["site"] for r in rep2.sites] == [r["site"] for r in rep.sites]
    unit = f"{rep.best_site}.depthcert_units.0"
    assert unit in [r["site"] for r in dc.saturation(new, (x, y), sites=["blocks.0", unit], **KW).sites]


@pytest.mark.parametrize("kw, exc, match", [
    (dict(site="blocks.9"), ValueError, "site == 'blocks.9', must be one of the scanned sites"),
    (dict(family="block"), ValueError, "family == 'block', must be one of the scanned families"),
    (dict(init="natural"), ValueError, "init == 'natural', must be one of"),
    (dict(scan=None), TypeError, "scan is a NoneType, must be the SaturationReport"),
])
def test_insert_block_bad_input(scanned, kw, exc, match):
    net, x, y, rep = scanned
    args = dict(site=rep.best_site, family="readout", init="jumpboard", scan=rep) | kw
    with pytest.raises(exc, match=match):
        dc.insert_block(net, **args)


def test_grow_adds_blocks_until_the_budget_and_never_changes_the_model(scanned):
    net, x, y, _ = scanned
    before = _state(net)
    g = dc.grow(net, train=(x[512:], y[512:]), probe=(x[:512], y[:512]), max_blocks=1, steps=5, **KW)
    assert list(g.trajectory["step"]) == [0, 1] and g.stop in ("max_blocks", "saturated")
    assert set(g.trajectory.columns) >= {"verdict", "best_site", "predicted_gain", "gain_ucb", "immediate_gain"}
    assert sum(p.numel() for p in g.model.parameters()) > sum(p.numel() for p in net.parameters())
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def test_grow_stops_when_saturated_within_eps(scanned):
    net, x, y, _ = scanned
    g = dc.grow(copy.deepcopy(net), train=(x[512:], y[512:]), probe=(x[:512], y[:512]), max_blocks=3, eps=10.0,
                steps=0, **KW)
    assert g.stop == "saturated" and len(g.trajectory) == 1 and g.trajectory["verdict"][0] == "saturated"


def test_a_block_family_is_inserted_at_the_scanned_width():
    """insert_block(family="block") re-builds the scan's features (its width), not a fixed 16 (review fix)."""
    import torch

    import depthcert as dc
    from tests.api._nets import ResCNN

    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2, classes=3).double()
    g = torch.Generator().manual_seed(1)
    data = (torch.randn(256, 1, 12, generator=g, dtype=torch.float64), torch.randint(0, 3, (256,), generator=g))
    rep = dc.saturation(net, data, families=["linear", "block"], width=5)
    new = dc.insert_block(net, rep.best_site, family="block", init="jumpboard", scan=rep, force=True)
    assert new(data[0][:4]).shape == (4, 3)
