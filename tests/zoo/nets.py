"""Networks the project did not write, as a user would write them (issue 26): factories and data by role.

Every factory is usable from the CLI (``--model tests/zoo/nets.py:resnet_gn --data tests/zoo/nets.py:digits``)
and from the tests. Sizes are tiny so that the default run takes seconds.

* :class:`ResNet2d` -- stem conv, blocks ``x = norm(x + conv(relu(conv(x))))``, global average pool, linear
  head; ``norm`` BatchNorm (used in eval mode) or GroupNorm(4, C); NCHW, 8x8 digits (``P = 64``).
* :class:`BertClassifier` -- Hugging Face ``BertModel`` (post-LN) from a tiny config, a linear head on the
  mean token; :class:`GPT2Classifier` -- ``GPT2Model`` (pre-LN, final ``ln_f``), a linear head on the last token.
* :class:`ChannelsLast` -- a conv net whose state between blocks is ``(N, H W, C)``: channels last, positions
  flattened (layout ``"NLD"`` declared); :class:`NHWCNet` -- the same as an image ``(N, H, W, C)`` (``"NHWC"``).
"""
from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

#: Role sizes of the digits data (disjoint index ranges of one seeded permutation of the 1797 images).
DIGIT_ROLES = {"train": 700, "probe": 300, "signal": 300, "S": 250, "T": 247}
#: The default run's sizes (seconds per network).
SMALL_DIGITS = {"train": 300, "probe": 160, "signal": 360, "S": 120, "T": 120}


class Block2d(nn.Module):
    """``x = norm(x + conv2(relu(conv1(x))))`` on an NCHW state."""

    def __init__(self, c: int, norm: str):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.norm = nn.BatchNorm2d(c) if norm == "bn" else nn.GroupNorm(4, c)

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class ResNet2d(nn.Module):
    """The issue's 2-D post-norm ResNet: stem, ``depth`` blocks of ``c`` channels, GAP, linear head."""

    def __init__(self, norm: str = "gn", c: int = 24, depth: int = 3, classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.blocks = nn.ModuleList(Block2d(c, norm) for _ in range(depth))
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=(2, 3)))


class ChannelsLast(nn.Module):
    """A conv net written channels-last: the state between blocks is ``(N, H W, C)`` (LayerNorm on ``C``)."""

    def __init__(self, c: int = 16, depth: int = 2, classes: int = 10, side: int = 8):
        super().__init__()
        self.side = side
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.convs = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(depth))
        self.blocks = nn.ModuleList(nn.LayerNorm(c) for _ in range(depth))
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        h = self.stem(x).flatten(2).transpose(1, 2)                       # (N, H W, C)
        for conv, norm in zip(self.convs, self.blocks):
            img = h.transpose(1, 2).reshape(h.shape[0], -1, self.side, self.side)
            h = norm(h + torch.relu(conv(img)).flatten(2).transpose(1, 2))
        return self.head(h.mean(dim=1))


class NHWCNet(nn.Module):
    """A conv net written channels-last on images: the state between blocks is ``(N, H, W, C)`` (LayerNorm on ``C``)."""

    def __init__(self, c: int = 16, depth: int = 2, classes: int = 10):
        super().__init__()
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.convs = nn.ModuleList(nn.Conv2d(c, c, 3, padding=1) for _ in range(depth))
        self.blocks = nn.ModuleList(nn.LayerNorm(c) for _ in range(depth))
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        h = self.stem(x).permute(0, 2, 3, 1)                               # (N, H, W, C)
        for conv, norm in zip(self.convs, self.blocks):
            h = norm(h + torch.relu(conv(h.permute(0, 3, 1, 2))).permute(0, 2, 3, 1))
        return self.head(h.mean(dim=(1, 2)))


class BertClassifier(nn.Module):
    """``BertModel`` (post-LN, tiny config, no download) and a linear head on the mean of the last hidden states."""

    def __init__(self, vocab: int = 32, d: int = 16, layers: int = 2, classes: int = 2, seq: int = 12):
        super().__init__()
        from transformers import BertConfig, BertModel

        cfg = BertConfig(vocab_size=vocab, hidden_size=d, num_hidden_layers=layers, num_attention_heads=2,
                         intermediate_size=2 * d, max_position_embeddings=seq, hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, attn_implementation="eager")
        self.bert = BertModel(cfg, add_pooling_layer=False)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        return self.head(self.bert(input_ids=ids).last_hidden_state.mean(dim=1))


