"""Scaling-law fits ``L(x) = E + A x^{-alpha}`` with percentile-bootstrap intervals (THEORY §7).

The numeric side of Appendix M fits the decay exponent ``alpha`` of the signal ``s(D)``
and the exponent of the excess risk ``R(D) - R_inf``. The fit follows careful
scaling-law work (Hoffmann et al. 2022, arXiv 2203.15556, App. D.2; Besiroglu et al.
2024, arXiv 2404.10102):

* log-sum-exp parametrisation ``log L(x) = LSE(a - alpha log x, e)`` with ``A = exp(a)``,
  ``E = exp(e)`` (positivity for free, well-conditioned in ``log`` space);
* Huber loss on the log residuals ``log y - log L(x)`` with ``delta = 1e-3`` (robust to a
  few outlying cells);
* L-BFGS-B (analytic gradient) from a grid of starting points, the best optimum kept;
* percentile-bootstrap intervals: the points are resampled with replacement (pairs
  bootstrap) and every resample is refitted from the full-data optimum (**Choice**:
  warm start instead of the whole grid, so that thousands of refits stay cheap; the
  full-data fit already chose the basin).

``offset=False`` fits the pure power law ``c x^{-alpha}`` (``E = 0``), the form of
Assumption G for ``s(D)``. Everything is numpy/scipy (no torch).
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Sequence

import numpy as np

__all__ = ["HUBER_DELTA", "BootstrapFit", "ScalingFit", "bootstrap_indices", "bootstrap_samples",
           "bootstrap_scaling_law", "fit_scaling_law", "huber", "percentile_interval", "refit"]

#: Huber threshold on log residuals (Hoffmann et al. 2022).
HUBER_DELTA = 1e-3
_ALPHA_STARTS = (0.1, 0.5, 1.0, 2.0, 3.0)
_E_FRACTIONS = (1e-3, 0.3, 0.9)   # starting E as a fraction of min(y)
_OPTIONS = {"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-12, "maxcor": 20}


@dataclasses.dataclass(frozen=True)
class ScalingFit:
    """A fit of ``L(x) = E + A x^{-alpha}`` (``E = 0`` when ``offset`` is False).

    Attributes:
        E, A, alpha: the parameters.
        offset: whether ``E`` was fitted.
        loss: the Huber objective at the optimum (sum over points).
        converged: L-BFGS-B reported success.
        n_points: number of points fitted.
    """

    E: float
    A: float
    alpha: float
    offset: bool
    loss: float
    converged: bool
    n_points: int

    def predict(self, x) -> np.ndarray:
        """``E + A x^{-alpha}`` at ``x`` (any shape)."""
        return self.E + self.A * np.asarray(x, dtype=np.float64) ** -self.alpha

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def huber(r: np.ndarray, delta: float = HUBER_DELTA) -> np.ndarray:
    """Huber loss ``r^2/2`` for ``|r| <= delta``, ``delta (|r| - delta/2)`` beyond.

    Example:
        >>> [round(v, 12) for v in huber(np.array([0.0, 1e-3, 1.0])).tolist()]
        [0.0, 5e-07, 0.0009995]
    """
    a = np.abs(r)
    return np.where(a <= delta, 0.5 * r * r, delta * (a - 0.5 * delta))


def _objective(theta: np.ndarray, logx: np.ndarray, logy: np.ndarray, offset: bool, delta: float):
    """Huber objective and its gradient in ``theta = (a, alpha[, e])``."""
    t1 = theta[0] - theta[1] * logx
    if offset:
        top = np.maximum(t1, theta[2])
        pred = top + np.log(np.exp(t1 - top) + np.exp(theta[2] - top))
        w = np.exp(t1 - pred)                       # d pred / d a (softmax weight)
    else:
        pred, w = t1, np.ones_like(t1)
    r = logy - pred
    psi = np.clip(r, -delta, delta)                 # d huber / d r
    grad = [-np.sum(psi * w), np.sum(psi * w * logx)]
    if offset:
        grad.append(-np.sum(psi * (1.0 - w)))
    return float(np.sum(huber(r, delta))), np.array(grad)


def _check_xy(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64).ravel(), np.asarray(y, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"expected x and y of the same length, got {x.shape} and {y.shape}.")
    if np.unique(x).size < 3:
        raise ValueError(f"expected at least 3 distinct x values, got {np.unique(x).size}.")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(x > 0) and np.all(y > 0)):
        raise ValueError("x and y must be finite and > 0 for a log-space fit.")
    return x, y


def _starts(x: np.ndarray, y: np.ndarray, offset: bool) -> list[np.ndarray]:
    """A grid of starting points adapted to the data's scale (``a`` matches the first point)."""
    x0, y0 = x.min(), y[x == x.min()].mean()
    out = []
    for alpha0, frac in itertools.product(_ALPHA_STARTS, _E_FRACTIONS if offset else (0.0,)):
        E0 = frac * y.min()
        a0 = np.log(max(y0 - E0, 1e-3 * y0)) + alpha0 * np.log(x0)
        out.append(np.array([a0, alpha0, np.log(E0)] if offset else [a0, alpha0]))
    return out


