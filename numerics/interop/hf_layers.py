"""Real decoder layers for Hugging Face decoders: the grown model is an ordinary checkpoint (THEORY §1).

LLaMA-Pro's block expansion (and mergekit's ``passthrough``, LlamaFactory's ``use_llama_pro``):
a new decoder layer goes into the model's own layer list, right after layer ``i``, as a layer of
the model's own class whose *output projections are zero* (weights and biases). A pre-norm
decoder layer computes ``u + attn(norm(u)) + mlp(norm(.))``; with both projections into the
residual stream zero, it adds exactly ``0.0`` to every coordinate, so the deeper model computes
the very same floating-point numbers (logits, and the KV cache of every old layer) as before.

* ``init="copy_zero"`` -- a copy of layer ``i`` (LLaMA-Pro's initialisation), projections zeroed;
* ``init="zero"`` -- a freshly initialised layer (the model's own ``_init_weights``), projections zeroed.

Then ``config.num_hidden_layers`` (GPT-2: ``n_layer``) is raised, a per-layer
``config.layer_types`` (Qwen2's sliding windows) gets the neighbour's entry, every submodule's
``layer_idx`` is renumbered (the KV cache is indexed by it), and the old layers' parameter names
follow the model's own numbering: :func:`insert_decoder_layer` returns ``{old name: new name}``.
``save_pretrained`` then writes a checkpoint that ``from_pretrained`` loads without depthcert.

Supported (one list of pre-norm layers): ``llama``, ``mistral``, ``qwen2`` (``model.layers``),
``gpt2`` (``transformer.h``), ``gpt_neox`` (``gpt_neox.layers``), as ``...ForCausalLM`` or their
base model. **Not** post-norm encoders (BERT): their layer ends in ``LayerNorm(u + f(u))``, so a
layer with zero projections computes ``LayerNorm(u)``, not ``u`` -- not the identity; those keep
the forward-hook route of ``numerics.user_network._attach.attach_unit``. GPT-2 with
``scale_attn_by_inverse_layer_idx`` is refused: its attention scale depends on the layer's index,
so renumbering would change every later layer's function.
"""
from __future__ import annotations

import copy
import re

import torch
from torch import nn

from plumbing.validation import InputError

__all__ = ["ARCHS", "INITS", "inserted_layers", "insert_decoder_layer", "is_layer_site", "layer_list_path",
           "supported", "zeroed_projections"]

#: ``model_type`` -> (the layer list's name in the base model, the output projections into the residual stream).
ARCHS = {
    "llama": ("layers", ("self_attn.o_proj", "mlp.down_proj")),
    "mistral": ("layers", ("self_attn.o_proj", "mlp.down_proj")),
    "qwen2": ("layers", ("self_attn.o_proj", "mlp.down_proj")),
    "gpt2": ("h", ("attn.c_proj", "crossattention.c_proj", "mlp.c_proj")),
    "gpt_neox": ("layers", ("attention.dense", "mlp.dense_4h_to_h")),
}
INITS = ("copy_zero", "zero")
#: the attribute of a grown model that lists its inserted layers' indices (kept up to date by renumbering).
INSERTED = "depthcert_inserted_layers"


def supported(model) -> bool:
    """A Hugging Face ``PreTrainedModel`` of one of :data:`ARCHS`' types (no other model is)."""
    try:
        from transformers import PreTrainedModel
    except ImportError:   # pragma: no cover - optional extra
        return False
    return isinstance(model, PreTrainedModel) and getattr(model.config, "model_type", None) in ARCHS


def layer_list_path(model) -> str:
    """The path of the decoder layer list, e.g. ``"model.layers"``, ``"transformer.h"``, or ``"layers"`` in a base model."""
    name = ARCHS[model.config.model_type][0]
    base = model.base_model
    return name if base is model else f"{model.base_model_prefix}.{name}"


def is_layer_site(model, site) -> bool:
    """True iff ``model`` is :func:`supported` and ``site`` is one of its decoder layers (``"model.layers.3"``)."""
    if not supported(model) or not isinstance(site, str):
        return False
    head, _, k = site.rpartition(".")
    return head == layer_list_path(model) and k.isdigit() and int(k) < len(_layers(model))


def _layers(model) -> nn.ModuleList:
    return model.get_submodule(layer_list_path(model))


