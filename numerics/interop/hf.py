"""Hugging Face causal language models (e.g. GPT-NeoX / Pythia) loaded from a local directory.

Optional: needs ``transformers`` (``pip install depthcert[hf]``). Nothing is downloaded:
the directory must hold a ``config.json`` and weights (as written by ``save_pretrained``).
Attention runs in the "eager" implementation so that curvature (double backward) works.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import torch
from torch import nn

from plumbing.validation import InputError

__all__ = ["HFCausalLM"]


class HFCausalLM(nn.Module):
    """``(n, T)`` token ids -> logits ``(n, T, vocab)`` of a local ``AutoModelForCausalLM``.

    Sites: the embedding dropout (the stream ``z_0``, when the model has one, as GPT-NeoX's
    ``emb_dropout``) and every layer of the largest ``ModuleList`` (the decoder layers).

    Raises:
        InputError: ``transformers`` missing, or ``path`` not a model directory, or its weights missing,
            refused by ``weights_only`` or unreadable (one line with the loader's reason).
    """

    def __init__(self, path: str, dtype: torch.dtype = torch.float32, key: str = "model.path"):
        super().__init__()
        weights = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
        if (Path(path) / "config.json").is_file() and not any((Path(path) / w).is_file() for w in weights):
            raise InputError(key, f"a local Hugging Face model folder holding its weights (one of {', '.join(weights)})",
                             f"{path} (config.json but no weights)")     # before the (slow) import of transformers
        try:
            from transformers import AutoModelForCausalLM
        except ImportError:   # pragma: no cover - optional extra
            raise InputError(key, "usable with transformers installed (pip install 'depthcert[hf]')", path) from None
        if not (Path(path) / "config.json").is_file():
            raise InputError(key, "a local model directory with config.json (no download)", str(path))
        try:
            self.model = AutoModelForCausalLM.from_pretrained(str(path), attn_implementation="eager", dtype=dtype,
                                                              local_files_only=True)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, pickle.UnpicklingError) as exc:   # no weights, refused or corrupt ones
            text = str(exc).strip().splitlines()
            raise InputError(key, "a local Hugging Face causal-LM folder with config.json and its weights "
                             "(model.safetensors, or pytorch_model.bin that loads with weights_only=True)",
                             f"{path} ({type(exc).__name__}: {text[0][:200] if text else ''})") from None
        self.model.eval()
        self.vocab_size = int(self.model.config.vocab_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=idx, use_cache=False).logits

    def site_names(self) -> list[str]:
        lists = [(len(m), n) for n, m in self.named_modules() if isinstance(m, nn.ModuleList) and len(m)]
        _, layers = max(lists)
        drop = [n for n, _ in self.named_modules() if n.endswith("emb_dropout") or n.endswith("embed_dropout")]
        return drop[:1] + [f"{layers}.{k}" for k in range(len(dict(self.named_modules())[layers]))]