def _bounds(offset: bool):
    return [(None, None), (0.0, 20.0), (None, None)] if offset else [(None, None), (-20.0, 20.0)]


def _minimise(theta0, logx, logy, offset, delta):
    from scipy.optimize import minimize

    return minimize(_objective, theta0, args=(logx, logy, offset, delta), jac=True, method="L-BFGS-B",
                    bounds=_bounds(offset), options=_OPTIONS)


def _to_fit(res, offset: bool, n: int) -> ScalingFit:
    th = res.x
    return ScalingFit(E=float(np.exp(th[2])) if offset else 0.0, A=float(np.exp(th[0])), alpha=float(th[1]),
                      offset=offset, loss=float(res.fun), converged=bool(res.success), n_points=n)


def fit_scaling_law(x: Sequence[float], y: Sequence[float], *, offset: bool = True,
                    delta: float = HUBER_DELTA) -> ScalingFit:
    """Fit ``y ≈ E + A x^{-alpha}`` (Huber on log residuals, L-BFGS-B from a grid of starts).

    Args:
        x: positive abscissae ``(n,)`` (depths, data sizes); at least 3 distinct values.
        y: positive observations ``(n,)`` (repeated ``x`` allowed: one point per seed).
        offset: fit the irreducible term ``E`` (else ``E = 0``, a pure power law).
        delta: Huber threshold on log residuals.

    Returns:
        The :class:`ScalingFit` with the smallest objective over the starts.

    Raises:
        ValueError: shapes differ, fewer than 3 distinct ``x``, or non-positive values.

    Example:
        >>> x = np.array([1.0, 2, 4, 8, 16])
        >>> fit = fit_scaling_law(x, 0.5 + 2.0 * x**-1.5)
        >>> round(fit.E, 6), round(fit.A, 6), round(fit.alpha, 6)
        (0.5, 2.0, 1.5)
    """
    x, y = _check_xy(x, y)
    logx, logy = np.log(x), np.log(y)
    best = min((_minimise(t, logx, logy, offset, delta) for t in _starts(x, y, offset)), key=lambda r: r.fun)
    return _to_fit(best, offset, x.size)


def refit(x: np.ndarray, y: np.ndarray, start: ScalingFit, *, delta: float = HUBER_DELTA) -> ScalingFit:
    """Refit from ``start``'s optimum (one L-BFGS-B run): the bootstrap's warm start."""
    x, y = _check_xy(x, y)
    th = [np.log(start.A), start.alpha] + ([np.log(max(start.E, 1e-300))] if start.offset else [])
    return _to_fit(_minimise(np.array(th), np.log(x), np.log(y), start.offset, delta), start.offset, x.size)


