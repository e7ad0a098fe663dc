"""Tiny Hugging Face decoders (config only, random weights) trained a few hundred steps on the stdlib corpus."""
from __future__ import annotations

import functools

import torch

from numerics.corpus import CharCorpus

VOCAB = CharCorpus.vocab_size


@functools.lru_cache(maxsize=1)
def corpus() -> CharCorpus:
    return CharCorpus(200_000)


def build(kind: str, layers: int = 2, d: int = 32):
    """A fresh tiny ``LlamaForCausalLM`` / ``GPT2LMHeadModel`` / ``GPTNeoXForCausalLM`` / ``Qwen2ForCausalLM`` (eager attention)."""
    import transformers as tr

    torch.manual_seed(0)
    common = dict(vocab_size=VOCAB, bos_token_id=0, eos_token_id=1, pad_token_id=1)
    if kind == "llama":
        cfg = tr.LlamaConfig(hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers, num_attention_heads=2,
                             num_key_value_heads=2, max_position_embeddings=128, **common)
        cls = tr.LlamaForCausalLM
    elif kind == "qwen2":
        cfg = tr.Qwen2Config(hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers, num_attention_heads=2,
                             num_key_value_heads=2, max_position_embeddings=128, **common)
        cls = tr.Qwen2ForCausalLM
    elif kind == "gpt2":
        cfg = tr.GPT2Config(n_embd=d, n_layer=layers, n_head=2, n_positions=128, resid_pdrop=0.0, embd_pdrop=0.0,
                            attn_pdrop=0.0, **common)
        cls = tr.GPT2LMHeadModel
    elif kind == "gpt_neox":
        cfg = tr.GPTNeoXConfig(hidden_size=d, intermediate_size=2 * d, num_hidden_layers=layers, num_attention_heads=2,
                               max_position_embeddings=128, **common)
        cls = tr.GPTNeoXForCausalLM
    else:
        raise ValueError(kind)
    cfg._attn_implementation = "eager"
    return cls(cfg)


def train(model, steps: int = 200, n: int = 16, T: int = 32, lr: float = 3e-3, seed: int = 0):
    """``steps`` Adam steps of next-character prediction on the corpus' train split; the model in eval mode after."""
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for k in range(steps):
        x, y = corpus().windows("train", n, T, seed=seed + k)
        loss = torch.nn.functional.cross_entropy(model(input_ids=x).logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


@functools.lru_cache(maxsize=None)
def trained(kind: str):
    """A trained tiny model of ``kind`` (cached: callers deep-copy before changing it)."""
    return train(build(kind))
