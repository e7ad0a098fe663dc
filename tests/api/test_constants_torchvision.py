"""``dc.constants(..., output=...)`` and ``certify_insertion`` on torchvision's ``resnet18`` (issue 37 item 5):
trained briefly on small data (scikit-learn's digits, upsampled to 3 x 32 x 32), BatchNorm in eval mode, at the
site under the head (``layer4.1``). torchvision's block ends in ``relu(bn2(conv2(.)) + identity)``: no sure
radius, so no ``B``; the head (adaptive average pool, flatten, linear) is affine, so ``L_top`` is derived; every
row of the certificate names ``B``, once, and ``c.why["B"]`` says why.

The same test runs on ``torchvision.models.resnet18(num_classes=10)`` where torchvision imports, and always on
:class:`ResNet18Replica`, a module-for-module copy of torchvision's ResNet-18 (7x7 stem, max pool, in-place ReLU
modules, ``out += identity``, ``AdaptiveAvgPool2d`` then ``torch.flatten``), so the path is covered where
torchvision cannot be installed (this project's CPU-only torch: the PyPI torchvision wheels are CUDA builds whose
``_C.so`` needs ``libtorch_cuda.so``; ``import torchvision`` then fails with
``RuntimeError: operator torchvision::nms does not exist``).
"""
from __future__ import annotations

import pytest
import torch
from torch import nn

import depthcert as dc
from tests.api._digits_resnet import digits


def _torchvision_resnet18():
    try:
        import torchvision
    except Exception as e:   # not installed, or installed but its C extension does not load (CUDA wheel, CPU torch)
        pytest.skip(f"torchvision does not import here: {type(e).__name__}: {e}")
    return torchvision.models.resnet18(num_classes=10)


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock, module for module."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet18Replica(nn.Module):
    """torchvision.models.resnet.ResNet with BasicBlock, [2, 2, 2, 2], widths 64..512."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
        self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 64))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 2), BasicBlock(512, 512))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d((1, 1)), nn.Linear(512, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def _roles():
    """Digits as 3 x 32 x 32 images: 64 training images (the fit), then S, T and the probe, disjoint slices."""
    d = digits()
    up = {k: (nn.functional.interpolate(x, size=32, mode="nearest").expand(-1, 3, -1, -1).contiguous(), y)
          for k, (x, y) in d.items()}
    train = (up["train"][0][:64], up["train"][1][:64])
    (xp, yp), (xt, yt) = up["probe"], up["test"]
    return train, (xp[:128], yp[:128]), (xp[128:256], yp[128:256]), (xt[:128], yt[:128])   # train, probe, S, T


@pytest.mark.parametrize("build", [_torchvision_resnet18, ResNet18Replica], ids=["torchvision", "replica"])
def test_constants_and_certify_at_the_site_under_the_head(build):
    train, probe, S, T = _roles()
    torch.manual_seed(0)
    net = build()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    net.train()
    losses = []
    for _ in range(8):   # a few full-batch steps on the 64 training images: the BatchNorm running statistics move
        loss = nn.functional.cross_entropy(net(train[0]), train[1])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    net.eval()
    assert losses[-1] < losses[0]
    assert not torch.equal(net.layer4[1].bn2.running_mean, torch.zeros(512))   # trained statistics, used in eval mode

    c = dc.constants(net, "layer4.1", probe, output=lambda out: out)   # the model's own output: the logits
    P = c.state_shape[1] * c.state_shape[2]   # positions averaged by the pool (32 x 32 input: layer4 is 1 x 1)
    W = net.fc.weight.detach().double()
    assert P == 1 and abs(c.L_top - float(torch.linalg.matrix_norm(W, ord=2)) / P ** 0.5) < 1e-9   # ||A||_2 / sqrt(P)
    assert c.B is None and c.rho is None and "no radius rho" in c.why["B"]
    cert = dc.certify_insertion(net, "layer4.1", S, T, probe, constants=c, erm_steps=2)
    assert cert.rows and {tuple(r["missing"]) for r in cert.rows} == {("B",)}   # B named, once per row, nothing else
