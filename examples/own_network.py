"""depthcert on your own network: a 1-D residual CNN written here, on synthetic data.

Scan every block for first-order saturation (is it deep enough, where would a block help?),
print the per-site table, grow it by one block, and attempt Paper A's certificate at the best
site. Runs in about 25 s on one CPU core:  python examples/own_network.py [OUT_DIR [SCALE]]
"""
import sys
from pathlib import Path

import torch
from torch import nn

import depthcert as dc


class Block(nn.Module):
    """``x = GroupNorm(x + conv(relu(conv(x))))`` on a channels-first state (N, C, L)."""

    def __init__(self, c):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv1d(c, c, 3, padding=1), nn.Conv1d(c, c, 3, padding=1)
        self.norm = nn.GroupNorm(4, c)

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class ResCNN(nn.Module):
    def __init__(self, c=16, depth=2, classes=4):
        super().__init__()
        self.stem = nn.Conv1d(1, c, 3, padding=1)
        self.blocks = nn.ModuleList(Block(c) for _ in range(depth))
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=2))


def make_data(n, seed, length=32, classes=4):
    """Class-dependent bumps plus noise: x (n, 1, L) float64, y (n,) int64 (one stream per role)."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    t = torch.arange(length, dtype=torch.float64)
    centre = (y.double() + 0.5) * length / classes
    x = torch.exp(-((t - centre[:, None]) ** 2) / 8.0) + 0.7 * torch.randn(n, length, generator=g, dtype=torch.float64)
    return x[:, None, :], y


def main(out_dir="own_network_out", scale=1.0):
    """Run everything; ``scale`` < 1 shrinks every sample (the test run uses 0.25)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    net = ResCNN().double()
    n = lambda k: int(k * float(scale))  # noqa: E731
    train, probe = make_data(n(4000), seed=1), make_data(n(2048), seed=2)
    signal, S, T = make_data(n(1500), seed=3), make_data(n(1500), seed=4), make_data(n(1500), seed=5)
    # --- depthcert calls ---
    rep = dc.saturation(net, probe, loss="cross_entropy", sites="blocks.*")
    print(rep)
    print(rep.table()[["site", "layout", "d", "P", "predicted_gain", "certified_gain", "gain_ucb"]])
    rep.to_json(out / "saturation.json")
    rep.plot(out / "saturation.png")
    grown = dc.grow(net, train=train, probe=probe, loss="cross_entropy", max_blocks=1, steps=50)
    print(grown.trajectory[["step", "verdict", "best_site", "immediate_gain", "probe_loss", "stop"]])
    consts = dc.constants(net, rep.best_site, probe, loss="cross_entropy")   # sure B, L_top, kappa, ... or why not
    print(consts.table())
    cert = dc.certify_insertion(net, rep.best_site, signal=signal, S=S, T=T, loss="cross_entropy", constants=consts,
                                erm_steps=5)
    print(f"certificate ({cert.route}): certified={cert.certified}, bound={cert.bound}")
    print(cert.table()[["route", "certified", "bound", "missing"]])
    return rep, grown, cert


if __name__ == "__main__":
    main(*sys.argv[1:])