class GPT2Classifier(nn.Module):
    """``GPT2Model`` (pre-LN with a final ``ln_f``, tiny config) and a linear head on the last token."""

    def __init__(self, vocab: int = 32, d: int = 16, layers: int = 2, classes: int = 2, seq: int = 12):
        super().__init__()
        from transformers import GPT2Config, GPT2Model

        cfg = GPT2Config(vocab_size=vocab, n_positions=seq, n_embd=d, n_layer=layers, n_head=2, resid_pdrop=0.0,
                         embd_pdrop=0.0, attn_pdrop=0.0, attn_implementation="eager")
        self.gpt = GPT2Model(cfg)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        return self.head(self.gpt(input_ids=ids).last_hidden_state[:, -1])


@functools.lru_cache(maxsize=1)
def _digits_arrays():
    from sklearn.datasets import load_digits

    d = load_digits()
    perm = np.random.default_rng(0).permutation(len(d.target))
    x = torch.tensor(d.data[perm] / 16.0, dtype=torch.float32).reshape(-1, 1, 8, 8)   # values k/16
    return x, torch.tensor(d.target[perm], dtype=torch.int64)


def digits(sizes: dict | None = None) -> dict:
    """Every role of ``sizes`` (default :data:`DIGIT_ROLES`): disjoint ranges of one permutation of the digits."""
    x, y = _digits_arrays()
    out, start = {}, 0
    for role, n in (sizes or DIGIT_ROLES).items():
        out[role] = (x[start:start + n], y[start:start + n])
        start += n
    return out


def small_digits() -> dict:
    """:func:`digits` at :data:`SMALL_DIGITS` (the CLI's ``--data`` of the default run)."""
    return digits(SMALL_DIGITS)


def tokens(n: int, seed: int, vocab: int = 32, seq: int = 12):
    """Token sequences ``(n, seq)`` int64, label 1 iff token 1 occurs more often than token 2 (ties: 0)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (n, seq), generator=g)
    ids[:, :4] = torch.randint(1, 3, (n, 4), generator=g)        # a signal in the first four positions
    return ids, ((ids == 1).sum(1) > (ids == 2).sum(1)).long()


def token_roles() -> dict:
    """Token data by role, one seed per role."""
    sizes = {"train": 300, "probe": 160, "signal": 360, "S": 120, "T": 120}
    return {role: tokens(n, seed) for seed, (role, n) in enumerate(sizes.items(), start=11)}


def train(model: nn.Module, data, steps: int = 150, lr: float = 0.01, seed: int = 0) -> nn.Module:
    """Adam on full batches of ``data = (x, y)``, cross-entropy; returns the model in eval mode."""
    torch.manual_seed(seed)
    x, y = data
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model.eval()


def resnet_gn():
    """The GroupNorm ResNet, seed 0, untrained (the CLI factory)."""
    torch.manual_seed(0)
    return ResNet2d("gn")


def resnet_bn():
    """The BatchNorm ResNet, seed 0, in eval mode (running statistics: an affine map per channel)."""
    torch.manual_seed(0)
    return ResNet2d("bn").eval()


def resnet_bn_train_mode():
    """The BatchNorm ResNet as ``nn.Module`` returns it: in train mode (the CLI refuses it)."""
    torch.manual_seed(0)
    return ResNet2d("bn")


def bert():
    """:class:`BertClassifier`, seed 0."""
    torch.manual_seed(0)
    return BertClassifier()


def gpt2():
    """:class:`GPT2Classifier`, seed 0."""
    torch.manual_seed(0)
    return GPT2Classifier()


def channels_last():
    """:class:`ChannelsLast`, seed 0."""
    torch.manual_seed(0)
    return ChannelsLast()


def nhwc():
    """:class:`NHWCNet`, seed 0."""
    torch.manual_seed(0)
    return NHWCNet()
