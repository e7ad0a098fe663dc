"""MNIST-1D: the i.i.d. sampler against the package's own transform, the published split, the 1-D CNN.

Independent references: the package's ``transform`` run sample by sample on replayed draws,
the package's ``make_dataset`` under its own global seeding (state restored by the test),
and hand-written norms for the CNN blocks. Statistical checks state their level.
"""
import importlib
import random
import socket

import numpy as np
import pytest
import torch
from scipy import stats

from numerics import mnist1d as m1d
from numerics.seeding import Streams
from numerics.sites import resolve_sites
from numerics.zoo_cnn1d import ResCNN1d

data_mod = importlib.import_module("mnist1d.data")
LEVEL = 1e-3   # every statistical test below rejects a true hypothesis with probability 1e-3


class Replay:
    """Stands in for ``numpy.random`` in the package's ``transform``: returns the given draws."""

    def __init__(self, draws, i):
        self.rand_q = [draws.pad_u[i], draws.scale_u[i], draws.shear_u[i]]   # pad, scale, shear
        self.randn_q = [draws.corr_z[i], draws.iid_z[i]]                     # correlated, then i.i.d.
        self.choice_q = [int(draws.shift[i])]

    def rand(self):
        return self.rand_q.pop(0)

    def randn(self, *shape):
        z = self.randn_q.pop(0)
        assert z.shape == shape
        return z

    def choice(self, a):
        assert a == 48
        return self.choice_q.pop(0)


def package_transform(y, draws):
    """The package's own ``transform`` of each template, one sample at a time, on ``draws``."""
    templates, args = data_mod.get_templates(), data_mod.get_dataset_args()
    out = []
    for i in range(len(y)):
        replay = Replay(draws, i)
        transform = m1d._package_functions(replay)["transform"]
        out.append(transform(templates["x"][y[i]], templates["t"], args)[0])
        assert not (replay.rand_q or replay.randn_q or replay.choice_q), "the transform used fewer draws"
    return np.stack(out)


def global_state():
    return np.random.get_state(), random.getstate(), torch.get_rng_state().clone()


def same_state(a, b):
    (kind, keys, *rest), (kind_b, keys_b, *rest_b) = a[0], b[0]
    return (kind == kind_b and np.array_equal(keys, keys_b) and rest == rest_b and a[1] == b[1]
            and torch.equal(a[2], b[2]))


def package_make_dataset(args):
    """The package's ``make_dataset`` as published (it reseeds the globals; restored here)."""
    saved = np.random.get_state(), random.getstate()
    try:
        return data_mod.make_dataset(args)
    finally:
        np.random.set_state(saved[0])
        random.setstate(saved[1])


@pytest.fixture(scope="module")
def package_published():
    """The package's own published call ``make_dataset(get_dataset_args())``."""
    return package_make_dataset(data_mod.get_dataset_args())


@pytest.fixture(scope="module")
def published_raw():
    """The published call's signals before standardisation, by the package's transform on RandomState(42)."""
    rs = np.random.RandomState(42)
    transform = m1d._package_functions(rs)["transform"]
    templates, args = data_mod.get_templates(), data_mod.get_dataset_args()
    raw = [transform(templates["x"][c], templates["t"], args)[0] for c in range(10) for _ in range(500)]
    return np.stack(raw)[rs.permutation(5000)]   # make_dataset's loop order, then its shuffle


def test_args_are_the_packages_defaults():
    theirs = data_mod.get_dataset_args(as_dict=True)
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in theirs.items() if k != "url"} == dict(m1d.ARGS)
    assert m1d.LENGTH == theirs["final_seq_length"]


def test_vectorised_transform_equals_package_sample_by_sample():
    rng = np.random.default_rng(3)
    y, draws = rng.integers(0, 10, 300), m1d.draw_transforms(300, rng)
    np.testing.assert_allclose(m1d.transform_templates(y, draws), package_transform(y, draws),
                               rtol=0, atol=1e-12)


def test_equality_check_rejects_a_wrong_draw():
    rng = np.random.default_rng(4)
    y, draws = rng.integers(0, 10, 20), m1d.draw_transforms(20, rng)
    moved = m1d.TransformDraws(draws.pad_u, draws.scale_u, (draws.shift + 1) % 48, draws.corr_z,
                               draws.iid_z, draws.shear_u)
    assert not np.allclose(m1d.transform_templates(y, moved), package_transform(y, draws), atol=1e-12)


