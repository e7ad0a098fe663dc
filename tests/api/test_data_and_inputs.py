"""Data adapters and bad input of the public API (issue 16, items 1 and 3)."""
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import depthcert as dc
from tests.api._nets import ResCNN, synthetic

KW = dict(curvature_n=64, width=8, batch_size=64)


@pytest.fixture(scope="module")
def setup():
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(320)
    return net, x, y


def _scores(rep):
    return [(r["site"], r["G_norm"], r["P_all"], r["log_wealth"], r["beta"]) for r in rep.sites]


def test_dataloader_dataset_numpy_and_tensors_give_identical_scores(setup):
    net, x, y = setup
    ds = TensorDataset(x, y)
    inputs = {"tensors": (x, y), "numpy": (x.numpy(), y.numpy()), "dataset": ds,
              "loader": DataLoader(ds, batch_size=37), "batches": [(x[i:i + 50], y[i:i + 50]) for i in range(0, 320, 50)]}
    scores = {k: _scores(dc.saturation(net, v, **KW)) for k, v in inputs.items()}
    for k, v in scores.items():
        assert v == scores["tensors"], k   # bitwise: the same samples in the same order, re-batched alike


def test_a_different_order_changes_the_scores(setup):
    # the identity test above can fail: another order gives other bets (the betting test is sequential)
    net, x, y = setup
    perm = torch.randperm(320, generator=torch.Generator().manual_seed(1))
    assert _scores(dc.saturation(net, (x[perm], y[perm]), **KW)) != _scores(dc.saturation(net, (x, y), **KW))


def test_streaming_holds_one_batch(setup):
    net, x, y = setup
    from depthcert.api._data import as_stream

    stream = as_stream([(x[i:i + 50], y[i:i + 50]) for i in range(0, 320, 50)], "data", net, batch_size=64)
    sizes = [b[0].shape[0] for b in stream]
    assert sizes == [64] * 5 and len(stream) == 320
    assert [b[0].shape[0] for b in stream.part(10, 100)] == [64, 26]
    big_x, big_y = torch.zeros(200_000, 3, dtype=torch.float64), torch.zeros(200_000, dtype=torch.long)
    big = as_stream((big_x, big_y), "data", net, batch_size=256)
    first = next(iter(big))[0]   # a view of the caller's tensor: the stream copies nothing it need not
    assert first.untyped_storage().data_ptr() == big_x.untyped_storage().data_ptr()
    assert sum(b[0].shape[0] for b in big) == 200_000


@pytest.mark.parametrize("bad, exc, match", [
    ("model", TypeError, "model is a str, must be a torch.nn.Module"),
    ("shapes", ValueError, r"data: expected x \(n, ...\) and y \(n, ...\) with the same n, got \(320, 1, 16\) and \(319,\)"),
    ("site", ValueError, "sites == 'nope'"),
    ("loss", ValueError, r"returned shape \(\) on a batch of 64, must return per-sample losses"),
    ("loss_name", ValueError, "loss == 'hinge', must be one of"),
    ("iterator", TypeError, "one-shot iterator"),
    ("kind", TypeError, "data is a str, must be a DataLoader"),
    ("layout", ValueError, "layout == 'NWHC', must be one of"),
    ("level", ValueError, r"level == 1.5, must be in \(0, 1\)"),
    ("shuffled", ValueError, "data is a DataLoader with shuffle=True, must iterate in a fixed order"),
    ("few", ValueError, r"data has 40 samples, must leave >= 32 probe samples .* == 30"),
    ("eps", ValueError, "eps == 0, must be > 0"),
])
def test_bad_input_names_the_argument_and_value(setup, bad, exc, match):
    net, x, y = setup
    args = dict(model=net, data=(x, y), **KW)
    if bad == "model":
        args["model"] = "net"
    elif bad == "shapes":
        args["data"] = (x, y[:-1])
    elif bad == "site":
        args["sites"] = "nope"
    elif bad == "loss":
        args["loss"] = lambda out, t: nn.functional.cross_entropy(out, t)   # a mean, not per sample
    elif bad == "loss_name":
        args["loss"] = "hinge"
    elif bad == "iterator":
        args["data"] = iter([(x, y)])
    elif bad == "kind":
        args["data"] = "train.csv"
    elif bad == "layout":
        args["layout"] = "NWHC"
    elif bad == "level":
        args["level"] = 1.5
    elif bad == "few":
        args["data"] = (x[:40], y[:40])
    elif bad == "eps":
        args["eps"] = 0
    elif bad == "shuffled":
        args["data"] = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    with pytest.raises(exc, match=match):
        dc.saturation(**args)


def test_squared_loss_with_integer_labels_is_one_hot(setup):
    net, x, y = setup
    onehot = nn.functional.one_hot(y, 3).double()
    a = dc.saturation(net, (x, y), loss="squared", **KW)
    b = dc.saturation(net, (x, onehot), loss="squared", **KW)
    c = dc.saturation(net, (x, y), loss=lambda out, t: (out - nn.functional.one_hot(t, 3)).pow(2).sum(1), **KW)
    assert _scores(a) == _scores(b)
    assert [s[1] for s in _scores(c)] == pytest.approx([s[1] for s in _scores(a)], rel=1e-12)


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 6)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)) for _ in range(2)])
        self.head = nn.Linear(6, 2)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = x + b(x)
        return self.head(x)


def test_batchnorm_eval_mode_accepted_train_mode_refused_with_the_reason():
    torch.manual_seed(0)
    net = BNNet().double()
    x = torch.randn(256, 4, dtype=torch.float64)
    y = (x[:, 0] > 0).long()
    with pytest.raises(ValueError, match="batch-norm at 'blocks.0.1'.*train mode.*model.eval()"):
        dc.saturation(net, (x, y), **KW)
    rep = dc.saturation(net.eval(), (x, y), **KW)
    assert rep.verdict in ("improvable", "saturated", "undetermined") and rep.sites[0]["layout"] == "ND"
    assert not net.training   # the scan restores the caller's modes


def test_a_dataloader_with_a_random_sampler_of_any_kind_is_refused_and_a_subset_is_counted():
    """Two passes of a random sampler differ (the probe and the curvature part would overlap): refused;
    an index-list sampler is a fixed order and its size is what it yields, not the dataset's (review fix)."""
    import torch
    from torch.utils.data import DataLoader, SubsetRandomSampler, TensorDataset

    from depthcert.api._data import _loader_size

    ds = TensorDataset(torch.randn(100, 3), torch.randint(0, 2, (100,)))
    with pytest.raises(ValueError, match="SubsetRandomSampler"):
        _loader_size(DataLoader(ds, sampler=SubsetRandomSampler(range(50)), batch_size=10), "data")
    assert _loader_size(DataLoader(ds, sampler=list(range(50)), batch_size=10), "data") == 50
    assert _loader_size(DataLoader(ds, batch_size=10), "data") == 100
