"""``dc.grow`` and ``depthcert grow --save-model DIR`` on a Hugging Face decoder: real layers, a save_pretrained folder."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("transformers")

import depthcert as dc  # noqa: E402
from depthcert.api._growth import _shifted  # noqa: E402
from tests.numerics import _hf_tiny  # noqa: E402


def test_grow_inserts_real_layers_and_trains_them():
    net = _hf_tiny.trained("llama")
    c = _hf_tiny.corpus()
    probe, train = c.windows("held", 192, 24, seed=1), c.windows("train", 64, 24, seed=100)
    g = dc.grow(net, train, probe, sites="model.layers.*", output="logits", max_blocks=1, steps=3, curvature_n=32,
                batch_size=64)
    grown = g.model
    assert type(grown) is type(net) and net.config.num_hidden_layers == 2
    added = len(grown.model.layers) - 2
    assert added == (g.trajectory["inserted"] == "copy_zero").sum() == grown.config.num_hidden_layers - 2 == 1
    if added:   # the new layer was trained: its zero output projection moved
        k = grown.depthcert_inserted_layers[0]
        assert grown.model.layers[k].mlp.down_proj.weight.abs().max() > 0
        assert g.trajectory["immediate_gain"].dropna().abs().max() == 0.0   # function-preserving: no change at all
        assert all(r["site"].startswith("model.layers.") for r in g.reports[-1].sites)


def test_site_names_follow_the_renumbering():
    net = _hf_tiny.build("llama", layers=2, d=16)
    g = dc.insert_block(dc.insert_block(net, "model.layers.1", init="zero"), "model.layers.0", init="zero")
    # [L0, new, L1, new]: the stream after L0 (and what follows it) is layers.1, after L1 layers.3
    assert _shifted(g, ["model.layers.0", "model.layers.1", "lm_head"]) == ["model.layers.1", "model.layers.3", "lm_head"]
    assert _shifted(net, ["model.layers.0", "model.layers.1"]) == ["model.layers.0", "model.layers.1"]


def _cli(tmp_path, *extra):
    user = "tests/integrations/_hf_user.py"
    cmd = [sys.executable, "-m", "depthcert", "grow", "--model", f"{user}:model", "--data", f"{user}:data",
           "--sites", "model.layers.*", "--output", "logits", "--max-blocks", "1", "--steps", "2", "--out",
           str(tmp_path / "o"), "--json", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def test_cli_grow_save_model_writes_a_save_pretrained_directory(tmp_path):
    from transformers import AutoModelForCausalLM

    out = _cli(tmp_path, "--save-model", str(tmp_path / "grown"))
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    back = AutoModelForCausalLM.from_pretrained(tmp_path / "grown")
    added = sum(r["inserted"] == "copy_zero" for r in res["trajectory"])
    assert added == 1 and back.config.num_hidden_layers == 3 == len(back.model.layers)
    assert res["saved_model"] == str(tmp_path / "grown")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".grown")]   # no temporary folder left
    # an existing path is refused before any work, and left as it was
    (tmp_path / "taken.pt").write_text("mine")
    out = _cli(tmp_path, "--save-model", str(tmp_path / "taken.pt"))
    assert out.returncode == 2 and "--save-model" in out.stderr and "Traceback" not in out.stderr
    assert (tmp_path / "taken.pt").read_text() == "mine"