def test_published_split_is_the_packages_make_dataset_bitwise(package_published):
    (x, y), (xt, yt) = m1d.published_split(dtype=torch.float64)
    ds = package_published
    assert x.shape == (4000, 1, 40) and xt.shape == (1000, 1, 40) and y.dtype == torch.int64
    for ours, theirs in ((x, ds["x"]), (y, ds["y"]), (xt, ds["x_test"]), (yt, ds["y_test"])):
        assert np.array_equal(ours.numpy().reshape(theirs.shape), theirs)


def test_normalisation_constants_recomputed(published_raw, package_published):
    assert float(published_raw.mean()) == m1d.NORM_MEAN and float(published_raw.std()) == m1d.NORM_STD
    (x, _), (xt, _) = m1d.published_split(dtype=torch.float64)
    standardised = (published_raw - m1d.NORM_MEAN) / m1d.NORM_STD
    assert np.array_equal(standardised, np.concatenate([x, xt]).reshape(5000, 40))
    # Independently: make_dataset divides the interpolated time axis by the raw std it used.
    ds = package_published
    t_raw = importlib.import_module("mnist1d.transform").interpolate(data_mod.get_templates()["t"], 40)
    np.testing.assert_allclose(t_raw / ds["t"], m1d.NORM_STD, rtol=1e-12)


def _two_sample_z(a, b):
    return abs(a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))


def test_iid_samples_are_on_the_published_scale():
    """Per-sample mean and mean square: two-sample z-tests at level 1e-3 each against the published split.

    The published split is class-balanced (stratified), so its variance is at most the
    i.i.d. one and the tests are conservative. A halved NORM_STD doubles the scale: rejected.
    """
    (x, _), (xt, _) = m1d.published_split(dtype=torch.float64)
    pub = torch.cat([x, xt]).reshape(5000, 40).numpy()
    iid = m1d.sample(40_000, 11, dtype=torch.float64)[0].reshape(-1, 40).numpy()
    crit = stats.norm.ppf(1 - LEVEL / 2)
    for stat in (lambda a: a.mean(1), lambda a: (a ** 2).mean(1)):
        assert _two_sample_z(stat(iid), stat(pub)) < crit
    halved = iid * m1d.NORM_STD / (m1d.NORM_STD / 2)   # what a halved constant would give
    assert _two_sample_z((halved ** 2).mean(1), (pub ** 2).mean(1)) > crit


def dispersion_p(labels):
    """Two-sided chi-square test of uniform class counts (too uneven *or* too even)."""
    counts = np.bincount(labels, minlength=10)
    p_upper = stats.chisquare(counts).pvalue
    return min(1.0, 2 * min(p_upper, 1 - p_upper))


def test_labels_iid_uniform_and_the_check_rejects_the_balanced_split():
    assert dispersion_p(m1d.sample(50_000, 5)[1].numpy()) > LEVEL
    (_, y), (_, yt) = m1d.published_split()
    assert dispersion_p(torch.cat([y, yt]).numpy()) < LEVEL   # exactly 500 per class: too even


def test_consecutive_labels_independent():
    y = m1d.sample(50_000, 6)[1].numpy()
    table = np.zeros((10, 10))
    np.add.at(table, (y[:-1:2], y[1::2]), 1)   # disjoint pairs
    assert stats.chi2_contingency(table).pvalue > LEVEL


def _fixed_normalisation(sampler):
    """A sampler with a normalisation fixed once gives the same first rows for any call size."""
    return torch.equal(sampler(64, 9)[0][:10], sampler(10, 9)[0])


def test_normalisation_fixed_not_per_call():
    assert _fixed_normalisation(m1d.sample)
    assert m1d.sample(5000, 9)[0].mean().abs() > 1e-6   # not centred by its own mean

    def per_call(n, seed):
        x, y = m1d.sample(n, seed)
        return (x - x.mean()) / x.std(), y

    assert not _fixed_normalisation(per_call)


def test_prefix_across_blocks_and_generator_input():
    x, y = m1d.sample(m1d._CHUNK + 7, 2, dtype=torch.float64)
    x2, y2 = m1d.sample(m1d._CHUNK + 3, np.random.default_rng(2), dtype=torch.float64)
    # the same draws: labels exactly, signals to rounding (a last block of 7 rows or of 3 takes a different
    # vectorised path: seen 4.4e-16 on one row of the second block on one machine)
    assert torch.equal(y[:-4], y2) and torch.allclose(x[:-4], x2, rtol=0, atol=1e-12)
    assert not torch.allclose(x[:-4], m1d.sample(m1d._CHUNK + 3, 3, dtype=torch.float64)[0], rtol=0, atol=1e-12)
    assert x.shape == (m1d._CHUNK + 7, 1, 40) and m1d.sample(0, 1)[0].shape == (0, 1, 40)


