"""depthcert.integrations.lightning.SaturationCallback with the real Lightning (no mocks): scan, grow once,
continue with the new parameters in the optimiser, log to CSV, save and reload."""
from __future__ import annotations

import csv

import pytest
import torch
from torch import nn

pl = pytest.importorskip("lightning.pytorch")

import depthcert as dc  # noqa: E402
from depthcert.integrations.lightning import SaturationCallback  # noqa: E402


def _data(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return x, ((x[:, 0] * x[:, 1] > 0).long() + (x[:, 2] > 0.5).long())


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Sequential(nn.Linear(16, 16), nn.Tanh()), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def test_scan_grow_continue_log_save_reload(tmp_path):
    train, probe = _data(512, 1), _data(384, 2)   # train and probe: independent draws
    cb = SaturationCallback(probe, sites="net.1", every_n_steps=10, grow=True, max_blocks=1, curvature_n=32)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=32, shuffle=False)
    trainer = pl.Trainer(max_steps=30, logger=pl.loggers.CSVLogger(tmp_path, name="csv"), enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", log_every_n_steps=5,
                         callbacks=[cb])
    module = Net()
    trainer.fit(module, loader)
    table = cb.table
    assert list(table["step"]) == [10, 20, 30]
    assert table["inserted"].notna().sum() == 1 and table["inserted"].iloc[0] == "hook:zero@net.1"
    new = cb.monitor.new_parameters
    assert set(new) == set(dc.new_parameters(module)) and new
    opt = trainer.optimizers[0]
    assert len(opt.param_groups) == 2 and {id(p) for p in opt.param_groups[1]["params"]} == {id(p) for p in new.values()}
    assert all(opt.state[p]["step"] == 20 for p in new.values())   # Adam ran the new group for the 20 steps after step 10
    changed = [n for n, p in new.items() if not torch.equal(p.detach(), cb.monitor.inserted_values[n])]
    assert "net.1.1.depthcert_units.0.block.V" in changed   # V started at zero and was trained
    assert (table["cost_fraction"] > 0).all() and table["AG_max:net.1"].notna().all()
    # the CSV logger holds the callback's metrics
    rows = list(csv.DictReader(open(trainer.logger.log_dir + "/metrics.csv")))
    logged = [r for r in rows if r.get("depthcert/AG_max")]
    assert [int(r["step"]) for r in logged] == [10, 20, 30]
    assert all(r["depthcert/AG_max/net.1"] for r in logged)
    assert float(logged[0]["depthcert/AG_max"]) == pytest.approx(table["AG_max"].iloc[0])
    # save and reload: the checkpoint carries the insertions; a fresh module rebuilt with dc.load_grown
    trainer.save_checkpoint(tmp_path / "m.ckpt")
    ckpt = torch.load(tmp_path / "m.ckpt", weights_only=False)
    back = dc.load_grown(Net(), {"insertions": ckpt["depthcert"]["insertions"], "state_dict": ckpt["state_dict"]})
    x = probe[0][:16]
    with torch.no_grad():
        assert torch.equal(back(x), module.eval()(x))
        assert not torch.equal(Net()(x), module(x))


def test_a_probe_that_overlaps_the_training_data_is_refused(tmp_path):
    train = _data(256, 1)
    cb = SaturationCallback((train[0][:128], train[1][:128]), sites="net.1", every_n_steps=2, curvature_n=16)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=32)
    trainer = pl.Trainer(max_steps=4, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu", callbacks=[cb])
    with pytest.raises(ValueError, match="probe shares 32 input rows"):
        trainer.fit(Net(), loader)


def test_stop_when_saturated_ends_training(tmp_path):
    train, probe = _data(512, 1), _data(256, 3)
    cb = SaturationCallback(probe, sites="net.1", every_n_steps=5, stop_when_saturated=True, eps=1e6, curvature_n=16)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=32)
    trainer = pl.Trainer(max_steps=40, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator="cpu", callbacks=[cb])
    trainer.fit(Net(), loader)
    assert list(cb.table["verdict"]) == ["saturated"] and trainer.global_step == 5
