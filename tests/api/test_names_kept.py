"""Issue 26 item 4: insert_block keeps every name; the new parameters are listed; grow trains what it says.

Checked on the digits-shaped 2-D ResNet (untrained here: names do not need training) and on a
model whose site is an ``nn.Sequential`` (its forward calls every child, so the inserted block
must not be one of them).
"""
import json

import pytest
import torch
from torch import nn

import depthcert as dc
from tests.api._digits_resnet import DigitsResNet
from tests.api._nets import ResCNN, synthetic

KW = dict(width=8, batch_size=64, curvature_n=128)


def _digits_like(norm="group", n=512, seed=0):
    torch.manual_seed(seed)
    net = DigitsResNet(c=8, depth=3, norm=norm).double().eval()
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 17, (n, 1, 8, 8), generator=g).double() / 16
    return net, (x, (x.mean(dim=(1, 2, 3)) * 40).long().clamp(0, 9))


@pytest.mark.parametrize("init", ["zero", "jumpboard"])
def test_insert_block_keeps_every_original_name_and_value_and_lists_the_new_ones(init):
    net, data = _digits_like()
    rep = dc.saturation(net, data, **KW)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    new = dc.insert_block(net, "blocks.2", family="readout", init=init, scan=rep, force=True)
    state = new.state_dict()
    assert all(torch.equal(state[k], v) for k, v in before.items())          # same keys, same values
    assert "blocks.2.conv1.weight" in state and not any(".inner." in k for k in state)
    added = set(state) - set(before)
    assert added == set(dc.new_parameters(new)) and added                     # exactly the new block's
    assert all(k.startswith("blocks.2.depthcert_units.0.block.") for k in added)
    assert dict(new.named_parameters())["blocks.2.depthcert_units.0.block.V"] is dc.new_parameters(new)[
        "blocks.2.depthcert_units.0.block.V"]
    assert dc.new_parameters(net) == {}
    if init == "zero":
        assert torch.equal(new(data[0]), net(data[0]))                          # function-preserving


def test_a_sequential_site_carries_the_block_on_its_last_child_and_load_grown_rebuilds_it():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 3)).double().eval()
    x = torch.randn(600, 4, dtype=torch.float64)
    rep = dc.saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=128, width=4)
    new = dc.insert_block(net, "1", family="affine", init="jumpboard", scan=rep, force=True)
    assert set(dc.new_parameters(new)) == {"1.1.depthcert_units.0.block.V"}
    assert not torch.equal(new(x), net(x))
    again = dc.insert_block(new, "1", family="affine", init="zero", scan=dc.saturation(new, (x, (x[:, 0] > 0).long()),
                                                                                  sites=["1"], curvature_n=128, width=4))
    saved = {"state_dict": again.state_dict(), "insertions": dc.api._attach.insertions(again)}
    assert [r["site"] for r in saved["insertions"]] == ["1", "1"]
    fresh = nn.Sequential(nn.Linear(4, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 3)).double()
    rebuilt = dc.load_grown(fresh, saved)
    assert torch.equal(rebuilt(x), again(x)) and list(rebuilt.state_dict()) == list(again.state_dict())
    with pytest.raises(ValueError, match="saved == \\['state_dict'\\], must be a dict with 'insertions'"):
        dc.load_grown(fresh, {"state_dict": {}})


def _bn_net():
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    for b in net.blocks:
        b.norm = nn.BatchNorm1d(8).double()
    x, y = synthetic(1024, length=16)
    net.train()
    with torch.no_grad():
        net(x)                     # running statistics of the data, then eval mode (as a user hands it over)
    return net.eval(), x, y


@pytest.mark.parametrize("trainable", ["new", "all"])
def test_grow_trains_what_trainable_says_and_never_touches_batchnorm_statistics(trainable):
    net, x, y = _bn_net()
    g = dc.grow(net, train=(x[512:], y[512:]), probe=(x[:512], y[:512]), max_blocks=1, steps=5, trainable=trainable,
                **KW)
    old, new = net.state_dict(), g.model.state_dict()
    assert set(old) <= set(new)
    stats = [k for k in old if "running_" in k or "num_batches" in k]
    assert stats and all(torch.equal(old[k], new[k]) for k in stats)            # frozen: eval mode
    others = [k for k in old if k not in stats]
    unchanged = [k for k in others if torch.equal(old[k], new[k])]
    assert (unchanged == others) if trainable == "new" else (len(unchanged) < len(others))
    assert g.trajectory["inserted"][0] in ("jumpboard", "zero")
    assert any("eval mode" in n for n in g.notes)
    with pytest.raises(ValueError, match="trainable == 'some', must be one of \\['new', 'all'\\]"):
        dc.grow(net, train=(x, y), probe=(x, y), trainable="some")


def test_grow_scans_the_users_sites_not_inside_its_blocks_unless_asked():
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(1536, length=16)
    g = dc.grow(net, train=(x[1024:], y[1024:]), probe=(x[:1024], y[:1024]), max_blocks=2, steps=2, **KW)
    assert all([r["site"] for r in rep.sites] == ["blocks.0", "blocks.1"] for rep in g.reports)
    g2 = dc.grow(net, train=(x[1024:], y[1024:]), probe=(x[:1024], y[:1024]), max_blocks=1, steps=2,
                 scan_inserted=True, **KW)
    assert any("depthcert_units" in r["site"] for r in g2.reports[-1].sites)


def test_cli_grow_saves_a_model_that_loads_with_weights_only(tmp_path, capsys):
    from depthcert.cli import main
    from tests.api.test_cli_user import USER

    user = tmp_path / "user.py"
    user.write_text(USER)
    out, path = tmp_path / "g", tmp_path / "grown.pt"
    assert main(["grow", "--model", f"{user}:factory", "--data", f"{user}:roles", "--out", str(out),
                 "--max-blocks", "1", "--steps", "2", "--save-model", str(path)]) == 0
    assert f"grown model in {path}" in capsys.readouterr().out
    for name in ("grow.json", "trajectory.csv", "sites.csv", "saturation.png"):   # what --help promises with --model
        assert (out / name).exists(), name
    assert not any((out / f).exists() for f in ("trajectory.json", "checkpoint.pt", "growth.png"))   # --config only
    saved = torch.load(path, weights_only=True)
    assert saved["format"] == "depthcert.grown/1" and len(saved["insertions"]) == 1
    ns = {}
    exec(USER, ns)
    model = dc.load_grown(ns["factory"](), saved)
    roles = ns["roles"]()
    res = json.loads((out / "grow.json").read_text())
    assert res["saved_model"] == str(path)
    assert set(dc.new_parameters(model)) == set(saved["state_dict"]) - set(ns["factory"]().state_dict())
    assert model(roles["T"][0][:4]).shape == (4, 3)
    rc = main(["grow", "--config", "depthcert/configs/digits_cnn.toml", "--out", str(tmp_path / "c"),
               "--save-model", str(path)])
    assert rc == 2 and "--save-model" in capsys.readouterr().err
