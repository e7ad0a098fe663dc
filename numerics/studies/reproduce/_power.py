"""Power of the MNIST-1D claims: minimum detectable effects from a pilot, and the statistics as pure functions.

Each claim's statistic is a function of per-unit values (seeds or cells); its interval is a
Student-t interval of a mean or a percentile bootstrap. For such an interval at level
``1 - level`` over ``n`` units with per-unit standard deviation ``sd``, the true distance from
the threshold that puts the interval on the claimed side with probability ``power`` is

    MDE(n) = (t_{1 - level/2, n-1} + t_{power, n-1}) sd / sqrt(n)

(the usual normal-theory approximation with Student quantiles; **Choice**: the bootstrap
statistics use the same formula with ``sd = sqrt(n_pilot) x`` their pilot bootstrap standard
error). ``sd`` comes from the pilot (:data:`numerics.studies.reproduce._suites.PILOT`, seeds
1000+, never a suite's seeds), so the MDE of a suite is known before it runs.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from bounds.fitting import percentile_interval

__all__ = ["CONFIDENCE", "FLAT_BOUND", "NO_EARLY_DROP", "POWER", "plateau_onset", "plateau_ratio", "plateau_ratio_linear",
           "plateau_tests",
           "bootstrap_interval", "kendall_tau_b", "mde", "required_n", "t_interval", "tau_interval"]

CONFIDENCE = 0.95
#: The power the sizes were planned for.
POWER = 0.8


def mde(sd: float, n: int, confidence: float = CONFIDENCE, power: float = POWER) -> float:
    """The minimum detectable distance from the threshold at ``n`` units (docstring of ``numerics.studies.reproduce._power``); ``inf`` for ``n < 2``.

    Raises:
        ValueError: ``sd`` negative or not finite.
    """
    from scipy.stats import t

    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd == {sd}, must be finite and >= 0.")
    if n < 2:
        return math.inf
    return float((t.ppf(0.5 + confidence / 2, n - 1) + t.ppf(power, n - 1)) * sd / math.sqrt(n))


def required_n(sd: float, effect: float, confidence: float = CONFIDENCE, power: float = POWER,
               n_max: int = 10_000) -> int | None:
    """The smallest ``n`` whose :func:`mde` is at most ``effect`` (None above ``n_max``)."""
    if not effect > 0:
        raise ValueError(f"effect == {effect}, must be > 0.")
    for n in range(2, n_max + 1):
        if mde(sd, n, confidence, power) <= effect:
            return n
    return None


def t_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the Student-t interval of the mean of ``values`` (``(-inf, inf)`` for one value)."""
    from scipy.stats import t

    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return float(v.mean()) if v.size else math.nan, -math.inf, math.inf
    half = t.ppf(0.5 + confidence / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def bootstrap_interval(values, stat, n_boot: int, seed: int = 0, confidence: float = CONFIDENCE):
    """``(stat(values), lo, hi, se)``: percentile bootstrap over the rows of ``values`` (vectorised draws)."""
    v = np.asarray(values, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, v.shape[0], size=(n_boot, v.shape[0]))
    boot = np.array([stat(v[i]) for i in idx])
    lo, hi = percentile_interval(boot, confidence)
    return float(stat(v)), lo, hi, float(boot.std(ddof=1))


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each row pair, vectorised: ``x, y (B, n)`` -> ``(B,)`` (0 where undefined).

    ``tau_b = sum_{i<j} s^x_ij s^y_ij / sqrt(sum s^x_ij^2 sum s^y_ij^2)``, ``s^x_ij = sign(x_i - x_j)``.
    """
    x, y = np.atleast_2d(x), np.atleast_2d(y)
    sx = np.sign(x[:, :, None] - x[:, None, :])
    sy = np.sign(y[:, :, None] - y[:, None, :])
    den = np.sqrt((sx * sx).sum((1, 2)) * (sy * sy).sum((1, 2)))
    num = (sx * sy).sum((1, 2))
    return np.divide(num, den, out=np.zeros_like(num, dtype=np.float64), where=den > 0)


def tau_interval(x, y, n_boot: int, seed: int = 0, confidence: float = CONFIDENCE):
    """Kendall's tau of ``(x, y)`` with its percentile bootstrap over pairs: ``(tau, lo, hi, se)``."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    idx = np.random.default_rng(seed).integers(0, x.size, size=(n_boot, x.size))
    boot = kendall_tau_b(x[idx], y[idx])
    lo, hi = percentile_interval(boot, confidence)
    return float(kendall_tau_b(x, y)[0]), lo, hi, float(boot.std(ddof=1))


def _slope(depths: np.ndarray, log_ag: np.ndarray) -> float:
    return float(np.polyfit(np.log(depths), log_ag, 1)[0])


#: ``plateau_ratio`` when AG_max does not drop early (no drop, no plateau): finite, so that
#: bootstrap percentiles stay defined.
NO_EARLY_DROP = 1e6


#: The plateau rule's bound on the upper end of the ``|late/early|`` interval (**Choice**).
FLAT_BOUND = 0.5


def plateau_ratio(depths, log_ag: np.ndarray) -> float:
    """``|late slope| / |early slope|`` of ``log AG_max`` against ``log D`` (first and last three
    depths, mean over the rows = seeds): small when AG_max drops and then flattens; a late rise
    counts like a late drop (neither is a plateau); :data:`NO_EARLY_DROP` when AG_max does not
    drop early."""
    d, m = np.asarray(depths, dtype=float), np.asarray(log_ag, dtype=float).mean(axis=0)
    early, late = _slope(d[:3], m[:3]), _slope(d[-3:], m[-3:])
    return min(abs(late) / -early, NO_EARLY_DROP) if early < 0 else NO_EARLY_DROP


def plateau_ratio_linear(depths, log_ag: np.ndarray) -> float:
    """``|late slope| / |early slope|`` of AG_max itself (the seeds' geometric mean, linear scale) against ``D``
    (first and last three depths): small when AG_max drops and then flattens, also towards zero -- a power law
    ``c D^-a`` has a constant log-log slope (:func:`plateau_ratio` about 1) but a late fall per unit depth that is
    ``(D_late / D_early)^-(a+1)`` of its early one; :data:`NO_EARLY_DROP` when AG_max does not drop early."""
    d, g = np.asarray(depths, dtype=float), np.exp(np.asarray(log_ag, dtype=float).mean(axis=0))
    early, late = float(np.polyfit(d[:3], g[:3], 1)[0]), float(np.polyfit(d[-3:], g[-3:], 1)[0])
    return min(abs(late) / -early, NO_EARLY_DROP) if early < 0 else NO_EARLY_DROP


def plateau_tests(D, log_ag, n_boot: int) -> dict:
    """The plateau rule's tests: early slope (first three depths) and the ``|late/early|`` ratios on the log scale
    (:func:`plateau_ratio`) and the linear scale (:func:`plateau_ratio_linear`), each bootstrapped over seeds;
    ``flat_upper``: the smaller of the two ratios' upper ends (the rule's bound is compared with it)."""
    def early(b):
        return float(np.polyfit(np.log(D[:3]), b.mean(0)[:3], 1)[0])

    e, elo, ehi, ese = bootstrap_interval(log_ag, early, n_boot)
    r, rlo, rhi, _ = bootstrap_interval(log_ag, lambda b: plateau_ratio(D, b), n_boot)
    q, qlo, qhi, _ = bootstrap_interval(log_ag, lambda b: plateau_ratio_linear(D, b), n_boot)
    return {"early_slope": [e, elo, ehi], "ratio": [r, rlo, rhi], "ratio_linear": [q, qlo, qhi], "early_se": ese,
            "tests": {"early_drop": ehi < 0, "early_rise": elo > 0, "flat": rhi < FLAT_BOUND,
                      "flat_linear": qhi < FLAT_BOUND, "flat_upper": float(min(rhi, qhi))}}


def plateau_onset(depths: Sequence[float], curve: Sequence[float], drop: float = 0.1) -> float | None:
    """The first depth, after a drop of more than ``drop`` from the first depth, from which the curve never
    again falls by more than ``drop`` (relative) below its value.

    **Choice**, fixed before the run: the change-point rule of the
    ``ag_max_plateau_test_loss`` claim, for the AG_max curve and for the depth where test
    loss stops improving alike (a 10% remaining drop); None when the curve never drops, or
    keeps falling to the last depth.
    """
    c = np.asarray(curve, dtype=float)
    for i, d in enumerate(depths[:-1]):
        if c[i] < (1 - drop) * c[0] and c[i + 1:].min() >= (1 - drop) * c[i]:
            return float(d)
    return None
