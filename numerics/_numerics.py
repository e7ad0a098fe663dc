"""Numerical-safety helpers shared by ``numerics/`` (one place, as optax ``numerics``).

Safe norms, eigenvalue floors, exact spectral norms and the per-sample losses of
THEORY §1 (``l(f(x), y)``: cross-entropy, or squared loss ``||f - y||^2``).
"""
from __future__ import annotations

import sys

import torch
import torch.nn.functional as F

from plumbing.validation import check_positive, check_probability  # noqa: F401  (one home: plumbing)

LOSSES = ("cross_entropy", "squared")


def check_loss(loss: str) -> str:
    """Validate a loss name.

    Raises:
        ValueError: ``loss`` is not one of :data:`LOSSES`.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss == {loss!r}, must be one of {list(LOSSES)}.")
    return loss


def per_sample_loss(logits: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Per-sample loss ``l(f(x_i), y_i)`` (THEORY §1), shape ``(n,)``.

    * ``cross_entropy``: ``y`` integer labels ``(n,)`` or probability rows ``(n, C)``
      (soft targets: since CE is linear in the target, the gradient is then the
      conditional expectation over ``y`` -- used for ``m_bar``, THEORY §8); for sequence
      logits ``(n, T, C)`` and labels ``(n, T)``, the mean over the ``T`` positions;
    * ``squared``: ``||f - y||^2`` with ``y`` of shape ``(n, C)`` or ``(n,)`` for ``C = 1``
      (``L_l = 2(F + Y)`` and ``B = (F + Y)^2`` of THEORY §1 refer to this form).

    Args:
        logits: ``(n, C)``.
        y: targets as above.
        loss: ``"cross_entropy"``, ``"squared"``, or a callable ``loss(logits, y) -> (n,)``
            (a user's per-sample loss, :mod:`depthcert.api`; called as is).

    Example:
        >>> per_sample_loss(torch.zeros(2, 1), torch.ones(2), "squared")
        tensor([1., 1.])
    """
    if callable(loss):
        return loss(logits, y)
    check_loss(loss)
    if loss == "cross_entropy" and logits.dim() == 3:
        # sequence models: logits (n, T, C), labels (n, T) or probabilities (n, T, C); the
        # loss of one sample (a sequence) is the mean over its T positions.
        flat_y = y.reshape(-1) if y.dim() == 2 else y.reshape(-1, y.shape[-1])
        per_token = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), flat_y, reduction="none")
        return per_token.reshape(logits.shape[0], -1).mean(dim=1)
    if loss == "cross_entropy":
        return F.cross_entropy(logits, y, reduction="none")
    target = y.reshape(logits.shape) if y.dim() == 1 else y
    return (logits - target).square().sum(dim=1)


def safe_norm(x: torch.Tensor, dim=None, floor: float = 0.0) -> torch.Tensor:
    """``max(||x||, floor)`` with a gradient that is finite at 0 (optax ``safe_norm``)."""
    sq = (x * x).sum() if dim is None else (x * x).sum(dim=dim)
    tiny = torch.finfo(x.dtype).tiny
    return torch.clamp(sq, min=tiny).sqrt().clamp(min=floor)


def spectral_norm(w: torch.Tensor) -> float:
    """Exact ``||W||_2`` (largest singular value, by SVD), 0 for an empty matrix."""
    if w.numel() == 0:
        return 0.0
    return float(torch.linalg.matrix_norm(w.detach().reshape(w.shape[0], -1), ord=2))


def psd_eig(sigma: torch.Tensor, rel_floor: float = 1e-10) -> tuple[torch.Tensor, torch.Tensor]:
    """``(evecs, inv)``: the eigenvectors of a symmetric PSD matrix and its pseudo-inverse's
    eigenvalues (``1/lambda``, 0 for eigenvalues below ``rel_floor * max``): ``sigma^+ = evecs diag(inv) evecs^T``.

    Example:
        >>> evecs, inv = psd_eig(torch.diag(torch.tensor([4.0, 0.0], dtype=torch.float64)))
        >>> sorted(inv.tolist())
        [0.0, 0.25]
    """
    evals, evecs = torch.linalg.eigh(sigma)
    cut = rel_floor * evals.abs().max().clamp(min=torch.finfo(sigma.dtype).tiny)
    inv = torch.where(evals > cut, 1.0 / evals.clamp(min=cut), torch.zeros_like(evals))
    return evecs, inv


