"""State layouts (THEORY §10; issue 16 item 2): a conv state is read as channels, never as tokens."""
import pytest
import torch
from torch import nn

import depthcert as dc
from numerics.families import ProtocolBlock, to_tokens
from tests.api._nets import ResCNN, ResCNNLast, synthetic

KW = dict(curvature_n=64, width=8, batch_size=64)
C, L = 8, 16


@pytest.fixture(scope="module")
def nets():
    torch.manual_seed(0)
    net = ResCNN(c=C, depth=2).double()
    x, y = synthetic(320, length=L)
    return net, ResCNNLast(net), x, y


def test_channels_first_and_channels_last_give_the_same_scores(nets):
    first, last, x, y = nets
    assert torch.allclose(first(x), last(x), rtol=1e-12, atol=0)   # the same function
    a = dc.saturation(first, (x, y), **KW)                  # inferred: NCL
    b = dc.saturation(last, (x, y), layout="NLD", **KW)     # channels-last: declared
    for ra, rb in zip(a.sites, b.sites):
        assert (ra["layout"], rb["layout"], ra["d"], rb["d"], ra["P"]) == ("NCL", "NLD", C, C, L)
        for key in ("G_norm", "P_all", "P_linear", "P_readout", "log_wealth", "beta", "predicted_gain", "gain_ucb"):
            assert ra[key] == pytest.approx(rb[key], rel=1e-9, abs=1e-300), key
    assert a.verdict == b.verdict and a.best_site == b.best_site


def _directional_derivative(net, site_mod, x, y, A):
    """d/dt R(u -> u + t A u) at t = 0 by autograd through a hook, ``A`` acting on the channel vector
    at each position (independent of the site probe and the accumulator)."""
    t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    handle = site_mod.register_forward_hook(lambda m, i, o: o + t * torch.einsum("dc,ncl->ndl", A, o))
    try:
        (g,) = torch.autograd.grad(nn.functional.cross_entropy(net(x), y), t)
    finally:
        handle.remove()
    return float(g)


def test_the_linear_familys_gradient_is_the_channel_mixing_gradient(nets):
    # independent check: G_linear (d = C columns) against the derivative of the risk along a
    # channel-mixing perturbation u -> u + t A u (A: C x C); a token reading (d = L) cannot match it
    net, _, x, y = nets
    rep = dc.saturation(net, (x, y), curvature_data=(x[:64], y[:64]), **KW)
    A = torch.randn(C, C, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    for k in range(2):
        site = f"blocks.{k}"
        G = rep._stats[site].G[:, rep._blocks[site].slices["linear"]]
        assert G.shape == (C, C)
        assert float((G * A).sum()) == pytest.approx(_directional_derivative(net, net.blocks[k], x, y, A), rel=1e-10)


def test_conv_state_is_never_read_as_tokens():
    u = torch.randn(5, C, L, dtype=torch.float64)
    assert to_tokens(u, "NCL").shape == (5, L, C) and torch.equal(to_tokens(u, "NCL")[:, 3], u[:, :, 3])
    blk = ProtocolBlock((C, L), ["linear", "block"], 4, 0, torch.float64, layout="NCL")
    assert blk.d == C and all(type(f).__name__ != "_Attention" for f in blk.features)   # conv features, not attention
    assert blk(u).shape == u.shape and float(blk(u).detach().abs().max()) == 0.0
    with pytest.raises(ValueError, match="layout == 'NCHW'"):
        ProtocolBlock((C, L), ["linear"], 4, 0, torch.float64, layout="NCHW")


class Act(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def test_an_ambiguous_state_is_an_error_never_a_guess():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv1d(1, 4, 3, padding=1), Act(), nn.Flatten(), nn.Linear(4 * 6, 2)).double()
    x, y = torch.randn(256, 1, 6, dtype=torch.float64), torch.randint(0, 2, (256,))
    with pytest.raises(ValueError, match=r"layout is None at site '1' with state \(N, 4, 6\): ambiguous.*must be declared"):
        dc.saturation(net, (x, y), sites=["1"], **KW)
    rep = dc.saturation(net, (x, y), sites=["1"], layout="NCL", **KW)
    assert rep.sites[0]["d"] == 4 and rep.sites[0]["layout"] == "NCL"
    with pytest.raises(ValueError, match="layout == 'ND' at site '1', must fit a state"):
        dc.saturation(net, (x, y), sites=["1"], layout="ND", **KW)


@pytest.mark.parametrize("module, shape, expected", [
    (nn.Conv2d(4, 4, 3, padding=1), (4, 5, 6), "NCHW"),
    (nn.Sequential(nn.Linear(6, 6), nn.LayerNorm(6)), (5, 6), "NLD"),
    (nn.GroupNorm(2, 4), (4, 9), "NCL"),
    (nn.Linear(7, 7), (7,), "ND"),
    (nn.Sequential(nn.Conv1d(4, 4, 1), nn.Linear(9, 9)), (4, 9), None),   # both readings fit: ambiguous
    (nn.Sequential(nn.Conv1d(6, 6, 1)), (6, 6), "NCL"),                  # C == L, but only a conv: channels-first
    (nn.Linear(6, 6), (4, 5, 6), None),                                   # a channels-last image: not a layout
])
def test_infer_layout(module, shape, expected):
    from numerics.layouts import infer_layout

    if expected is None:
        with pytest.raises(ValueError, match="ambiguous"):
            infer_layout(module, shape, "s")
    else:
        assert infer_layout(module, shape, "s") == expected


class Conv2dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 4, 3, padding=1)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.GroupNorm(2, 4)) for _ in range(2))
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x.mean(dim=(2, 3)))


def test_image_states_are_channels_first_and_the_block_family_fits_each_layout(nets):
    torch.manual_seed(0)
    x, y = torch.randn(256, 1, 5, 6, dtype=torch.float64), torch.randint(0, 2, (256,))
    rep = dc.saturation(Conv2dNet().double(), (x, y), families=["readout", "block"], **KW)
    assert {(r["layout"], r["d"], r["P"]) for r in rep.sites} == {("NCHW", 4, 30)}
    net, _, x1, y1 = nets
    rep1 = dc.saturation(net, (x1, y1), families=["readout", "block"], **KW)   # conv features on (C, L): no attention
    assert all(type(f).__name__ == "_Conv" for f in rep1._blocks["blocks.0"].features[-1:])
    assert rep1.sites[0]["P_block"] is not None and rep1.sites[0]["layout"] == "NCL"
