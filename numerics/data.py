"""Data: synthetic teacher tasks with exact conditionals, digits, CIFAR, explicit splits.

* :class:`TeacherClassification` -- ``x ~ N(0, I)``, ``y | x ~ softmax(s * teacher(x))``
  with ``teacher`` a post-normalised residual MLP (THEORY §1). ``label_probs`` is exact.
* :class:`TeacherRegression` -- ``y = mu(x) + xi`` with ``mu`` a post-normalised
  residual MLP rescaled so that ``|mu(x)| <= mean_bound`` *for every x* (post-norm makes
  ``|mu(x)| <= ||a|| rho + |c|`` data-independent, THEORY §1) and ``xi`` Gaussian
  ``N(0, s^2)`` truncated to ``[-clip s, clip s]``; so ``|y| <= mean_bound + clip s``
  surely, which is the ``Y`` of the squared-loss constants ``B = (F + Y)^2``.
* :func:`population_risk` -- ``R(f) = E_x E_{y|x} l(f(x), y)`` with the ``y``-expectation
  exact and Monte Carlo over ``x`` (value and standard error).
* :func:`load_digits_split`, :func:`load_cifar`, :func:`split` -- real data with
  explicit split sizes; asking for more samples than exist is an error.

The teacher's depth and width are parameters, so "how deep is deep enough" has a known
answer.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np
import torch

from numerics._pickled_batch import UnsafePickleError, read_pickled_batch  # noqa: F401 -- UnsafePickleError: load_cifar's error
from plumbing.validation import InputError
from plumbing.validation import check_integer as _check_int
from plumbing.validation import check_number as _check_pos

__all__ = [
    "SAMPLE_CHUNK",
    "TeacherClassification",
    "TeacherRegression",
    "conditional_risk",
    "load_cifar",
    "load_digits_split",
    "population_risk",
    "population_risk_difference",
    "split",
    "truncated_normal_variance",
]


#: Rows per chunk of a streamed sample: a sample of any size is generated (and consumed) in
#: chunks of this many rows, so memory stays bounded and the draw does not depend on who
#: consumes it (the run and the validity study see the same ``S`` for the same seed).
SAMPLE_CHUNK = 1 << 16


def _build_teacher(d_in: int, n_out: int, depth: int, width: int, seed: int):
    from numerics.models import PostNormResMLP

    net = PostNormResMLP(d_in, width, depth, n_out, norm="rms", eps_n=0.0, seed=seed)
    for p in net.parameters():
        p.requires_grad_(False)
    return net.eval()


class _Teacher:
    """Shared sampling of ``x ~ N(0, I_{d_in})`` with a seeded generator."""

    def __init__(self, d_in: int, n_out: int, depth: int, width: int, seed: int):
        self.d_in = _check_int("d_in", d_in, 1)
        self.depth = _check_int("depth", depth, 0)
        self.width = _check_int("width", width, 1)
        self.seed = int(seed)
        self.net = _build_teacher(self.d_in, n_out, self.depth, self.width, self.seed)

    def sample_x(self, n: int, seed: int) -> torch.Tensor:
        """``x ~ N(0, I)``, shape ``(n, d_in)``, float64, deterministic in ``seed``."""
        gen = torch.Generator().manual_seed(int(seed))
        return torch.randn(_check_int("n", n, 1), self.d_in, generator=gen, dtype=torch.float64)

    def sample_x_chunks(self, n: int, seed: int, chunk: int = SAMPLE_CHUNK) -> Iterator[torch.Tensor]:
        """``x ~ N(0, I)`` in chunks of ``chunk`` rows (the last one shorter): a streamed sample."""
        gen = torch.Generator().manual_seed(int(seed))
        n = _check_int("n", n, 1)
        for start in range(0, n, chunk):
            yield torch.randn(min(chunk, n - start), self.d_in, generator=gen, dtype=torch.float64)

    def sample_chunks(self, n: int, seed: int, chunk: int = SAMPLE_CHUNK) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """``(x, y)`` in chunks: the streamed sample of ``seed`` (labels from its noise sub-stream).

        Concatenating the chunks gives the same sample whoever consumes it; memory holds one
        chunk at a time.
        """
        noise = self._generator(seed)
        for x in self.sample_x_chunks(n, seed, chunk):
            yield x, self._labels(x, noise)

    def _generator(self, seed: int) -> torch.Generator:
        # y-noise: a sub-stream derived from the sample's seed (SeedSequence), independent of
        # the x stream of the same seed and of every other role's stream (numerics.seeding)
        from numerics.seeding import noise_seed

        return torch.Generator().manual_seed(noise_seed(int(seed)))

    @torch.no_grad()
    def sample(self, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(x (n, d_in), y)`` in one piece (``x`` from ``seed``, ``y`` from its noise sub-stream)."""
        x = self.sample_x(n, seed)
        return x, self._labels(x, self._generator(seed))


