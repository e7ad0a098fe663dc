"""A labelled dataset as a task: its empirical distribution (digits as data, THEORY §1).

:class:`EmpiricalClassification` draws ``x`` uniformly from the rows of a dataset (with
replacement) and ``y`` with it, so every sample -- the reference's, ``S``, ``T``, the
Monte-Carlo and probe samples -- is i.i.d. from one *known* distribution, and
``p(y | x)`` (the label frequencies among equal rows; one-hot unless a duplicated row
carries several labels) is exact. It has the interface of the teacher tasks
(``sample``, ``sample_chunks``, ``sample_x``, ``sample_x_chunks``, ``label_probs``,
``soft_targets``), so the run study certifies on real images without a Monte-Carlo
teacher.

**Choice**: the theorems hold for any data distribution; with this one, population
risks are expectations over the dataset's rows, and a certificate is a statement about
that distribution (the dataset resampled), not about unseen handwriting.
"""
from __future__ import annotations

from typing import Iterator

import torch

__all__ = ["ChunkedSampling", "EmpiricalClassification"]

SAMPLE_CHUNK = 1 << 16


class ChunkedSampling:
    """``sample_x_chunks``, ``sample`` and ``sample_x`` of a task from its ``sample_chunks(n, seed, chunk)``
    (a streamed ``(x, y)`` draw; the same ``seed`` gives the same rows in every form)."""

    def sample_x_chunks(self, n: int, seed: int, chunk: int = SAMPLE_CHUNK) -> Iterator[torch.Tensor]:
        """The ``x`` of ``sample_chunks`` (same ``seed``: same rows)."""
        for x, _ in self.sample_chunks(n, seed, chunk):
            yield x

    def sample(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x (n, d_in), y (n,))`` in one piece."""
        xs, ys = zip(*self.sample_chunks(n, seed))
        return torch.cat(xs), torch.cat(ys)

    def sample_x(self, n: int, seed: int) -> torch.Tensor:
        return self.sample(n, seed)[0]


class EmpiricalClassification(ChunkedSampling):
    """The empirical distribution of ``(x, y)`` rows as a classification task.

    Args:
        x: inputs ``(N, d_in)``; y: integer labels ``(N,)`` in ``[0, n_classes)``.

    Raises:
        ValueError: shapes do not match, or labels outside ``[0, n_classes)``.

    Example:
        >>> task = EmpiricalClassification(torch.eye(3, dtype=torch.float64), torch.tensor([0, 1, 1]), 2)
        >>> x, y = task.sample(4, seed=0)
        >>> bool(torch.equal(task.label_probs(x).argmax(1), y))
        True
    """

    loss = "cross_entropy"

    def __init__(self, x: torch.Tensor, y: torch.Tensor, n_classes: int | None = None):
        x, y = torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(y, dtype=torch.int64)
        if x.dim() != 2 or y.shape != (x.shape[0],) or x.shape[0] < 1:
            raise ValueError(f"expected x (N, d) and y (N,) with N >= 1, got {tuple(x.shape)} and {tuple(y.shape)}")
        self.n_classes = int(n_classes if n_classes is not None else y.max() + 1)
        if int(y.min()) < 0 or int(y.max()) >= self.n_classes:
            raise ValueError(f"labels must lie in [0, {self.n_classes}), got [{int(y.min())}, {int(y.max())}]")
        self.x, self.y, self.d_in = x, y, x.shape[1]
        rows, inverse = torch.unique(x, dim=0, return_inverse=True)
        probs = torch.zeros(rows.shape[0], self.n_classes, dtype=torch.float64)
        probs.index_add_(0, inverse, torch.nn.functional.one_hot(y, self.n_classes).double())
        self._probs = probs / probs.sum(dim=1, keepdim=True)
        # a vectorised row lookup: a generic projection separates distinct rows
        self._w = torch.randn(self.d_in, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        keys = rows @ self._w
        self._order = torch.argsort(keys)
        self._keys, self._rows = keys[self._order], rows[self._order]

    @classmethod
    def digits(cls) -> "EmpiricalClassification":
        """scikit-learn's 1797 digits (8x8 pixels scaled to ``[0, 1]``, 10 classes)."""
        from sklearn.datasets import load_digits

        data = load_digits()
        return cls(torch.as_tensor(data.data / 16.0), torch.as_tensor(data.target), 10)

    def _indices(self, n: int, gen: torch.Generator) -> torch.Tensor:
        return torch.randint(self.x.shape[0], (n,), generator=gen)

    def sample_chunks(self, n: int, seed: int,
                      chunk: int = SAMPLE_CHUNK) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``(x, y)`` rows drawn with replacement, in chunks (the stream of ``seed``)."""
        if n < 1:
            raise ValueError(f"n == {n}, must be an integer >= 1.")
        gen = torch.Generator().manual_seed(int(seed))
        for start in range(0, n, chunk):
            idx = self._indices(min(chunk, n - start), gen)
            yield self.x[idx], self.y[idx]

    @torch.no_grad()
    def label_probs(self, x: torch.Tensor) -> torch.Tensor:
        """``p(y = k | x)`` ``(n, C)`` for rows ``x`` of the dataset (exact).

        Raises:
            ValueError: a row of ``x`` is not a row of the dataset.
        """
        keys = x.double() @ self._w
        pos = torch.searchsorted(self._keys, keys).clamp(1, self._keys.numel() - 1)
        below = (keys - self._keys[pos - 1]).abs() <= (self._keys[pos] - keys).abs()
        pos = torch.where(below, pos - 1, pos).clamp(0, self._keys.numel() - 1)
        if not torch.equal(self._rows[pos], x.double()):
            raise ValueError("x holds rows that are not rows of the dataset (EmpiricalClassification).")
        return self._probs[self._order[pos]]

    def soft_targets(self, x: torch.Tensor) -> torch.Tensor:
        """``p(. | x)``: cross-entropy is linear in the target, so these give ``E_{y|x}`` exactly."""
        return self.label_probs(x)
