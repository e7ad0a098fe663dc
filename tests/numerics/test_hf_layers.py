"""Real decoder layers in Hugging Face decoders (numerics.interop.hf_layers, dc.insert_block's layer route).

Acceptance (issue 37 item 1): a tiny decoder trained a few dozen steps on the stdlib corpus, one
layer inserted, ``save_pretrained``, then ``from_pretrained`` in a fresh process that never imports
depthcert: logits equal to the unchanged model's (max |diff| <= 1e-6, float32), greedy
``generate()`` with the KV cache gives the same tokens, and the config has one more layer. The
reference numbers come from the *unchanged* model in this process (an independent computation).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

pytest.importorskip("transformers")

import depthcert as dc  # noqa: E402
from numerics.interop.hf_layers import insert_decoder_layer, layer_list_path  # noqa: E402
from plumbing.validation import InputError  # noqa: E402
from tests.numerics import _hf_tiny  # noqa: E402

TOL = 1e-6

# the fresh process: transformers and torch only; it fails loudly if depthcert got imported
_CHILD = r"""
import json, sys, torch
from transformers import AutoModelForCausalLM
ref = torch.load(sys.argv[2], weights_only=True)
m = AutoModelForCausalLM.from_pretrained(sys.argv[1], attn_implementation="eager").eval()
with torch.no_grad():
    logits = m(input_ids=ref["ids"]).logits
    gen = m.generate(ref["prompt"], max_new_tokens=6, do_sample=False, use_cache=True, pad_token_id=1)
print(json.dumps({"diff": float((logits - ref["logits"]).abs().max()), "same_tokens": bool(torch.equal(gen, ref["gen"])),
                  "layers": int(m.config.num_hidden_layers), "cls": type(m).__name__,
                  "depthcert_imported": any(k.split(".")[0] in ("depthcert", "numerics", "bounds", "plumbing") for k in sys.modules)}))
"""


def _reference(model):
    x, _ = _hf_tiny.corpus().windows("held", 4, 24, seed=7)   # probe role: held-out split, not the training windows
    with torch.no_grad():
        logits = model(input_ids=x).logits
        gen = model.generate(x[:2, :8], max_new_tokens=6, do_sample=False, use_cache=True, pad_token_id=1)
    return {"ids": x, "logits": logits, "prompt": x[:2, :8], "gen": gen}


def _fresh_load(directory, ref, tmp_path) -> dict:
    torch.save(ref, tmp_path / "ref.pt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-c", _CHILD, str(directory), str(tmp_path / "ref.pt")], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kind,site", [("llama", "model.layers.0"), ("gpt2", "transformer.h.1")])
def test_inserted_layer_saves_and_loads_as_the_same_function_without_depthcert(kind, site, tmp_path):
    net = _hf_tiny.trained(kind)
    ref = _reference(net)
    probe = _hf_tiny.corpus().windows("held", 128, 24, seed=3)   # the scan's probe: held-out split
    rep = dc.saturation(net, probe, sites=f"{site.rpartition('.')[0]}.*", output="logits", curvature_n=16, families=["readout"])
    assert site in [r["site"] for r in rep.sites]
    grown = dc.insert_block(net, site, init="copy_zero", scan=rep)
    assert type(grown) is type(net) and grown is not net
    assert net.config.num_hidden_layers == 2 and grown.config.num_hidden_layers == 3   # the caller's model unchanged
    grown.save_pretrained(tmp_path / "grown")
    got = _fresh_load(tmp_path / "grown", ref, tmp_path)
    assert not got["depthcert_imported"]
    assert got["cls"] == type(net).__name__ and got["layers"] == 3
    assert got["diff"] <= TOL and got["same_tokens"], got


def test_the_check_rejects_a_layer_that_is_not_the_identity(tmp_path):
    """Power: the same check on a grown model whose new layer's output projection is not zero fails."""
    net = _hf_tiny.trained("llama")
    ref = _reference(net)
    grown = dc.insert_block(net, "model.layers.0", init="copy_zero")
    with torch.no_grad():
        grown.model.layers[1].self_attn.o_proj.weight.normal_(0, 0.05)
    grown.save_pretrained(tmp_path / "bad")
    got = _fresh_load(tmp_path / "bad", ref, tmp_path)
    assert got["diff"] > TOL


