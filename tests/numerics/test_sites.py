"""Sites on any nn.Module: one backward gives every per-sample m_i, refusals, function-preserving insertion."""
import pytest
import torch
from torch import nn

from plumbing.validation import InputError
from numerics.families import ProtocolBlock
from numerics.models import PostNormResCNN, PostNormResMLP
from numerics.sites import GrownSite, SiteProbe, ZeroBlock, add_at_site, insert_unit, resolve_sites
from numerics.zoo import CharGPT, GroupNormResNet

F64 = torch.float64


class Residual(nn.Module):
    """``x + f(x)`` -- the plain residual unit of an ``nn.Sequential`` residual MLP."""

    def __init__(self, d):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.f(x)


def seq_mlp(d_in=3, d=6, depth=3, n_out=4, seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, d), *[Residual(d) for _ in range(depth)], nn.Linear(d, n_out)).double()


def _per_sample_loop(model, site, x, y, loss_fn):
    """Independent computation: a backward per sample through the site's output."""
    out = []
    for i in range(x.shape[0]):
        with SiteProbe(model, [site]) as probe:
            value = loss_fn(model(x[i:i + 1]), y[i:i + 1])
            out.append(probe.grads(value)[site][0])
    return torch.stack(out)


def test_plain_sequential_default_sites_drop_shape_changing_layers():
    net = seq_mlp()
    assert resolve_sites(net, None, torch.zeros(2, 3, dtype=F64)) == ["1", "2", "3"]


@pytest.mark.parametrize("make, x, names", [
    (lambda: PostNormResMLP(3, 5, 2, 4), torch.randn(7, 3, dtype=F64), ["embed_norm", "norms.0", "norms.1"]),
    (lambda: seq_mlp(), torch.randn(7, 3, dtype=F64), ["1", "2", "3"]),
    (lambda: GroupNormResNet(1, 4, 2, 3, groups=2), torch.randn(5, 1, 6, 6, dtype=F64),
     ["stem_out", "blocks.0", "blocks.1"]),
    (lambda: CharGPT(9, 8, 2, heads=2, seq_len=6, dtype=F64), torch.randint(0, 9, (5, 6)),
     ["embed_out", "blocks.0", "blocks.1"]),
])
def test_one_backward_gives_every_per_sample_gradient(make, x, names):
    """SiteProbe's single backward of the summed loss equals a per-sample loop at every site."""
    net = make()
    y = torch.randint(0, 3, x.shape[:1] if x.dim() != 2 or x.dtype != torch.long else x.shape)

    def loss(out, t):
        if out.dim() == 3:
            return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), t.reshape(-1), reduction="sum")
        return nn.functional.cross_entropy(out, t, reduction="sum")

    assert resolve_sites(net, None, x[:2]) == names
    with SiteProbe(net, names) as probe:
        ms = probe.grads(loss(net(x), y))
    for site in names:
        torch.testing.assert_close(ms[site], _per_sample_loop(net, site, x, y, loss), rtol=1e-10, atol=1e-12)


def test_batchnorm_unknown_and_shape_changing_sites_are_refused():
    x = torch.randn(4, 1, 5, 5, dtype=F64)
    with pytest.raises(InputError, match="batch-norm"):
        resolve_sites(PostNormResCNN(1, 4, 1, 3, image_size=5, norm="batch"), None, x)
    with pytest.raises(InputError, match="batch-norm at '1'"):
        resolve_sites(nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)), None, torch.randn(4, 3))
    net = PostNormResMLP(3, 5, 2, 4)
    xs = torch.randn(4, 3, dtype=F64)
    with pytest.raises(InputError, match="sites == 'norms.7'"):
        resolve_sites(net, ["norms.7"], xs)
    with pytest.raises(InputError, match=r"'embed' maps \(4, 3\) to \(4, 5\)"):
        resolve_sites(net, ["embed"], xs)
    assert resolve_sites(net, ["norms.*"], xs) == ["norms.0", "norms.1"]


def test_a_shared_module_is_not_a_site():
    lin = nn.Linear(3, 3).double()
    net = nn.Sequential(lin, nn.Tanh(), lin)
    with pytest.raises(InputError, match="once per forward"):
        resolve_sites(net, ["0"], torch.randn(2, 3, dtype=F64))
        with SiteProbe(net, ["0"]):
            net(torch.randn(2, 3, dtype=F64))


@pytest.mark.parametrize("make, x", [
    (lambda: PostNormResMLP(3, 5, 2, 4), torch.randn(9, 3, dtype=F64)),
    (lambda: seq_mlp(), torch.randn(9, 3, dtype=F64)),
    (lambda: GroupNormResNet(1, 4, 2, 3, groups=2), torch.randn(5, 1, 6, 6, dtype=F64)),
    (lambda: CharGPT(9, 8, 2, heads=2, seq_len=6, dtype=F64), torch.randint(0, 9, (5, 6))),
])
def test_insertion_of_a_real_block_is_bitwise_function_preserving(make, x):
    """A protocol block (random features, V = 0) inserted at every site, twice at one: outputs bitwise equal;
    with V != 0 they differ (the check can fail)."""
    net = make()
    with torch.no_grad():
        before = net(x)
    sites = resolve_sites(net, None, x[:2])
    with torch.no_grad(), SiteProbe(net, sites) as probe:
        net(x[:2])
        shapes = {s: tuple(probe.states[s].shape[1:]) for s in sites}
    fams = ["linear", "affine", "readout", "block"]
    for k, s in enumerate(sites):
        insert_unit(net, s, ProtocolBlock(shapes[s], fams, 4, seed=k, dtype=F64))
    first = resolve_sites(net, None, x[:2])
    insert_unit(net, first[1], ZeroBlock())          # after a unit of a grown site
    insert_unit(net, first[0], ZeroBlock())          # at a grown site's inner module
    with torch.no_grad():
        assert torch.equal(net(x), before)
    assert len(resolve_sites(net, None, x[:2])) == 2 * len(sites) + 2
    unit = next(m for m in net.modules() if isinstance(m, GrownSite)).units[-1]
    if isinstance(unit.block, ProtocolBlock):
        with torch.no_grad():
            unit.block.V.fill_(0.1)
            assert not torch.equal(net(x), before)


def test_add_at_site_equals_inserting_the_block():
    net, x = seq_mlp(), torch.randn(6, 3, dtype=F64)
    block = ProtocolBlock((6,), ["linear", "affine", "readout"], 5, seed=3, dtype=F64)
    with torch.no_grad():
        block.V.copy_(torch.randn(block.V.shape, dtype=F64) * 0.1)
        with add_at_site(net, "2", block):
            hooked = net(x)
        insert_unit(net, "2", block)
        assert torch.equal(net(x), hooked)
