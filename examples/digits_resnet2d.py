"""A user's 2-D ResNet on scikit-learn's digits: ``dc.certify_insertion`` with hand-derived constants and ``M_needed``.

The digits 2-D ResNet: the route table with derived constants and, per route,
``M_needed`` (the smallest ``|S|`` at which it would certify, every statistic held) beside the
scan's ``n_needed_improvable``. Runs in about a minute on one core:

    OMP_NUM_THREADS=1 python examples/digits_resnet2d.py [OUT_DIR]

The network (no BatchNorm, so that its head input has a sure radius): a 3x3 conv stem, two post-norm
residual blocks ``x = GroupNorm(x + conv(relu(conv(x))))`` on 8x8 images, a mean pool, an identity (the site
``top``: a site must preserve the state's shape; state ``(N, C)``) and a linear head ``z = A h + c``. The block is inserted at the head
input, so ``f_top`` is the head. Constants, derived by hand (each holds for every input):

* ``rho`` (head input): GroupNorm normalises each group over its channels and positions, so the
  whole normalised state has ``||x_hat||_F^2 <= C P``; ``y = gamma x_hat + beta`` gives
  ``||y||_F <= ||gamma||_inf sqrt(C P) + sqrt(P) ||beta||``, and the mean pool
  ``||h|| <= ||y||_F / sqrt(P)``: ``rho = ||gamma||_inf sqrt(C) + ||beta||_2``.
* ``L_top = A_norm = ||A||_2`` (the head is linear); ``kappa = ||A||_2^2 / 2`` (cross-entropy, from
  ``A_norm``); ``L_loss = sqrt(2)`` (cross-entropy, the API's default).
* ``B`` (cross-entropy): ``l = log sum_j exp(z_j - z_y) <= log C + max_j (z_j - z_y)`` and
  ``z_j - z_y <= ||a_j - a_y|| ||w|| + c_j - c_y`` with ``||w|| <= rho + nu_V rho_phi`` (the block's
  output inside the cap), so ``B = log C + max_{j,k} (||a_j - a_k|| (rho + nu_V rho_phi) + c_j - c_k)``.
  ``nu_V`` and ``rho_phi`` are fixed by the signal sample alone (before ``S`` and ``T``): a first call
  reads them, the second uses the ``B`` they give (the script checks that it covers them).
"""
import json
import math
import sys
from pathlib import Path

import torch
from torch import nn

import depthcert as dc
from numerics.data import split


class Block(nn.Module):
    """``x = GroupNorm(x + conv(relu(conv(x))))`` on ``(N, C, 8, 8)``."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.norm = nn.GroupNorm(4, c)

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class Pool(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))


class ResNet2d(nn.Module):
    def __init__(self, c=16, depth=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.blocks = nn.Sequential(*(Block(c) for _ in range(depth)))
        self.pool, self.top, self.head = Pool(), nn.Identity(), nn.Linear(c, classes)

    def forward(self, x):
        return self.head(self.top(self.pool(self.blocks(self.stem(x)))))


def constants(net: ResNet2d, out_radius: float) -> dict:
    """The hand-derived constants of the module docstring (``out_radius``: a bound on the block's output)."""
    gn, A, c = net.blocks[-1].norm, net.head.weight.detach(), net.head.bias.detach()
    C = A.shape[1]
    rho = float(gn.weight.detach().abs().max()) * math.sqrt(C) + float(gn.bias.detach().norm())
    A_norm = float(torch.linalg.matrix_norm(A, ord=2))
    gaps = torch.cdist(A, A) * (rho + out_radius) + (c[:, None] - c[None, :])
    return {"rho": rho, "A_norm": A_norm, "L_top": A_norm, "B": math.log(A.shape[0]) + float(gaps.max()),
            "out_radius": out_radius}


def digits_parts(seed=0) -> dict:
    """scikit-learn's digits in [0, 1], duplicate ``(x, y)`` rows removed (roles must be disjoint), split by role."""
    import numpy as np
    from sklearn.datasets import load_digits

    data = load_digits()
    xy = np.concatenate([data.data / 16.0, data.target[:, None]], axis=1)
    _, keep = np.unique(xy, axis=0, return_index=True)
    keep = np.sort(keep)
    x = torch.as_tensor(data.data[keep] / 16.0, dtype=torch.float64).reshape(-1, 1, 8, 8)
    y = torch.as_tensor(data.target[keep], dtype=torch.int64)
    n = x.shape[0]
    sizes = {"reference": n - 1200, "signal": 400, "S": 500, "T": 300}
    return split(x, y, sizes, seed=seed, name="digits")


def train(net, x, y, steps=150, lr=3e-3):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (128,), generator=g)
        opt.zero_grad()
        nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
        opt.step()
    return net.eval()


def main(out_dir="digits_resnet2d_out"):
    torch.manual_seed(0)
    img = digits_parts()
    net = train(ResNet2d().double(), *img["reference"])
    with torch.no_grad():
        acc = {k: float((net(x).argmax(1) == y).double().mean()) for k, (x, y) in img.items()}
    radius, cert = 1.0, None
    for _ in range(3):      # B needs rho + nu_V rho_phi; nu_V, rho_phi are fixed by the signal sample alone
        c = constants(net, radius)
        cert = dc.certify_insertion(net, "top", signal=img["signal"], S=img["S"], T=img["T"],
                                    loss="cross_entropy", B=c["B"], L_top=c["L_top"], A_norm=c["A_norm"],
                                    erm_steps=10, batch_size=256)
        need = cert.quantities["nu_V"] * cert.quantities["rho_phi"]
        if need <= radius:
            break
        radius = need
    assert need <= radius, "B does not cover the block's output"
    cols = ["route", "certified", "bound", "M_needed", "M_needed_ratio"]
    table = cert.table()[cols]
    print(f"accuracy {acc}; constants {c}; nu_V {cert.quantities['nu_V']:.4g}, rho_phi {cert.quantities['rho_phi']:.4g}")
    print(f"L_test(f_old) = {cert.quantities['L_T_old']:.4g}; scan: {cert.gap['scan']}")
    print(table.to_string())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rec = {"accuracy": acc, "constants": c, "quantities": {k: cert.quantities[k] for k in ("M", "K", "nu_V", "rho_phi",
                                                                                             "L_T_old", "R_S_old", "R_S_new")},
           "n_needed_improvable": cert.n_needed_improvable, "scan": cert.gap["scan"],
           "rows": [{k: r[k] for k in cols} for r in cert.rows],
           "reasons": {k: v["reason"] for k, v in cert.gap["routes"].items()}}
    (out / "digits_resnet2d.json").write_text(json.dumps(rec, indent=1, default=str))
    return cert


if __name__ == "__main__":
    main(*sys.argv[1:])
