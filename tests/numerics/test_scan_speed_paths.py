"""The fast paths of the scan give the slow paths' numbers (issue 26): per-sample ``X_i`` by one
batched matmul, channels-first states without token copies, and curvature passes that replay the
part of the network before the site (:mod:`numerics._replay`)."""
import pytest
import torch
from torch import nn

import numerics.estimators._site_stats as stats
from numerics._replay import SiteReplay
from numerics.estimators import curvature_along
from numerics.families import ProtocolBlock, to_tokens

F64 = torch.float64


def _feed(m, phi, batch=7, chunks=4):
    acc = stats.SiteAccumulator(m.shape[2], phi.shape[2], m.shape[0], chunks)
    for i in range(0, m.shape[0], batch):
        acc.update(m[i:i + batch], phi[i:i + batch])
    return acc


def _same(a, b, rel=1e-10):
    for attr in ("G", "Sigma", "E_sum"):
        torch.testing.assert_close(getattr(a, attr), getattr(b, attr), rtol=rel, atol=1e-12)
    for attr in ("u_statistic", "x_max", "x_sq", "m_sq", "ag_max", "phi_max", "b_bet"):
        assert getattr(a, attr) == pytest.approx(getattr(b, attr), rel=rel)
    torch.testing.assert_close(a.z, b.z, rtol=rel, atol=1e-12)
    assert a.log_wealth() == pytest.approx(b.log_wealth(), rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("T,d,r", [(16, 6, 5), (3, 6, 40), (4, 140, 3)])
def test_batched_X_path_equals_the_explicit_formulas(T, d, r, monkeypatch):
    """``sum X_i``, ``||X_i||``, ``E[m m^T]`` and the bets from one bmm equal the mm / Gram / ``m @ w``
    formulas (forced by switching the fast path off), also for a channels-first state read through a
    transpose (no copy) and for wide states (``d > 128``: the subsampled ``E``)."""
    g = torch.Generator().manual_seed(T + d)
    n = 48
    m_cf = torch.randn(n, d, T, generator=g, dtype=F64)        # channels-first, as an NCL state
    m, phi = to_tokens(m_cf, "NCL"), torch.randn(n, T, r, generator=g, dtype=F64)
    assert not m.is_contiguous()
    fast = _feed(m, phi)
    monkeypatch.setattr(stats, "_per_sample_X", lambda m, phi: None)
    slow, copied = _feed(m, phi), _feed(m.contiguous(), phi)
    _same(fast, slow)
    _same(fast, copied)
    X = torch.einsum("ntd,ntr->ndr", m, phi)
    torch.testing.assert_close(fast.G, X.mean(0), rtol=1e-10, atol=1e-12)
    assert fast.x_sq == pytest.approx(float(X.pow(2).sum()), rel=1e-10)


def test_a_wrong_X_is_caught_by_the_comparison(monkeypatch):
    """The comparison above can fail: a transposed ``m`` in the fast path changes the numbers."""
    g = torch.Generator().manual_seed(0)
    m, phi = torch.randn(32, 8, 4, generator=g, dtype=F64), torch.randn(32, 8, 3, generator=g, dtype=F64)
    ok = _feed(m, phi)
    monkeypatch.setattr(stats, "_per_sample_X", lambda m, phi: torch.bmm(m.flip(1).transpose(1, 2), phi))
    with pytest.raises(AssertionError):
        _same(_feed(m, phi), ok)


class Counted(nn.Module):
    """A conv whose calls are counted (a skipped call does not count)."""

    def __init__(self, c_in, c):
        super().__init__()
        self.conv, self.calls = nn.Conv2d(c_in, c, 3, padding=1), 0

    def forward(self, x):
        self.calls += 1
        return self.conv(x)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.conv2, self.norm = Counted(c, c), nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(2, c)

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class Net(nn.Module):
    """Post-norm 2-D ResNet; ``mode="reads_state"``: the output depends on the stem having run."""

    def __init__(self, c=4, mode=None):
        super().__init__()
        self.stem, self.blocks, self.head, self.mode = Counted(1, c), nn.ModuleList(Block(c) for _ in range(3)), \
            nn.Linear(c, 3), mode

    def forward(self, x):
        self.stem.calls = 0
        h = self.stem(x)
        for k, b in enumerate(self.blocks):
            h = b(h)
        if self.mode == "reads_state":   # the result depends on the skipped module having run
            h = h * (1.0 + self.stem.calls)
        return self.head(h.mean(dim=(2, 3)))


def _setup(mode=None, seed=0):
    torch.manual_seed(seed)
    net = Net(mode=mode).double().eval()
    x, y = torch.randn(40, 1, 5, 5, dtype=F64), torch.randint(0, 3, (40,))
    block = ProtocolBlock((4, 5, 5), ["linear", "affine", "readout"], 3, 1, F64, layout="NCHW")
    D = torch.randn(block.d, block.r, dtype=F64, generator=torch.Generator().manual_seed(seed))
    return net, x, y, block, D


def _curv(net, site, x, y, block, D, replay):
    est, slope, gain, real = curvature_along(net, site, block, x, y, D, D, "cross_entropy", batch_size=16,
                                             replay=replay)
    return [est.beta, est.curvature_at_zero, est.max_curvature, est.iterations, slope, gain, real]


@pytest.mark.parametrize("site", ["blocks.0", "blocks.2"])
def test_replayed_curvature_equals_full_forwards_and_skips_the_part_before_the_site(site):
    net, x, y, block, D = _setup()
    full = _curv(net, site, x, y, block, D, False)
    rep = SiteReplay(net, site)
    calls = {"n": 0}
    orig = net.blocks[0].conv1.forward

    def counting(*a):
        calls["n"] += 1
        return orig(*a)
    net.blocks[0].conv1.forward = counting
    fast = _curv(net, site, x, y, block, D, rep)
    del net.blocks[0].conv1.forward
    assert fast == pytest.approx(full, rel=1e-12, abs=1e-15)
    assert all(rep.replayed((i, min(i + 16, 40))) for i in range(0, 40, 16))
    # blocks.0.conv1 runs only in the recording (3 batches), never in the replayed passes
    assert calls["n"] == 3


def test_a_model_whose_output_depends_on_the_skipped_part_is_not_replayed():
    """``confirm`` compares a replayed forward with the recorded one: here they differ, so every
    batch runs in full and the numbers are those of full forwards."""
    net, x, y, block, D = _setup("reads_state")
    full = _curv(net, "blocks.1", x, y, block, D, False)
    rep = SiteReplay(net, "blocks.1")
    assert _curv(net, "blocks.1", x, y, block, D, rep) == pytest.approx(full, rel=1e-12, abs=1e-15)
    assert not any(rep.replayed((i, min(i + 16, 40))) for i in range(0, 40, 16))


def test_recorded_outputs_changed_in_place_end_the_replay():
    net, x, y, block, D = _setup()
    rep = SiteReplay(net, "blocks.1")
    key = (0, 40)
    with rep.forward(key):
        a = net(x)
    with rep.forward(key):
        b = net(x)
    assert torch.equal(a, b) and rep.replayed(key)
    original = net.blocks[2].forward

    def mutating(h):
        h.mul_(2.0)   # changes the recorded state of blocks.1 in place
        return original(h / 2.0)
    net.blocks[2].forward = mutating
    with rep.forward(key):
        net(x)
    del net.blocks[2].forward
    assert not rep.replayed(key)
    with rep.forward(key):   # a full forward again: the site's state is recomputed
        torch.testing.assert_close(net(x), a)


def test_no_replay_beyond_the_byte_budget():
    net, x, y, block, D = _setup()
    rep = SiteReplay(net, "blocks.1", max_bytes=0)
    assert _curv(net, "blocks.1", x, y, block, D, rep) == pytest.approx(_curv(net, "blocks.1", x, y, block, D, False),
                                                                        rel=1e-12, abs=1e-15)
    assert not rep.replayed((0, 16)) and rep.bytes == 0


def test_tiny_bert_curvature_with_replay_equals_full_forwards():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=12)
    torch.manual_seed(0)

    class Cls(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert, self.head = transformers.BertModel(cfg, add_pooling_layer=False), nn.Linear(16, 3)

        def forward(self, ids):
            return self.head(self.bert(input_ids=ids).last_hidden_state[:, 0])

    net = Cls().double().eval()
    x, y = torch.randint(0, 30, (20, 12)), torch.randint(0, 3, (20,))
    block = ProtocolBlock((12, 16), ["linear", "affine", "readout"], 3, 1, F64)
    D = torch.randn(block.d, block.r, dtype=F64, generator=torch.Generator().manual_seed(1))
    for site in ("bert.encoder.layer.0", "bert.encoder.layer.1"):
        rep = SiteReplay(net, site)
        assert _curv(net, site, x, y, block, D, rep) == pytest.approx(_curv(net, site, x, y, block, D, False),
                                                                      rel=1e-10, abs=1e-14)
        assert rep.replayed((0, 16)) and rep.replayed((16, 20))


@pytest.mark.parametrize("smallest", [1.0, 1e-3, 5e-10, 5e-11, 0.0])
def test_projection_score_by_cholesky_equals_the_pseudo_inverse(smallest):
    """``tr(g s^+ g^T)`` by Cholesky (well-conditioned ``s``) or by ``psd_pinv`` (an eigenvalue near or
    below its cut ``1e-10 lambda_max``: 5e-11 must be cut, 5e-10 kept) equals the ``psd_pinv`` formula."""
    from numerics._numerics import psd_pinv

    g0 = torch.Generator().manual_seed(3)
    Q, _ = torch.linalg.qr(torch.randn(6, 6, generator=g0, dtype=F64))
    s = (Q * torch.tensor([1.0, 0.7, 0.5, 0.2, 0.1, smallest], dtype=F64)) @ Q.T
    g = torch.randn(4, 6, generator=g0, dtype=F64)
    want = float(torch.trace(g @ psd_pinv(s) @ g.T))
    assert stats._pinv_quadratic(g, s) == pytest.approx(want, rel=1e-6)
    if smallest == 5e-11:   # the cut direction is dropped: far below the value with s^-1
        assert want < 1e-3 * float(torch.trace(g @ torch.linalg.inv(s) @ g.T))