class TeacherClassification(_Teacher):
    """``y | x ~ Categorical(softmax(logit_scale * teacher(x)))`` (exact conditionals).

    Args:
        d_in: input dimension; n_classes: ``C >= 2``; depth, width: the teacher's.
        logit_scale: temperature inverse (larger = less label noise).

    Example:
        >>> task = TeacherClassification(3, 4, depth=2, width=8, seed=0)
        >>> x, y = task.sample(5, seed=1)
        >>> tuple(x.shape), tuple(y.shape), bool(torch.allclose(task.label_probs(x).sum(1), torch.ones(5, dtype=torch.float64)))
        ((5, 3), (5,), True)
    """

    loss = "cross_entropy"

    def __init__(self, d_in: int, n_classes: int, depth: int, width: int, seed: int = 0,
                 logit_scale: float = 1.0):
        self.n_classes = _check_int("n_classes", n_classes, 2)
        self.logit_scale = _check_pos("logit_scale", logit_scale)
        super().__init__(d_in, self.n_classes, depth, width, seed)

    @torch.no_grad()
    def label_probs(self, x: torch.Tensor) -> torch.Tensor:
        """``p(y = k | x)``, shape ``(n, C)``, rows summing to 1."""
        return torch.softmax(self.logit_scale * self.net(x), dim=1)

    def soft_targets(self, x: torch.Tensor) -> torch.Tensor:
        """``p(. | x)`` (n, C): CE is linear in the target, so these give ``E_{y|x}`` exactly."""
        return self.label_probs(x)

    @torch.no_grad()
    def _labels(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``y (n,)`` drawn from :meth:`label_probs` with the noise generator ``gen``."""
        return torch.multinomial(self.label_probs(x), 1, generator=gen).squeeze(1)


def truncated_normal_variance(std: float, clip: float | None) -> float:
    """``Var(xi)`` for ``xi ~ N(0, s^2)`` truncated to ``[-c s, c s]``.

    ``s^2 (1 - 2 c phi(c) / (2 Phi(c) - 1))``; ``s^2`` when ``clip`` is None.

    Example:
        >>> round(truncated_normal_variance(1.0, 1.0), 6)
        0.291125
    """
    if clip is None:
        return std**2
    pdf = math.exp(-clip**2 / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(clip / math.sqrt(2))
    return std**2 * (1 - 2 * clip * pdf / mass)


class TeacherRegression(_Teacher):
    """``y = mu(x) + xi``, ``|mu(x)| <= mean_bound`` surely, ``xi`` truncated Gaussian.

    Args:
        d_in, depth, width, seed: the teacher's.
        noise_std: ``s`` of the Gaussian noise.
        noise_clip: truncation at ``+- clip * s`` (``None``: untruncated, then ``y`` is
            unbounded and squared-loss constants do not exist).
        mean_bound: the teacher's head is rescaled so ``||a|| rho + |c| = mean_bound``.
        head_bias: keep the teacher's output bias ``c`` (False: ``c = 0``, so the whole
            range ``mean_bound`` is spent on signal).

    Example:
        >>> task = TeacherRegression(3, depth=2, width=4, seed=0, noise_std=0.1, noise_clip=2.0)
        >>> x, y = task.sample(1000, seed=1)
        >>> bool(y.abs().max() <= task.target_bound), round(task.target_bound, 6)
        (True, 1.2)
    """

    loss = "squared"

    def __init__(self, d_in: int, depth: int, width: int, seed: int = 0, noise_std: float = 0.1,
                 noise_clip: float | None = 3.0, mean_bound: float = 1.0, head_bias: bool = True):
        self.noise_std = _check_pos("noise_std", noise_std, allow_zero=True)
        self.noise_clip = None if noise_clip is None else _check_pos("noise_clip", noise_clip)
        self.mean_bound = _check_pos("mean_bound", mean_bound)
        super().__init__(d_in, 1, depth, width, seed)
        head = self.net.head
        if not head_bias:
            with torch.no_grad():
                head.bias.zero_()
        scale = self.mean_bound / (float(head.weight.norm()) * self.net.head_input_bound() + float(head.bias.abs().max()))
        with torch.no_grad():
            head.weight.mul_(scale)
            head.bias.mul_(scale)

    @property
    def noise_variance(self) -> float:
        """Exact ``Var(xi)`` (truncated Gaussian)."""
        return truncated_normal_variance(self.noise_std, self.noise_clip)

    @property
    def target_bound(self) -> float:
        """``Y`` with ``|y| <= Y`` surely (``inf`` without truncation)."""
        return math.inf if self.noise_clip is None else self.mean_bound + self.noise_clip * self.noise_std

    @torch.no_grad()
    def mean(self, x: torch.Tensor) -> torch.Tensor:
        """``mu(x) = E[y | x]``, shape ``(n, 1)``."""
        return self.net(x)

    def soft_targets(self, x: torch.Tensor) -> torch.Tensor:
        """``mu(x)`` (n, 1): the squared loss against ``mu`` has the same gradient and Hessian
        in ``f`` as ``E_{y|x}`` of the squared loss (it differs by the constant ``Var(xi)``)."""
        return self.mean(x)

    @torch.no_grad()
    def _labels(self, x: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        """``y (n, 1) = mu(x) + s xi``; noise by inverse CDF on the truncated range."""
        n = x.shape[0]
        if self.noise_clip is None:
            xi = torch.randn(n, 1, generator=gen, dtype=torch.float64)
        else:
            lo = 0.5 * (1 + math.erf(-self.noise_clip / math.sqrt(2)))
            u = lo + (1 - 2 * lo) * torch.rand(n, 1, generator=gen, dtype=torch.float64)
            xi = torch.special.ndtri(u).clamp(-self.noise_clip, self.noise_clip)
        return self.mean(x) + self.noise_std * xi


@torch.no_grad()
def conditional_risk(task, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``E_{y|x} l(f(x), y)`` per sample, exactly, shape ``(n,)`` (THEORY §1 losses).

    * classification: ``-sum_k p_k(x) log softmax(f(x))_k``;
    * regression: ``||f(x) - mu(x)||^2 + Var(xi)`` (the noise has mean 0).
    """
    from numerics.empirical import EmpiricalClassification

    if isinstance(task, (TeacherClassification, EmpiricalClassification)):
        return -(task.label_probs(x) * torch.log_softmax(out, dim=1)).sum(dim=1)
    if isinstance(task, TeacherRegression):
        return ((out - task.mean(x)) ** 2).sum(dim=1) + task.noise_variance
    raise TypeError(f"task must be a TeacherClassification, TeacherRegression or EmpiricalClassification, "
                    f"got {type(task).__name__}")


