"""``dc.constants`` on sequence logits ``(n, T, V)``: a language model's head read per token (issue 37).

The per-sample loss of sequence logits is the mean over the ``T`` positions of the per-token
cross-entropy (:func:`numerics._numerics.per_sample_loss`). Under a final per-sample normalisation
(``LayerNorm``, ``RMSNorm``, Llama/Mistral/Qwen2's RMSNorm) and one linear head applied per token
(``lm_head``, tied to the embedding or not), each token's logits are ``z_t = W h_t + c`` with
``||h_t|| <= R``, one token's radius of the normalisation (``max|gamma| sqrt(d) + ||beta||``), so
``l_t = logsumexp(z_t) - z_{t,y} <= log V + max_k (z_{t,k} - z_{t,y}) <= log V + max_{k,y}
(||W_k - W_y|| R + c_k - c_y)``: the same ``B`` bounds their mean. ``L_loss = sqrt(2)`` holds on the
flattened logits (``(1/T) sum_t sqrt(2) ||dz_t|| <= sqrt(2) ||dz||``). There is no whole-state affine
head above a decoder layer, so ``L_top``, ``A_norm`` and ``kappa`` are not derived.
"""
from __future__ import annotations

import math
from typing import Mapping

import torch
from torch import nn

from numerics.sites import add_at_site

__all__ = ["B_tokens", "picking", "token_head"]


def picking(net: nn.Module, output) -> nn.Module:
    """``net`` (a private copy) whose forward returns the logits ``output`` picks (a ``ModelOutput``'s ``logits``)."""
    from numerics.user_network._outputs import pick_output

    forward = net.forward
    if output is None:   # a dict / ModelOutput without output=: refused naming output= (a tuple: its first element, as before)
        net.forward = lambda *a, **k: (lambda out: pick_output(out, None) if isinstance(out, Mapping) else out)(forward(*a, **k))
    else:
        net.forward = lambda *a, **k: pick_output(forward(*a, **k), output)
    return net


def token_head(net, name: str, x, u, after):
    """``(W (V, d), c (V,), head name)`` when the model's output is sequence logits ``(n, T, V)`` and the only
    module after the normalisation ``name`` that is not the identity is one ``nn.Linear`` applied per token
    (a language model's head, tied or not) -- checked: ``W v_t + c`` reproduces the logits of random states ``v``
    put in place of the normalisation's output, at four scales. None otherwise."""
    rest = [(n, m) for n, m in after[[n for n, _ in after].index(name) + 1:] if not isinstance(m, (nn.Dropout, nn.Identity))]
    if u.dim() != 3 or len(rest) != 1 or not isinstance(rest[0][1], nn.Linear) or rest[0][1].in_features != u.shape[-1]:
        return None
    head = rest[0][1]
    W = head.weight.detach()
    c = head.bias.detach() if head.bias is not None else torch.zeros(W.shape[0], dtype=W.dtype, device=W.device)
    gen = torch.Generator().manual_seed(0)
    for scale in (1e-2, 1.0, 1e2, 1e4):
        v = scale * torch.randn(u.shape, generator=gen, dtype=u.dtype).to(u.device)
        with torch.no_grad(), add_at_site(net, name, lambda s: v - s):
            got = net(x)
        got = got[0] if isinstance(got, tuple) else got
        want = v @ W.T + c
        if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-7, atol=1e-7 * (1 + float(want.abs().max()))):
            return None
    return W, c, rest[0][0]


def _pair_max(W: torch.Tensor, c: torch.Tensor, R: float, chunk: int = 256) -> float:
    """``max_{k,y} (||W_k - W_y|| R + c_k - c_y)``, in chunks of rows (a vocabulary of 32k rows fits in memory)."""
    best = -math.inf
    for a in range(0, W.shape[0], chunk):
        d = torch.cdist(W[a:a + chunk], W) * R + (c[a:a + chunk, None] - c[None, :])
        best = max(best, float(d.max()))
    return best


def B_tokens(name, mod, u, token, loss, R: float, why: dict, how: dict) -> float | None:
    """``B`` of per-token cross-entropy averaged over positions: every token's loss is at most
    ``log V + max_{k,y} (||W_k - W_y|| R + c_k - c_y)`` with ``R`` the radius of one token's normalised state
    (``norm_radius`` of ``d`` numbers, with the rounding margin: computed by the caller)."""
    if loss != "cross_entropy":
        why["B"] = "squared loss on sequence logits: no derivation (cross-entropy only)"
        return None
    W, c, head = token
    d = u.shape[-1]
    B = math.log(W.shape[0]) + _pair_max(W, c, R)
    how["B"] = (f"log V + max_k,y(||W_k - W_y|| R + c_k - c_y) per token (the loss is their mean over positions), R = {R:.6g} "
                f"the radius of one token's {name} ({type(mod).__name__}, d = {d}), head {head} read per token")
    return B
