"""``dc.certify_insertion(..., scan=report)``: a certificate reads the scan it is given instead of running one.

The independent check: the default path scans the first 2/3 of ``signal`` and estimates ``Delta_R`` on the rest;
giving it a scan of exactly those first 2/3 (the same call the default makes) and the rest as ``signal`` must give
the same certificate, row by row. Each refusal (not a report, another model or a changed one -- parameters or
batch-norm statistics --, an unscanned site or family, another loss, a hand-built report, a one-sample signal, a
scan sharing rows with a role) is planted.
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

import depthcert as dc


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()


def _draw(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64)
    return x, (x[:, 0] > 0).long()


KW = dict(B=5.0, L_top=5.0, erm_steps=2)


def _rows(cert):
    return {r["route"]: (r["bound"], r["certified"]) for r in cert.rows}


def test_a_given_scan_of_the_signal_part_reproduces_the_default_certificate():
    net, (xs, ys) = _net(), _draw(600, 1)
    S, T = _draw(400, 2), _draw(400, 3)
    default = dc.certify_insertion(net, "1", signal=(xs, ys), S=S, T=T, **KW)
    scan = dc.saturation(net, (xs[:400], ys[:400]), sites=["1"], families=["readout"], seed=0, batch_size=256)
    given = dc.certify_insertion(net, "1", signal=(xs[400:], ys[400:]), S=S, T=T, scan=scan, **KW)
    assert _rows(given).keys() == _rows(default).keys()
    for route, (b, c) in _rows(default).items():
        gb, gc = _rows(given)[route]
        assert gc == c and (b is None and gb is None or gb == pytest.approx(b, rel=1e-9, abs=1e-12)), route
    assert any("scan: given" in n for n in given.notes) and not any("scan: given" in n for n in default.notes)
    assert given.quantities["n_signal"] == 200 and default.quantities["n_signal"] == 600


def test_a_given_scan_is_refused_unless_it_is_this_models_scan_of_the_site_on_disjoint_rows():
    net, (xs, ys) = _net(), _draw(600, 1)
    S, T = _draw(400, 2), _draw(400, 3)
    scan = dc.saturation(net, (xs[:400], ys[:400]), sites=["1"], seed=0)
    sig = (xs[400:], ys[400:])
    with pytest.raises(TypeError, match="scan == dict"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan={}, **KW)
    with pytest.raises(ValueError, match="site == '0', must be a site the scan holds"):
        dc.certify_insertion(net, "0", signal=sig, S=S, T=T, scan=scan, **KW)
    with pytest.raises(ValueError, match="another model"):
        dc.certify_insertion(_changed(_net()), "1", signal=sig, S=S, T=T, scan=scan, **KW)
    no_readout = dc.saturation(net, (xs[:400], ys[:400]), sites=["1"], families=["linear"], seed=0)
    with pytest.raises(ValueError, match="did not scan the family 'readout'"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan=no_readout, **KW)
    shared = (torch.cat([S[0][:5], xs[:395]]), torch.cat([S[1][:5], ys[:395]]))
    scan_shared = dc.saturation(net, shared, sites=["1"], seed=0)
    with pytest.raises(ValueError, match="S and probe share 5 identical"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan=scan_shared, **KW)
    with pytest.raises(ValueError, match="signal and probe share"):
        dc.certify_insertion(net, "1", signal=(xs[300:], ys[300:]), S=S, T=T, scan=scan, **KW)


def _changed(net):
    """The same network after one parameter moved (a scan of it before is stale)."""
    with torch.no_grad():
        net[0].bias[0] += 1e-3
    return net


def test_a_given_scan_is_refused_for_changed_buffers_another_loss_a_hand_built_report_or_a_one_sample_signal():
    import dataclasses

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)), nn.Linear(8, 2)).double().eval()
    (xs, ys), S, T = _draw(600, 1), _draw(400, 2), _draw(400, 3)
    scan = dc.saturation(net, (xs[:400], ys[:400]), sites=["1"], seed=0)
    sig = (xs[400:], ys[400:])
    with pytest.raises(ValueError, match="made with loss 'cross_entropy', must be made with the certificate's loss 'squared'"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan=scan, loss="squared", **KW)
    with pytest.raises(ValueError, match="signal has 1 samples, must have >= 2"):
        dc.certify_insertion(net, "1", signal=(xs[400:401], ys[400:401]), S=S, T=T, scan=scan, **KW)
    with pytest.raises(ValueError, match="keeps no record of its samples"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan=dataclasses.replace(scan, _data=None), **KW)
    with torch.no_grad():
        net.train()(xs[400:432])   # one train-mode forward: the running statistics move, the parameters do not
    net.eval()
    with pytest.raises(ValueError, match="parameters or buffers changed"):
        dc.certify_insertion(net, "1", signal=sig, S=S, T=T, scan=scan, **KW)
