"""depthcert.integrations.transformers.SaturationCallback with the real Trainer (no mocks): a tiny LlamaForCausalLM
scanned, grown once by a real layer, trained on with the new layer in the optimiser, logged to log_history,
saved with trainer.save_model and reloaded with from_pretrained."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from transformers import AutoModelForCausalLM, Trainer, TrainingArguments  # noqa: E402

from depthcert.integrations.transformers import SaturationCallback  # noqa: E402
from tests.numerics import _hf_tiny  # noqa: E402


class Windows(torch.utils.data.Dataset):
    """Causal-LM rows for the Trainer: ``labels = input_ids`` (the model shifts them)."""

    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


def _trainer(tmp_path, cb, train_x, steps=12, attach=True):
    args = TrainingArguments(output_dir=str(tmp_path / "run"), max_steps=steps, per_device_train_batch_size=8,
                             learning_rate=3e-3, logging_steps=4, report_to="none", save_strategy="no", use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0, seed=0)
    model = _hf_tiny.build("llama")
    trainer = Trainer(model=model, args=args, train_dataset=Windows(train_x))
    if attach:
        cb.attach(trainer)
    else:
        trainer.add_callback(cb)
    return trainer, model


def _probe():
    x, y = _hf_tiny.corpus().windows("held", 96, 24, seed=5)   # next-character targets, from the held-out split
    return x, y


def test_scan_grow_continue_log_save_reload(tmp_path):
    train_x, _ = _hf_tiny.corpus().windows("train", 96, 24, seed=11)
    cb = SaturationCallback(_probe(), every_n_steps=4, grow=True, max_blocks=1, curvature_n=16, batch_size=48,
                            csv_path=tmp_path / "depthcert.csv")
    trainer, model = _trainer(tmp_path, cb, train_x)
    trainer.train()
    table = cb.table
    assert list(table["step"]) == [4, 8, 12]
    import pandas as pd

    logged = pd.read_csv(tmp_path / "depthcert.csv")       # the table as CSV, one row per scan
    assert list(logged["step"]) == [4, 8, 12] and list(logged["verdict"]) == list(table["verdict"])
    assert logged["inserted"].notna().sum() == 1
    assert table["inserted"].notna().sum() == 1 and table["inserted"].iloc[0].startswith("layer:copy_zero@model.layers.")
    assert model.config.num_hidden_layers == 3 == len(model.model.layers)
    assert [m.self_attn.layer_idx for m in model.model.layers] == [0, 1, 2]
    new = cb.monitor.new_parameters
    opt = trainer.optimizer
    assert {id(p) for p in opt.param_groups[-1]["params"]} == {id(p) for p in new.values() if p.requires_grad}
    down = next(n for n in new if n.endswith("mlp.down_proj.weight"))
    assert not cb.monitor.inserted_values[down].any() and new[down].abs().max() > 0   # zero at insertion, trained since
    hist = [h for h in trainer.state.log_history if "depthcert/AG_max" in h]
    assert [h["step"] for h in hist] == [4, 8, 12] and all("depthcert/cost_fraction" in h for h in hist)
    assert any(k.startswith("depthcert/AG_max/model.layers.2") for k in hist[-1])   # the grown model's three sites
    trainer.save_model(str(tmp_path / "final"))
    back = AutoModelForCausalLM.from_pretrained(tmp_path / "final").eval()
    x = _probe()[0][:4]
    with torch.no_grad():
        assert back.config.num_hidden_layers == 3
        assert torch.allclose(back(input_ids=x).logits, model.eval()(input_ids=x).logits, atol=1e-6, rtol=0)


def test_without_attach_the_history_still_gets_the_rows_and_an_overlap_is_refused(tmp_path):
    train_x, _ = _hf_tiny.corpus().windows("train", 48, 24, seed=11)
    cb = SaturationCallback(_probe(), every_n_steps=2, curvature_n=16, batch_size=48)
    trainer, _ = _trainer(tmp_path, cb, train_x, steps=2, attach=False)
    trainer.train()
    assert [h["step"] for h in trainer.state.log_history if "depthcert/AG_max" in h] == [2]
    bad = SaturationCallback((train_x[:40], train_x[:40]), every_n_steps=1, curvature_n=8, batch_size=40)
    trainer, _ = _trainer(tmp_path, bad, train_x, steps=1)
    with pytest.raises(ValueError, match="probe shares"):
        trainer.train()