def _mc_mean(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(values.size))


@torch.no_grad()
def population_risk(model, task, n_mc: int, seed: int, loss: str | None = None,
                    chunk: int = SAMPLE_CHUNK) -> tuple[float, float]:
    """``R(f) = E_x E_{y|x} l(f(x), y)``: exact over ``y``, Monte Carlo over ``x``.

    Returns:
        ``(value, stderr)`` with ``stderr = std / sqrt(n_mc)`` of the per-x conditional
        risks (a CLT standard error).

    Raises:
        ValueError: ``loss`` does not match the task's loss.
    """
    if loss is not None and loss != task.loss:
        raise ValueError(f"loss == {loss!r}, must be {task.loss!r} for {type(task).__name__}.")
    # x streamed in chunks: only the per-x risks (n_mc floats) are kept
    vals = torch.cat([conditional_risk(task, x, model(x))
                      for x in task.sample_x_chunks(_check_int("n_mc", n_mc, 2), seed, chunk)])
    return _mc_mean(vals.numpy())


@torch.no_grad()
def population_risk_difference(model_a, model_b, task, n_mc: int, seed: int,
                               chunk: int = SAMPLE_CHUNK) -> tuple[float, float]:
    """``R(f_a) - R(f_b)`` on paired ``x`` (common random numbers), ``(value, stderr)``."""
    vals = torch.cat([conditional_risk(task, x, model_a(x)) - conditional_risk(task, x, model_b(x))
                      for x in task.sample_x_chunks(_check_int("n_mc", n_mc, 2), seed, chunk)])
    return _mc_mean(vals.numpy())


