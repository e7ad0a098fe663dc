"""``f_old`` of the pretrained study: MiniLM's encoder (frozen) and BERT's MLM head trained alone.

The checkpoint has no MLM head; BERT's is built: ``dense -> GELU -> LayerNorm -> decoder``, the
decoder's weight tied to (the same tensor as) the frozen word embeddings, with its own bias.
:class:`MLMNet` takes the masked ids ``(n, T)`` and returns the logits at the ``[MASK]``
positions only, ``(n, k, vocab)`` in position order (every sequence has ``k`` of them), so the
per-sample loss :func:`mlm_loss` -- the mean cross-entropy over a sequence's masked tokens --
is a function of ``(x, y)``. The encoder's layers are the modules ``encoder.layer.0`` ...
``encoder.layer.5`` (their outputs ``(n, T, 384)``: the sites of the scan, post-LN states).
Attention runs over every position (no padding: every sequence is full length).
"""
from __future__ import annotations

import math

import torch
from torch import nn
import torch.nn.functional as F

__all__ = ["MLMHead", "MLMNet", "loss_bound", "mlm_loss", "train_head"]


class MLMHead(nn.Module):
    """BERT's prediction head on hidden states ``(..., d)`` -> logits ``(..., vocab)``."""

    def __init__(self, word_embeddings: nn.Embedding, eps: float = 1e-12):
        super().__init__()
        d = word_embeddings.weight.shape[1]
        self.dense = nn.Linear(d, d)
        self.LayerNorm = nn.LayerNorm(d, eps=eps)
        self.decoder = nn.Linear(d, word_embeddings.weight.shape[0])
        self.decoder.weight = word_embeddings.weight          # tied: one tensor
        nn.init.zeros_(self.decoder.bias)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.LayerNorm(F.gelu(self.dense(h))))


class MLMNet(nn.Module):
    """Masked ids ``(n, T)`` -> logits at the ``[MASK]`` positions ``(n, k, vocab)``."""

    def __init__(self, bert, mask_id: int, n_mask: int):
        super().__init__()
        self.embeddings = bert.embeddings
        self.encoder = bert.encoder
        self.head = MLMHead(bert.embeddings.word_embeddings, eps=bert.config.layer_norm_eps)
        self.mask_id, self.n_mask = int(mask_id), int(n_mask)

    def positions(self, x: torch.Tensor) -> torch.Tensor:
        """``(n, k)``: the ``[MASK]`` positions of each sequence, in order."""
        is_mask = (x == self.mask_id)
        if not bool((is_mask.sum(1) == self.n_mask).all()):
            raise ValueError(f"every sequence must hold exactly n_mask == {self.n_mask} [MASK] tokens.")
        return torch.sort((~is_mask).to(torch.int8), dim=1, stable=True).indices[:, :self.n_mask]

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embeddings(input_ids=x)
        for layer in self.encoder.layer:
            h = layer_output(layer(h))
        return h

    def readout(self, h: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Logits at ``pos`` of the top hidden state ``h``."""
        return self.head(_gather(h, pos))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.hidden(x), self.positions(x))


def mlm_loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sequence loss ``(n,)``: the mean cross-entropy over its ``k`` masked tokens."""
    n, k, v = logits.shape
    return F.cross_entropy(logits.reshape(n * k, v), y.reshape(n * k), reduction="none").view(n, k).mean(1)


def loss_bound(head: MLMHead) -> dict:
    """A sure bound ``B`` on the per-sequence loss, whatever the input (THEORY §1's ``B``).

    The head's LayerNorm output is ``u = gamma * x_hat + beta`` with ``||x_hat||_2 <= sqrt(d)``, so
    ``||u|| <= max|gamma| sqrt(d) + ||beta||``; each logit ``|z_v| = |<E_v, u> + b_v| <= Z :=
    max_v ||E_v|| ||u||_max + max|b|``; cross-entropy ``logsumexp(z) - z_y <= ln V + 2 Z``; a mean over the
    masked tokens keeps the bound. Nothing sure exists for ``L_top``/``kappa`` inside the encoder
    (attention and LayerNorm above the site are not globally Lipschitz).
    """
    ln, dec = head.LayerNorm, head.decoder
    d, V = ln.weight.numel(), dec.weight.shape[0]
    with torch.no_grad():
        u_max = float(ln.weight.abs().max()) * d ** 0.5 + float(ln.bias.norm())
        Z = float(dec.weight.norm(dim=1).max()) * u_max + float(dec.bias.abs().max())
    return {"B": math.log(V) + 2 * Z, "logit_bound": Z, "head_input_norm_bound": u_max}


def train_head(net: MLMNet, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float, batch: int, seed: int) -> list[float]:
    """Train the head alone (encoder and tied embeddings frozen) on ``(x, y)``: Adam, ``steps`` minibatches.

    The encoder's top states at the masked positions are computed once (no gradient); returns the losses.
    """
    for p in net.parameters():
        p.requires_grad_(False)
    train = [net.head.dense.weight, net.head.dense.bias, net.head.LayerNorm.weight, net.head.LayerNorm.bias,
             net.head.decoder.bias]
    for p in train:
        p.requires_grad_(True)
    with torch.no_grad():
        pos = net.positions(x)
        feats = torch.cat([_gather(net.hidden(xb), pb) for xb, pb in zip(x.split(64), pos.split(64))])
    opt = torch.optim.Adam(train, lr=lr)
    g = torch.Generator().manual_seed(int(seed))
    losses = []
    for _ in range(int(steps)):
        idx = torch.randint(0, x.shape[0], (batch,), generator=g)
        loss = mlm_loss(net.head(feats[idx]), y[idx]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    for p in net.parameters():
        p.requires_grad_(False)
    return losses


def layer_output(h):
    """The hidden state of a ``BertLayer`` call (a tensor, or the first entry of a tuple in other versions)."""
    return h[0] if isinstance(h, tuple) else h


def _gather(h: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    return h.gather(1, pos.unsqueeze(-1).expand(-1, -1, h.shape[-1]))
