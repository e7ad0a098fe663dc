"""Device and dtype (issue 16 item 4): the scan runs on the model's device in its dtype, sums in float64.

The same checks run on every available device (CUDA ones are skipped where there is none).
"""
import copy

import pytest
import torch

import depthcert as dc
from tests.api._nets import ResCNN, synthetic

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
KW = dict(curvature_n=64, width=8, batch_size=64)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_model_is_scanned_in_float32_on_its_device(device):
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).to(device)                       # float32
    x, y = synthetic(320, dtype=torch.float32)                  # on the CPU: the adapter moves it
    seen = []
    hook = net.blocks[0].register_forward_hook(lambda m, i, o: seen.append((o.dtype, o.device.type)))
    rep = dc.saturation(net, (x, y), **KW)
    hook.remove()
    assert set(seen) == {(torch.float32, device)}
    for s in ("blocks.0", "blocks.1"):
        assert rep._blocks[s].V.dtype == torch.float32 and rep._blocks[s].V.device.type == device
        assert rep._stats[s].G_sum.dtype == torch.float64 and rep._stats[s].G_sum.device.type == device
    ref = dc.saturation(copy.deepcopy(net).double().cpu(), (x.double(), y), **KW)
    for s in ("blocks.0", "blocks.1"):   # the linear family (no random features, whose draws depend on the
        cols = rep._blocks[s].slices["linear"]   # dtype) agrees with the float64 scan to float32 accuracy
        g32, g64 = rep._stats[s].G[:, cols].cpu(), ref._stats[s].G[:, cols]
        assert torch.allclose(g32, g64, rtol=1e-4, atol=1e-6 * float(g64.abs().max()))
        assert rep.site(s)["P_linear"] == pytest.approx(ref.site(s)["P_linear"], rel=1e-3)
    new = dc.insert_block(net, rep.best_site, init="zero", scan=rep)
    xd = x.to(device)
    assert next(new.parameters()).device.type == device and torch.equal(new(xd), net(xd))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_scan_matches_cpu_scan_in_float64():
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(320)
    cpu = dc.saturation(net, (x, y), **KW)
    gpu = dc.saturation(copy.deepcopy(net).cuda(), (x, y), **KW)
    for a, b in zip(cpu.sites, gpu.sites):
        for key in ("G_norm", "P_all", "log_wealth", "beta"):
            assert a[key] == pytest.approx(b[key], rel=1e-8), key
    assert cpu.verdict == gpu.verdict