def zeroed_projections(model, layer: nn.Module) -> list[str]:
    """Zero the output projections (weights and biases) of ``layer`` in place; their names in the layer."""
    done = []
    for name in ARCHS[model.config.model_type][1]:
        try:
            proj = layer.get_submodule(name)
        except AttributeError:
            continue
        with torch.no_grad():
            for p in proj.parameters(recurse=False):
                p.zero_()
        done.append(name)
    return done


def _check(model, after: int, init: str) -> None:
    if not supported(model):
        raise InputError("model", f"a Hugging Face decoder of type {sorted(ARCHS)}", type(model).__name__)
    n = len(_layers(model))
    if not (isinstance(after, int) and not isinstance(after, bool) and 0 <= after < n):
        raise InputError("after", f"a layer index in [0, {n - 1}]", after)
    if init not in INITS:
        raise InputError("init", f"one of {list(INITS)}", init)
    if model.config.model_type == "gpt2" and getattr(model.config, "scale_attn_by_inverse_layer_idx", False):
        raise InputError("model", "a GPT-2 without scale_attn_by_inverse_layer_idx (its attention scale depends on the "
                         "layer index, so renumbering would change the later layers)", True)


def _new_layer(model, ref: nn.Module, index: int, init: str) -> nn.Module:
    """A copy of ``ref`` (``copy_zero``) or a fresh layer of its class (``zero``), output projections zeroed."""
    if init == "copy_zero":
        new = copy.deepcopy(ref)
    else:
        new = type(ref)(model.config, index)
        new.apply(model._init_weights)
        p = next(ref.parameters())
        new.to(device=p.device, dtype=p.dtype)
    new.train(ref.training)
    zeroed_projections(model, new)
    return new


def _renumber(model) -> None:
    for j, layer in enumerate(_layers(model)):
        for mod in layer.modules():
            if isinstance(getattr(mod, "layer_idx", None), int):
                mod.layer_idx = j


def insert_decoder_layer(model, after: int, init: str = "copy_zero") -> dict[str, str]:
    """Insert a decoder layer with zero output projections right after layer ``after``, in place.

    Returns:
        ``{old parameter name: new parameter name}`` for every parameter of ``model`` before the
        insertion (layers above ``after`` move up by one; every other name is unchanged).

    Raises:
        InputError: not a supported decoder, ``after`` out of range, an unknown ``init``, or
            GPT-2 with ``scale_attn_by_inverse_layer_idx``.

    Example:
        >>> from transformers import LlamaConfig, LlamaForCausalLM
        >>> cfg = LlamaConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=2,
        ...                   num_attention_heads=2, num_key_value_heads=2)
        >>> net = LlamaForCausalLM(cfg).eval()
        >>> ids = torch.randint(0, 32, (2, 5))
        >>> before = net(ids).logits
        >>> names = insert_decoder_layer(net, 0)
        >>> net.config.num_hidden_layers, names["model.layers.1.mlp.up_proj.weight"]
        (3, 'model.layers.2.mlp.up_proj.weight')
        >>> bool(torch.equal(net(ids).logits, before)), [m.self_attn.layer_idx for m in net.model.layers]
        (True, [0, 1, 2])
    """
    _check(model, after, init)
    cfg, layers, path = model.config, _layers(model), layer_list_path(model)
    old_names = [n for n, _ in model.named_parameters()]
    n = len(layers)
    types = getattr(cfg, "layer_types", None)
    if isinstance(types, list) and len(types) == n:
        cfg.layer_types = types[: after + 1] + [types[after]] + types[after + 1:]
    cfg.num_hidden_layers = n + 1
    layers.insert(after + 1, _new_layer(model, layers[after], after + 1, init))
    _renumber(model)
    shift = re.compile(rf"^{re.escape(path)}\.(\d+)\.")

    def moved(name: str) -> str:
        m = shift.match(name)
        if m is None or int(m.group(1)) <= after:
            return name
        return f"{path}.{int(m.group(1)) + 1}.{name[m.end():]}"

    prev = [k + (k > after) for k in getattr(model, INSERTED, [])]
    setattr(model, INSERTED, sorted(prev + [after + 1]))
    return {name: moved(name) for name in old_names}


def inserted_layers(model) -> dict[str, nn.Parameter]:
    """``{name: parameter}`` of the layers :func:`insert_decoder_layer` inserted into ``model`` ({} for any other)."""
    idx = getattr(model, INSERTED, None)
    if not idx or not supported(model):
        return {}
    path = layer_list_path(model)
    prefixes = tuple(f"{path}.{k}." for k in idx)
    return {n: p for n, p in model.named_parameters() if n.startswith(prefixes)}
