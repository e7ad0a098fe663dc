"""The arms of the pretrained study: a new block at a site, or an existing layer tuned, trained alone.

Every arm trains with the same optimiser (Adam, ``lr``), the same number of steps and the same
minibatches (drawn from the arm's seed, so arms of one seed see the same sequences in the same
order). The network below the trained part is frozen, so its states are computed once (no
gradient) for the training sample ``S`` and the held-out sample ``T``: ``states[j]`` is the input
of layer ``j`` (``states[0]`` the embeddings' output, ``states[6]`` the top). An arm then runs
only the layers from its site up.

* ``block`` at site ``k`` (``encoder.layer.k``): ``u -> u + h(u)`` after layer ``k``, ``h`` the
  protocol family's block of :func:`depthcert.insert_block` (``init="zero"``: the network is
  ``f_old`` at step 0); only ``h``'s parameters are trained.
* ``layer`` ``k``: no new block; the existing ``encoder.layer.k`` is trained instead.
"""
from __future__ import annotations

import copy

import torch

from numerics.studies.pretrained._mlm import MLMNet, _gather, layer_output, mlm_loss

__all__ = ["encoder_states", "heldout_losses", "train_arm"]


def encoder_states(net: MLMNet, x: torch.Tensor, chunk: int = 64) -> list[torch.Tensor]:
    """``[input of layer 0, ..., input of layer L-1, top]`` for ``x``, no gradient."""
    out = []
    with torch.no_grad():
        for xb in x.split(chunk):
            h = net.embeddings(input_ids=xb)
            hs = [h]
            for layer in net.encoder.layer:
                h = layer_output(layer(h))
                hs.append(h)
            out.append(hs)
    return [torch.cat([o[j] for o in out]) for j in range(len(out[0]))]


def _logits(net: MLMNet, layers, first: int, h: torch.Tensor, pos: torch.Tensor, block=None) -> torch.Tensor:
    """Logits from the input ``h`` of layer ``first``: ``h + block(h)`` first when a block is given."""
    if block is not None:
        h = h + block(h)
    for layer in layers[first:]:
        h = layer_output(layer(h))
    return net.head(_gather(h, pos))


def heldout_losses(net: MLMNet, layers, first: int, states, pos, y, block=None, chunk: int = 64) -> torch.Tensor:
    """Per-sequence MLM losses ``(n,)`` from ``states[first]`` (no gradient)."""
    with torch.no_grad():
        return torch.cat([mlm_loss(_logits(net, layers, first, h, p, block), t)
                          for h, p, t in zip(states[first].split(chunk), pos.split(chunk), y.split(chunk))])


def train_arm(net: MLMNet, arm: dict, S, T, steps: int, batch: int, lr: float, seed: int) -> dict:
    """Train one arm: ``{"kind": "block", "site": k, "block": module}`` (a new block after layer ``k``)
    or ``{"kind": "layer", "site": k}`` (layer ``k`` itself). ``S``, ``T``: ``(states, positions, targets)``.

    Returns the held-out per-sequence losses after training, the trained parameter count and the
    training losses. ``net`` is not changed (the trained part is a copy).
    """
    layers = list(net.encoder.layer)
    k = int(arm["site"])
    if arm["kind"] == "block":
        block, first = copy.deepcopy(arm["block"]), k + 1
        params = list(block.parameters())
    else:
        layers[k] = copy.deepcopy(layers[k])
        block, first = None, k
        params = list(layers[k].parameters())
    for p in params:
        p.requires_grad_(True)
    opt = torch.optim.Adam(params, lr=lr)
    g = torch.Generator().manual_seed(int(seed))
    states, pos, y = S
    losses = []
    for _ in range(int(steps)):
        idx = torch.randint(0, y.shape[0], (batch,), generator=g)
        loss = mlm_loss(_logits(net, layers, first, states[first][idx], pos[idx], block), y[idx]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    for p in params:
        p.requires_grad_(False)
    after = heldout_losses(net, layers, first, *T, block=block)
    return {"heldout": after, "n_params": sum(p.numel() for p in params), "train_losses": losses}