def bootstrap_indices(x: Sequence[float], n_boot: int, seed: int = 0) -> np.ndarray:
    """``(n_boot, n)`` indices of pairs-bootstrap resamples of the points ``x``.

    All points are resampled together with replacement (cells of a sweep are
    independent draws); a resample with fewer than 3 distinct ``x`` cannot be fitted and
    is redrawn. (**Choice**: pairs rather than resampling within the seeds of each
    ``x``: with 3 seeds per depth the within-group bootstrap underestimates the variance
    by the factor 2/3, and its intervals undercover.)

    Example:
        >>> idx = bootstrap_indices([1, 1, 2, 2, 3, 3], 4, seed=0)
        >>> idx.shape, bool(np.all((idx >= 0) & (idx < 6)))
        ((4, 6), True)
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if np.unique(x).size < 3:
        raise ValueError(f"expected at least 3 distinct x values, got {np.unique(x).size}.")
    rng = np.random.default_rng(seed)
    out = rng.integers(0, x.size, size=(n_boot, x.size))
    for i in range(n_boot):
        while np.unique(x[out[i]]).size < 3:
            out[i] = rng.integers(0, x.size, size=x.size)
    return out


@dataclasses.dataclass(frozen=True)
class BootstrapFit:
    """A fit and its percentile-bootstrap intervals.

    Attributes:
        fit: the full-data :class:`ScalingFit`.
        confidence: nominal two-sided level of the intervals.
        alpha_interval, A_interval, E_interval: percentile intervals ``(lo, hi)``.
        samples: ``(n_boot, 3)`` bootstrap replicates of ``(E, A, alpha)``.
    """

    fit: ScalingFit
    confidence: float
    alpha_interval: tuple[float, float]
    A_interval: tuple[float, float]
    E_interval: tuple[float, float]
    samples: np.ndarray

    def to_dict(self) -> dict:
        return {"fit": self.fit.to_dict(), "confidence": self.confidence, "alpha_interval": list(self.alpha_interval),
                "A_interval": list(self.A_interval), "E_interval": list(self.E_interval),
                "n_boot": int(self.samples.shape[0])}


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """The ``((1-c)/2, (1+c)/2)`` quantiles of ``samples``."""
    lo, hi = np.quantile(np.asarray(samples, dtype=np.float64), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def bootstrap_samples(x, y, indices: np.ndarray, start: ScalingFit, *, delta: float = HUBER_DELTA) -> np.ndarray:
    """``(n_boot, 3)`` refits ``(E, A, alpha)`` of ``(x[idx], y[idx])`` for each row of ``indices``."""
    x, y = _check_xy(x, y)
    out = np.empty((indices.shape[0], 3))
    for i, idx in enumerate(indices):
        f = refit(x[idx], y[idx], start, delta=delta)
        out[i] = (f.E, f.A, f.alpha)
    return out


def bootstrap_scaling_law(x: Sequence[float], y: Sequence[float], *, offset: bool = True, n_boot: int = 1000,
                          confidence: float = 0.95, seed: int = 0, delta: float = HUBER_DELTA) -> BootstrapFit:
    """:func:`fit_scaling_law` with percentile-bootstrap intervals on ``E``, ``A``, ``alpha``.

    Args:
        x, y: as for :func:`fit_scaling_law`.
        offset: fit ``E`` (else a pure power law).
        n_boot: number of resamples (>= 20).
        confidence: two-sided level, in (0, 1).
        seed: seed of the resampling.

    Raises:
        ValueError: bad ``n_boot`` or ``confidence``, or bad data (see :func:`fit_scaling_law`).

    Example:
        >>> x = np.repeat([1.0, 2, 4, 8], 3)
        >>> noise = np.exp(np.random.default_rng(0).normal(0, 0.02, x.size))
        >>> bf = bootstrap_scaling_law(x, 3 * x**-0.8 * noise, offset=False, n_boot=200)
        >>> lo, hi = bf.alpha_interval
        >>> bool(lo < 0.8 < hi), bf.samples.shape
        (True, (200, 3))
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 20:
        raise ValueError(f"n_boot == {n_boot!r}, must be an integer >= 20.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence == {confidence!r}, must be in (0, 1).")
    fit = fit_scaling_law(x, y, offset=offset, delta=delta)
    samples = bootstrap_samples(x, y, bootstrap_indices(x, n_boot, seed), fit, delta=delta)
    E_i, A_i, a_i = (percentile_interval(samples[:, j], confidence) for j in range(3))
    return BootstrapFit(fit, confidence, a_i, A_i, E_i, samples)