def split(x, y, sizes: Mapping[str, int], seed: int = 0, name: str = "dataset") -> dict:
    """Disjoint random splits of explicit sizes, e.g. ``{"M": 500, "K": 500, "population": 700}``.

    Raises:
        ValueError: the sizes add up to more than the samples available (names them).

    Example:
        >>> parts = split(np.arange(10), np.arange(10), {"M": 4, "K": 3}, seed=0)
        >>> [len(parts[k][0]) for k in ("M", "K")]
        [4, 3]
        >>> split(np.arange(10), np.arange(10), {"M": 8, "K": 3})
        Traceback (most recent call last):
        ...
        ValueError: M + K == 11 exceeds the 10 samples of dataset; reduce the split sizes.
    """
    n = len(x)
    if len(y) != n:
        raise ValueError(f"expected x (n, ...) and y (n,) with the same n, got {len(x)} and {len(y)}")
    for key, size in sizes.items():
        _check_int(f"sizes[{key!r}]", size, 1)
    total = sum(sizes.values())
    if total > n:
        raise ValueError(f"{' + '.join(sizes)} == {total} exceeds the {n} samples of {name}; "
                         "reduce the split sizes.")
    perm = np.random.default_rng(seed).permutation(n)
    out, start = {}, 0
    for key, size in sizes.items():
        idx = perm[start:start + size]
        out[key] = (x[idx], y[idx])
        start += size
    return out


def load_digits_split(M: int, K: int, population: int, seed: int = 0, reference: int = 0) -> dict:
    """scikit-learn's digits (1797 x 64, scaled to [0, 1]) split into ``reference``, ``M``,
    ``K`` and ``population`` parts (tensors: x float64 ``(n, 64)``, y int64 ``(n,)``).

    Raises:
        ValueError: ``reference + M + K + population > 1797``.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.as_tensor(data.data / 16.0, dtype=torch.float64)
    y = torch.as_tensor(data.target, dtype=torch.int64)
    sizes = {"reference": reference, "M": M, "K": K, "population": population}
    sizes = {k: v for k, v in sizes.items() if not (k == "reference" and v == 0)}
    return split(x, y, sizes, seed=seed, name="digits")


_CIFAR_FILES = {
    10: ([f"data_batch_{i}" for i in range(1, 6)], ["test_batch"], b"labels"),
    100: (["train"], ["test"], b"fine_labels"),
}


def _read_batches(folder: Path, names: list[str], label_key: bytes):
    xs, ys = [], []
    for name in names:
        batch = read_pickled_batch(folder / name)
        if not isinstance(batch, dict) or b"data" not in batch or label_key not in batch:
            got = sorted(map(repr, batch))[:6] if isinstance(batch, dict) else type(batch).__name__
            raise InputError(str(folder / name), f"a CIFAR batch: a dict with keys b'data' and {label_key!r}", got)
        try:
            xs.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
            ys.append(np.asarray(batch[label_key], dtype=np.int64).reshape(-1))
        except (ValueError, TypeError, OverflowError) as exc:
            raise InputError(str(folder / name), "a CIFAR batch: b'data' of n x 3072 bytes and n integer labels",
                             f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
        if len(xs[-1]) != len(ys[-1]):
            raise InputError(str(folder / name), "as many labels as images", f"{len(ys[-1])} labels, {len(xs[-1])} images")
    x = torch.as_tensor(np.concatenate(xs).astype(np.float64) / 255.0)
    return x, torch.as_tensor(np.concatenate(ys))


def load_cifar(path: str | os.PathLike, which: int = 10) -> dict:
    """Load CIFAR-10/100 from a local folder of standard python-pickle batches.

    Args:
        path: folder holding ``data_batch_1..5`` + ``test_batch`` (CIFAR-10) or ``train`` +
            ``test`` (CIFAR-100), e.g. ``cifar-10-batches-py``.
        which: 10 or 100.

    Returns:
        ``{"train": (x, y), "test": (x, y)}``, ``x`` float64 in [0, 1] of shape
        ``(n, 3, 32, 32)``, ``y`` int64 ``(n,)`` (fine labels for CIFAR-100).

    Raises:
        ValueError: ``which`` not in {10, 100}.
        FileNotFoundError: a batch file is missing (the message lists the expected ones).
        numerics._pickled_batch.UnsafePickleError: a batch's pickle names a global no CIFAR batch holds (refused before it runs:
            the file and the global are named).
        InputError: a batch that is not a readable CIFAR batch (named, with the reason).

    The batches are read by a restricted unpickler (:func:`numerics._pickled_batch.read_pickled_batch`): a crafted file
    cannot run code.
    """
    if which not in _CIFAR_FILES:
        raise ValueError(f"which == {which!r}, must be one of [10, 100].")
    folder = Path(path)
    train_names, test_names, key = _CIFAR_FILES[which]
    missing = [n for n in train_names + test_names if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"CIFAR-{which} folder {str(folder)!r} lacks {missing}; expected "
                                f"{train_names + test_names} (python-pickle batches).")
    return {"train": _read_batches(folder, train_names, key), "test": _read_batches(folder, test_names, key)}