def test_roles_own_streams():
    a = m1d.sample_roles({"S": 200, "T": 200, "probe": 50}, Streams(0, 1))
    b = m1d.sample_roles({"S": 200, "T": 200}, Streams(0, 1))
    c = m1d.sample_roles({"S": 200}, Streams(0, 2))
    assert torch.equal(a["S"][0], b["S"][0]) and torch.equal(a["T"][1], b["T"][1])
    assert not torch.isclose(a["S"][0], a["T"][0]).all(dim=(1, 2)).any()   # no shared signal
    assert not torch.equal(a["S"][0], c["S"][0])
    assert not torch.equal(m1d.sample(100, 0)[0], m1d.sample(100, 1)[0])


def test_global_random_state_untouched():
    m1d._published_arrays.cache_clear()
    before = global_state()
    m1d.sample(100, 0)
    m1d.sample_roles({"S": 10}, Streams(0, 0))
    m1d.published_split()
    ResCNN1d(1, 8, 1, 10, groups=2)
    assert same_state(before, global_state())
    small = data_mod.get_dataset_args()
    small.num_samples = 20
    data_mod.make_dataset(small)   # the package's own call reseeds the globals: the check sees it
    assert not same_state(before, global_state())
    np.random.set_state(before[0])
    random.setstate(before[1])


