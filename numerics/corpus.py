"""A character-level corpus that ships with every Python: the standard library's own source.

The text is the top-level ``*.py`` files of ``sysconfig.get_paths()["stdlib"]``, in sorted
order, read until ``max_chars`` characters (no download). Each *file* goes to one split
by a hash of its name (80% train, 10% test, 10% held out for probe and population
samples), so the splits never share a file. The vocabulary is fixed (tab, newline, the
95 printable ASCII characters and one "other" symbol), so ids do not depend on the
Python version -- the text does (a different Python ships a different library).

Samples are windows of ``T + 1`` characters at random offsets of one split:
``x = w[:-1]``, ``y = w[1:]`` (next-character prediction), drawn from a seeded generator.
"""
from __future__ import annotations

import functools
import hashlib
import math
import sysconfig
from pathlib import Path

import torch

__all__ = ["CharCorpus", "VOCAB", "stdlib_files"]

VOCAB = ["\t", "\n"] + [chr(c) for c in range(32, 127)] + ["\x00"]   # "\x00": any other character
_INDEX = {ch: i for i, ch in enumerate(VOCAB)}
_OTHER = len(VOCAB) - 1
SPLITS = ("train", "test", "held")


def stdlib_files() -> list[Path]:
    """The standard library's top-level ``*.py`` files, sorted by name."""
    return sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))


def _split_of(path: Path) -> str:
    bucket = int(hashlib.sha1(path.name.encode()).hexdigest(), 16) % 10
    return "train" if bucket < 8 else ("test" if bucket == 8 else "held")


def encode(text: str) -> torch.Tensor:
    """Character ids (``uint8``) in :data:`VOCAB`.

    Example:
        >>> encode("a\\n").tolist(), decode(encode("a\\n"))
        ([67, 1], 'a\\n')
    """
    return torch.tensor([_INDEX.get(ch, _OTHER) for ch in text], dtype=torch.uint8)


def decode(ids) -> str:
    return "".join(VOCAB[int(i)] for i in ids)


class CharCorpus:
    """The stdlib corpus split by file into ``train``, ``test`` and ``held``.

    Args:
        max_chars: characters read in total (files in sorted order; the last one is cut).

    Example:
        >>> corpus = CharCorpus(200_000)
        >>> x, y = corpus.windows("train", 4, 16, seed=0)
        >>> tuple(x.shape), bool(torch.equal(x[:, 1:], y[:, :-1])), corpus.vocab_size
        ((4, 16), True, 98)
    """

    vocab_size = len(VOCAB)

    def __init__(self, max_chars: int = 3_000_000):
        if not isinstance(max_chars, int) or max_chars < 10_000:
            raise ValueError(f"max_chars == {max_chars!r}, must be an int >= 10000.")
        self.max_chars = max_chars
        self.ids = _load(max_chars)

    def windows(self, split: str, n: int, T: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` windows of length ``T + 1`` at random offsets: ``(x, y)`` int64 ``(n, T)``.

        Raises:
            ValueError: unknown split, or a split shorter than ``T + 1``.
        """
        if split not in SPLITS:
            raise ValueError(f"split == {split!r}, must be one of {list(SPLITS)}.")
        ids = self.ids[split]
        if ids.numel() <= T + 1:
            raise ValueError(f"the {split} split has {ids.numel()} characters, must be > T + 1 == {T + 1}; "
                             "raise max_chars.")
        gen = torch.Generator().manual_seed(int(seed))
        start = torch.randint(0, ids.numel() - T - 1, (n,), generator=gen)
        w = ids[start[:, None] + torch.arange(T + 1)].long()
        return w[:, :-1], w[:, 1:]

    def unigram_loss(self) -> float:
        """Cross-entropy (nats/char) of the ``test`` text under the ``train`` unigram (add-one)."""
        counts = torch.bincount(self.ids["train"].long(), minlength=len(VOCAB)).double() + 1.0
        logp = torch.log(counts / counts.sum())
        return float(-logp[self.ids["test"].long()].mean())


@functools.lru_cache(maxsize=4)
def _load(max_chars: int) -> dict:
    parts = {s: [] for s in SPLITS}
    total = 0
    for path in stdlib_files():
        if total >= max_chars:
            break
        try:
            text = path.read_text(encoding="utf-8")[: max_chars - total]
        except (OSError, UnicodeDecodeError):
            continue
        parts[_split_of(path)].append(encode(text))
        total += len(text)
    out = {s: torch.cat(v) if v else torch.zeros(0, dtype=torch.uint8) for s, v in parts.items()}
    if min(v.numel() for v in out.values()) == 0:
        raise ValueError(f"max_chars == {max_chars}: a split of the stdlib corpus is empty; raise max_chars.")
    return out


def loss_in_bits(nats: float) -> float:
    """Nats per character to bits per character."""
    return nats / math.log(2)
