"""sites=None on a ResNet-18-shaped network (torchvision's layout: layer1..layer4 of BasicBlocks, a downsample
inside the first block of layers 2-4): every shape-keeping residual stream is scanned, and the report says which
were taken and which left out (issue 37 item 5)."""
from __future__ import annotations

import torch
from torch import nn

import depthcert as dc
from numerics.sites import default_site_names, resolve_sites


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: conv-bn-relu-conv-bn, plus the (downsampled) input, then ReLU."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        return torch.relu(self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))) + idt)


class ResNet18ish(nn.Module):
    def __init__(self, w=4):
        super().__init__()
        torch.manual_seed(0)
        self.conv1, self.bn1 = nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w)
        self.layer1 = nn.Sequential(BasicBlock(w, w), BasicBlock(w, w))
        self.layer2 = nn.Sequential(BasicBlock(w, 2 * w, 2), BasicBlock(2 * w, 2 * w))
        self.layer3 = nn.Sequential(BasicBlock(2 * w, 4 * w, 2), BasicBlock(4 * w, 4 * w))
        self.layer4 = nn.Sequential(BasicBlock(4 * w, 8 * w, 2), BasicBlock(8 * w, 8 * w))
        self.fc = nn.Linear(8 * w, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        return self.fc(self.layer4(self.layer3(self.layer2(self.layer1(x)))).mean(dim=(2, 3)))


STREAMS = ["layer1.0", "layer1.1", "layer2.1", "layer3.1", "layer4.1"]   # the five shape-keeping residual streams


def test_sites_none_takes_every_shape_keeping_stream_and_says_so():
    net = ResNet18ish().eval()
    x = torch.randn(48, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    assert resolve_sites(net, None, x[:2]) == STREAMS
    assert not any("downsample" in n for n in default_site_names(net))     # inside a block: not a stream
    rep = dc.saturation(net, (x, torch.arange(48) % 10), sites=None, curvature_n=8)
    assert [r["site"] for r in rep.sites] == STREAMS
    note = [n for n in rep.notes if n.startswith("sites=None")]
    assert len(note) == 1 and "['layer2.0', 'layer3.0', 'layer4.0']" in note[0]
    named = dc.saturation(net, (x, torch.arange(48) % 10), sites=["layer1.1"], curvature_n=8)
    assert not any(n.startswith("sites=None") for n in named.notes)


def test_a_list_of_torch_modules_keeps_the_largest_list_alone():
    net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8)), nn.Linear(8, 2))
    inner = nn.Module()
    inner.a, inner.b = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)), nn.Sequential(nn.Linear(4, 4))
    assert default_site_names(net) == ["0", "1", "2"]
    assert default_site_names(inner) == ["a.0", "a.1", "a.2"]          # torch.nn blocks: no siblings added


def test_a_refusal_suggests_only_sites_and_patterns_that_are_accepted():
    import ast
    import re

    import pytest

    from plumbing.validation import InputError

    net = ResNet18ish().eval()
    x = torch.randn(96, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    y = torch.arange(96) % 10
    for bad in ("layer2.*", "layer2"):
        with pytest.raises(InputError) as err:
            dc.saturation(net, (x, y), sites=bad, curvature_n=8)
        msg = str(err.value)
        assert "conv1" not in msg.split("maps")[-1]                       # no path inside a block
        sites = ast.literal_eval(re.search(r"shape-keeping default sites of this model: (\[.*?\])", msg).group(1))
        pats = ast.literal_eval(re.search(r"'name.\*' patterns this model accepts: (\[.*?\])", msg).group(1))
        assert sites == STREAMS and pats == ["layer1.*"]
        for suggestion in (sites, *pats):                                  # every suggestion is accepted
            resolve_sites(net, suggestion, x[:2])


def test_the_default_pattern_on_a_decoder_names_its_layers():
    import pytest

    pytest.importorskip("transformers")
    from plumbing.validation import InputError
    from tests.numerics import _hf_tiny

    net = _hf_tiny.build("llama", layers=2, d=16)
    x = _hf_tiny.corpus().windows("held", 64, 12, seed=1)
    with pytest.raises(InputError, match=r"'name.\*' patterns this model accepts: \['model.layers.\*'\]"):
        dc.saturation(net, x, output="logits", curvature_n=8)


def test_certify_at_the_resnet_site_under_the_head_names_the_one_missing_constant():
    """A ResNet block ends in ReLU(BN(.) + identity): no sure radius, so no B; the head (mean pool, linear) is
    affine, so L_top, A_norm, kappa are derived; every route names B, once, and c.why says why."""
    net = ResNet18ish().eval()
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(600, 3, 16, 16, generator=g), torch.arange(600) % 10   # layer4: 2 x 2 positions
    c = dc.constants(net, "layer4.1", (x[:200], y[:200]))
    P = c.state_shape[1] * c.state_shape[2]                          # positions averaged by the pool
    assert P == 4
    W = net.fc.weight.detach().double()
    assert abs(c.L_top - float(torch.linalg.matrix_norm(W, ord=2)) / P ** 0.5) < 1e-9   # ||A||_2 / sqrt(P)
    assert c.B is None and c.rho is None and "no radius rho" in c.why["B"]
    cert = dc.certify_insertion(net, "layer4.1", (x[:200], y[:200]), (x[200:400], y[200:400]), (x[400:], y[400:]),
                                constants=c, erm_steps=2)
    assert {tuple(r["missing"]) for r in cert.rows} == {("B",)}