def psd_pinv(sigma: torch.Tensor, rel_floor: float = 1e-10, eig: tuple | None = None) -> torch.Tensor:
    """Pseudo-inverse of a symmetric PSD matrix, eigenvalues below ``rel_floor * max`` -> 0 (``eig``:
    :func:`psd_eig` of ``sigma`` if already computed: the same numbers without a second decomposition)."""
    evecs, inv = psd_eig(sigma, rel_floor) if eig is None else eig
    return (evecs * inv) @ evecs.T


def sure_bound(observed: float, b: float | None, what: str = "max_i ||X_i||") -> tuple[float, bool]:
    """``(bound, from_data)``: the data-free bound ``b`` when given (checked against the sample's
    largest norm ``observed``, relative tolerance 1e-9 for rounding), else ``observed`` itself.

    Raises:
        ValueError: ``b < observed`` (a bound the sample breaks is no bound).
    """
    if b is None:
        return float(observed), True
    if observed > b * (1 + 1e-9):
        raise ValueError(f"b == {b!r}, must be >= {what} == {observed!r}.")
    return float(b), False


_BYTE_BITS: dict = {}


def random_bits(count: int, generator: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """``count`` i.i.d. fair bits in ``{0, 1}`` as ``dtype``, shape ``(count,)``.

    Fast path for sign matrices: ``randint(0, 2^62)`` is exactly uniform (``2^64`` is a
    multiple of ``2^62``), so each draw carries 56 i.i.d. fair bits in its 7 low-order
    bytes; the bytes are expanded by a ``(256, 8)`` lookup table. About 50x fewer random
    draws than one ``randint(0, 2)`` per bit.
    """
    key = dtype
    if key not in _BYTE_BITS:
        _BYTE_BITS[key] = ((torch.arange(256)[:, None] >> torch.arange(8)) & 1).to(dtype)
    n_bytes = -(-count // 8)
    n_int = -(-n_bytes // 7)
    draws = torch.randint(0, 2**62, (n_int,), generator=generator)
    low = slice(0, 7) if sys.byteorder == "little" else slice(1, 8)
    data = draws.view(torch.uint8).reshape(n_int, 8)[:, low].reshape(-1)[:n_bytes]
    return torch.index_select(_BYTE_BITS[key], 0, data.int()).reshape(-1)[:count]


class MeanVar:
    """Streaming column means, unbiased variances (``ddof = 1``) and standard errors, float64.

    Sums are shifted by the first chunk's mean (numerically stable for any chunking).

    Example:
        >>> mv = MeanVar()
        >>> mv.add(torch.tensor([[1.0], [2.0]])); mv.add(torch.tensor([[3.0], [6.0]]))
        >>> float(mv.variance()[0])   # var([1, 2, 3, 6], ddof=1)
        4.666666666666667
    """

    def __init__(self):
        self.n, self.shift, self.s1, self.s2 = 0, None, 0.0, 0.0

    def add(self, v: torch.Tensor) -> None:
        """Add rows ``v`` of shape ``(n, columns)``."""
        v = v.double()
        if self.shift is None:
            self.shift = v.mean(dim=0)
        w = v - self.shift
        self.n += v.shape[0]
        self.s1 = self.s1 + w.sum(dim=0)
        self.s2 = self.s2 + (w * w).sum(dim=0)

    def variance(self) -> torch.Tensor:
        """Unbiased sample variance of each column (needs two rows)."""
        if self.n < 2:
            raise ValueError(f"n == {self.n}, must be >= 2 rows for an unbiased variance.")
        mean_w = self.s1 / self.n
        return ((self.s2 - self.n * mean_w**2) / (self.n - 1)).clamp(min=0)

    def result(self):
        """``(means, standard errors)`` as numpy arrays."""
        return (self.shift + self.s1 / self.n).numpy(), (self.variance() / self.n).sqrt().numpy()