def test_offline(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access in a test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(importlib.import_module("requests"), "get", refuse)
    m1d._published_arrays.cache_clear()
    assert m1d.published_split()[1][0].shape == (1000, 1, 40) and m1d.sample(3, 0)[0].shape == (3, 1, 40)


@pytest.mark.parametrize("bad, err", [(-1, ValueError), (2.0, ValueError), (True, ValueError)])
def test_bad_n(bad, err):
    with pytest.raises(err, match="n == "):
        m1d.sample(bad, 0)


def test_bad_transform_inputs():
    draws = m1d.draw_transforms(4, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"got \(3,\) and \(4, 72\)"):
        m1d.transform_templates(np.zeros(3, dtype=int), draws)
    with pytest.raises(ValueError, match="must hold integer class labels"):
        m1d.transform_templates(np.array([0, 1, 2, 10]), draws)
    with pytest.raises(ValueError, match="n == -2"):
        m1d.draw_transforms(-2, np.random.default_rng(0))


def test_bad_seed_and_role():
    with pytest.raises(TypeError, match="seed == None"):
        m1d.sample(3, None)
    with pytest.raises(ValueError, match="sizes key == 'bogus'"):
        m1d.sample_roles({"bogus": 3}, Streams(0, 0))


# ---- the 1-D post-norm residual CNN -------------------------------------------------------------

def reference_norm(z, kind, groups, weight, bias, eps=1e-5):
    """GroupNorm / LayerNorm / RMSNorm of ``(N, C, L)`` written out (the channel axis is 1)."""
    n, c, length = z.shape
    if kind == "group":
        g = z.reshape(n, groups, -1)
        g = (g - g.mean(2, keepdim=True)) / torch.sqrt(g.var(2, unbiased=False, keepdim=True) + eps)
        return g.reshape(n, c, length) * weight[:, None] + bias[:, None]
    mu = z.mean(1, keepdim=True) if kind == "layer" else 0.0
    s2 = ((z - mu) ** 2).mean(1, keepdim=True)
    out = (z - mu) / torch.sqrt(s2 + eps) * weight[:, None]
    return out + bias[:, None] if kind == "layer" else out


@pytest.mark.parametrize("norm", ["group", "layer", "rms"])
def test_block_is_post_norm_residual(norm):
    net = ResCNN1d(1, 8, 2, 10, norm=norm, groups=2, dtype=torch.float64, seed=1)
    blk = net.blocks[1]
    with torch.no_grad():
        for p in blk.norm.parameters():
            p.normal_()   # non-trivial gains and biases
    z = torch.randn(4, 8, 40, dtype=torch.float64)
    branch = torch.nn.functional.conv1d(torch.relu(torch.nn.functional.conv1d(
        z, blk.conv1.weight, blk.conv1.bias, padding=2)), blk.conv2.weight, blk.conv2.bias, padding=2)
    bias = getattr(blk.norm, "bias", None)
    want = reference_norm(z + branch, norm, 2, blk.norm.weight, bias if bias is not None else 0 * blk.norm.weight)
    torch.testing.assert_close(blk(z), want, rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        blk.conv2.weight.zero_()
        blk.conv2.bias.zero_()
    torch.testing.assert_close(blk(z), reference_norm(z, norm, 2, blk.norm.weight, bias if bias is not None
                                                      else 0 * blk.norm.weight), rtol=1e-10, atol=1e-12)


def test_layer_norm_is_over_channels_not_length():
    net = ResCNN1d(1, 4, 1, 10, norm="layer", dtype=torch.float64)
    z = torch.randn(2, 4, 40, dtype=torch.float64)
    out = net.blocks[0].norm(z)
    torch.testing.assert_close(out.mean(1), torch.zeros(2, 40, dtype=torch.float64), rtol=0, atol=1e-12)
    assert out.mean(2).abs().max() > 1e-3   # a norm over the length would centre this axis instead


@pytest.mark.parametrize("depth", [0, 1, 4])
def test_shapes_sites_and_zero_depth(depth):
    net = ResCNN1d(1, 8, depth, 10, groups=2)
    x, _ = m1d.sample(6, 0)
    assert net(x).shape == (6, 10) and net(x).dtype == torch.float32
    assert isinstance(net.blocks, torch.nn.ModuleList) and len(net.blocks) == depth
    assert net.site_names() == ["stem_out"] + [f"blocks.{j}" for j in range(depth)]
    if depth:
        assert resolve_sites(net, ["blocks.*"], x) == [f"blocks.{j}" for j in range(depth)]
    else:
        want = net.head(net.stem_norm(net.stem(x)).mean(2))
        torch.testing.assert_close(net(x), want)


def test_float64_per_sample_and_seeded():
    net = ResCNN1d(1, 8, 2, 10, groups=2, dtype=torch.float64, seed=3)
    assert all(p.dtype == torch.float64 for p in net.parameters())
    x = m1d.sample(5, 1, dtype=torch.float64)[0]
    out = net(x)
    assert out.dtype == torch.float64
    torch.testing.assert_close(net(x[2:3]), out[2:3], rtol=1e-12, atol=1e-12)   # no coupling of samples
    again = ResCNN1d(1, 8, 2, 10, groups=2, dtype=torch.float64, seed=3)
    assert torch.equal(again(x), out) and not torch.equal(ResCNN1d(1, 8, 2, 10, groups=2, seed=4,
                                                                   dtype=torch.float64)(x), out)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_sample_and_model():
    x, y = m1d.sample(8, 0, device="cuda")
    net = ResCNN1d(1, 8, 2, 10, groups=2, device="cuda")
    assert x.is_cuda and y.is_cuda and net(x).is_cuda
    torch.testing.assert_close(net(x).cpu(), net.cpu()(x.cpu()), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kw, match", [({"norm": "batch"}, "norm == 'batch'"), ({"groups": 3}, "groups == 3"),
                                       ({"depth": -1}, "depth == -1"), ({"kernel_size": 4}, "kernel_size == 4"),
                                       ({"width": 0}, "width == 0")])
def test_bad_model_args(kw, match):
    with pytest.raises(ValueError, match=match):
        ResCNN1d(**{"in_channels": 1, "width": 8, "depth": 1, "n_out": 10, "groups": 2, **kw})


def test_a_few_adam_steps_lower_the_loss():
    from numerics.training import empirical_risk, train

    (x, y), _ = m1d.published_split()
    net = ResCNN1d(1, 16, 2, 10, groups=4)
    before = empirical_risk(net, x[:512], y[:512], "cross_entropy")
    res = train(net, dict(net.named_parameters()), x[:512], y[:512], optimizer="adam", lr=3e-3, steps=40,
                batch_size=128, loss="cross_entropy")
    assert res.final_loss < 0.8 * before


@pytest.mark.slow
def test_depth4_width32_accuracy_on_the_published_split():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from benchmarks.bench_mnist1d_accuracy import train_and_test

    out = train_and_test()
    print(out)
    assert out["test_accuracy"] >= 0.94   # the package's CNN reference