@pytest.mark.parametrize("kind", ["llama", "gpt2", "gpt_neox", "qwen2"])
@pytest.mark.parametrize("init", ["copy_zero", "zero"])
def test_every_architecture_keeps_its_function_names_and_cache(kind, init):
    net = _hf_tiny.build(kind, layers=3, d=16).eval()
    x = torch.randint(0, _hf_tiny.VOCAB, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        before = net(input_ids=x).logits
        gen = net.generate(x[:, :4], max_new_tokens=5, do_sample=False, use_cache=True, pad_token_id=1)
    old = dict(net.named_parameters())
    grown = dc.insert_block(net, f"{layer_list_path(net)}.1", init=init)
    path = layer_list_path(grown)
    with torch.no_grad():
        assert float((grown(input_ids=x).logits - before).abs().max()) == 0.0
        assert torch.equal(grown.generate(x[:, :4], max_new_tokens=5, do_sample=False, use_cache=True, pad_token_id=1), gen)
    layers = grown.get_submodule(path)
    assert len(layers) == 4 and grown.config.num_hidden_layers == 4
    idx = [[m.layer_idx for m in layer.modules() if isinstance(getattr(m, "layer_idx", None), int)] for layer in layers]
    assert all(i and set(i) == {j} for j, i in enumerate(idx)), idx
    if getattr(grown.config, "layer_types", None) is not None:
        assert len(grown.config.layer_types) == 4
    new = dict(grown.named_parameters())
    assert set(grown.depthcert_renamed) == set(old)
    for o, n in grown.depthcert_renamed.items():   # every old parameter: same value under its new name
        assert torch.equal(old[o], new[n]), (o, n)
    assert grown.depthcert_renamed[f"{path}.2.{next(iter(dict(layers[3].named_parameters())))}"].startswith(f"{path}.3.")
    added = dc.new_parameters(grown)
    assert added and all(k.startswith(f"{path}.2.") for k in added)
    assert set(added) == set(new) - set(grown.depthcert_renamed.values())
    ref_layer = dict(layers[1].named_parameters())
    for k, p in layers[2].named_parameters():
        if any(k.startswith(proj + ".") for proj in ("self_attn.o_proj", "mlp.down_proj", "attn.c_proj", "mlp.c_proj",
                                                      "attention.dense", "mlp.dense_4h_to_h")):
            assert not p.any(), k
        elif init == "copy_zero":
            assert torch.equal(p, ref_layer[k]), k


def test_a_second_insertion_shifts_the_first_and_lists_both():
    net = _hf_tiny.build("llama", layers=2, d=16)
    g1 = dc.insert_block(net, "model.layers.1", init="copy_zero")
    g2 = dc.insert_block(g1, "model.layers.0", init="zero")
    assert g2.depthcert_inserted_layers == [1, 3]
    assert {k.split(".")[2] for k in dc.new_parameters(g2)} == {"1", "3"}


def test_refusals_name_the_argument():
    net = _hf_tiny.build("llama", layers=2, d=16)
    with pytest.raises(InputError, match="after"):
        insert_decoder_layer(net, 2)
    with pytest.raises(InputError, match="init"):
        insert_decoder_layer(net, 0, "jumpboard")
    g = _hf_tiny.build("gpt2", layers=2, d=16)
    g.config.scale_attn_by_inverse_layer_idx = True
    with pytest.raises(InputError, match="scale_attn_by_inverse_layer_idx"):
        insert_decoder_layer(g, 0)
    with pytest.raises(TypeError):   # "copy_zero" elsewhere than a decoder layer: the hook route needs a scan
        dc.insert_block(torch.nn.Sequential(torch.nn.Linear(2, 2)), "0", init="copy_zero")


def test_in_place_growth_finds_a_decoder_inside_a_wrapper():
    """The callbacks' in-place route: a Hugging Face decoder held by a user's module (a LightningModule's ``self.lm``)."""
    from depthcert.integrations._core import grow_in_place

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lm = _hf_tiny.build("gpt2", layers=2, d=16).eval()

        def forward(self, x):
            return self.lm(input_ids=x).logits

    w = Wrapper()
    x = torch.randint(0, _hf_tiny.VOCAB, (2, 6))
    before, params = w(x), {id(p) for p in w.parameters()}
    kind, new = grow_in_place(w, "lm.transformer.h.0", rep=None)
    assert kind == "layer:copy_zero" and sorted({k.split(".")[3] for k in new}) == ["1"] and all(k.startswith("lm.transformer.h.1.") for k in new)
    assert params < {id(p) for p in w.parameters()}   # the old parameters are the same objects (an optimiser's stay valid)
    assert torch.equal(w(x), before) and w.lm.config.n_layer == 3


def test_a_post_norm_bert_layer_with_zero_projections_is_not_the_identity():
    """Why BERT keeps the hook route: its layer ends in LayerNorm(u + f(u)), so f = 0 gives LayerNorm(u) != u."""
    from transformers import BertConfig, BertModel

    from numerics.interop.hf_layers import supported

    bert = BertModel(BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)).eval()
    assert not supported(bert)
    layer = bert.encoder.layer[0]
    with torch.no_grad():
        for lin in (layer.attention.output.dense, layer.output.dense):
            lin.weight.zero_()
            lin.bias.zero_()
        u = torch.randn(2, 5, 16) * 3 + 1
        out = layer(u)
        out = out[0] if isinstance(out, tuple) else out
    assert float((out - u).abs().max()) > 0.1
