"""Verdicts a user can act on (Paper B, THEORY §8): improvable, saturated within ``eps``, undetermined.

At each of the ``K`` sites, at level ``level / K`` (Bonferroni), the first-order gain of the
protocol block is Theorem 1's ``g = ||G||^2 / (2 beta)`` (the gain of the step ``-G / beta``;
``beta`` the curvature along ``-G`` measured on the curvature sample, a plug-in):

* **improvable** -- some site's betting test rejects ``G = 0``; its level-``(1 - level/K)``
  lower confidence bound ``LCB(||G||)`` gives the certified gain ``LCB^2 / (2 beta)`` (> 0).
* **saturated within eps** -- at every site the upper confidence bound on the gain,
  ``UCB(||G||)^2 / (2 beta)``, is below ``eps``. **Choice** (ours): the UCB is Chebyshev's
  inequality in the Hilbert space of ``(d, r)`` matrices: ``E||G_hat - G||^2 = tr Cov(X)/n <=
  E||X||^2 / n =: sigma^2 / n``, so Markov's inequality gives ``P(||G_hat - G|| >= sqrt(sigma^2
  / (n delta))) <= delta`` for every distribution with finite second moment (no bound ``b`` on
  ``||X||`` needed); ``sigma^2`` is the probe's ``mean ||X_i||^2`` (a plug-in, as the betting
  test's ``b``). Saturation is checked first: a certified gain below the user's tolerance is
  still "saturated within eps".
* **undetermined** -- neither; ``n_needed`` is the probe size that would decide at the
  measured effect: the smaller of (a) the size at which a site's betting wealth, growing at
  its *observed* mean rate ``log W / n_bet`` per sample, reaches ``ln(K/level)`` and (b) the
  size at which every site's UCB, with the same ``G_hat`` and ``sigma^2``, drops below ``eps``.
  Both exceed the probe size used by construction (a planning number, not a guarantee).

The suggested insertion's immediate gain (:func:`t_interval`): once the probe has fixed the
site and ``G_f`` and the step sample has fixed ``beta_f`` and the step, the jumpboard block
``V`` is a fixed function, and its per-sample gains ``D_i = l_i(f) - l_i(f + h_V)`` on the
gain sample (independent of both) are i.i.d. with mean ``Delta(V)``, the immediate gain on
independent data. **Choice** (ours): Student's ``t`` interval ``D_bar +- t_{n-1, 1-level/2}
s sqrt(1/n + 1/m)`` (``m = inf``: the population gain; ``m`` finite: the mean gain over ``m``
fresh samples, since ``Var(D_bar - D_bar_m) = sigma^2 (1/n + 1/m)``); exact for Gaussian
``D_i``, asymptotic otherwise (no bound on ``D_i`` is needed).
"""
from __future__ import annotations

import math

__all__ = ["DEFAULT_EPS", "RANKED_BY", "chebyshev_radius", "gain_ucb", "n_to_reject", "n_to_saturate", "t_interval", "verdict"]

#: **Choice**: the default tolerance on the first-order gain (loss units, mean per sample).
DEFAULT_EPS = 1e-3


def chebyshev_radius(sigma2: float, n: int, delta: float) -> float:
    """``sqrt(sigma^2 / (n delta))``: ``P(||G_hat - G|| >= radius) <= delta`` when ``E||X - G||^2 <= sigma^2``.

    Example:
        >>> chebyshev_radius(4.0, 100, 0.04)
        1.0
    """
    return math.sqrt(max(sigma2, 0.0) / (n * delta))


def t_interval(mean: float, sd: float, n: int, level: float, n_eval: int | None = None) -> tuple[float, float]:
    """Two-sided level-``(1 - level)`` Student-``t`` interval for the population mean (``n_eval``
    None) or for the mean of ``n_eval`` independent fresh samples (docstring of ``numerics.user_network._verdict``).

    Args:
        mean, sd: the sample mean and standard deviation (``ddof = 1``) of ``n >= 2`` values.
        level: in ``(0, 1)``. n_eval: None or an int ``>= 1``.

    Raises:
        ValueError: ``n < 2``, ``level`` outside ``(0, 1)`` or a bad ``n_eval`` (named).

    Example:
        >>> lo, hi = t_interval(1.0, 2.0, 101, 0.05)
        >>> round(lo, 4), round(hi, 4)
        (0.6052, 1.3948)
    """
    from scipy.stats import t as student_t

    if not (isinstance(n, int) and n >= 2):
        raise ValueError(f"n == {n!r}, must be an int >= 2.")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level == {level!r}, must be in (0, 1).")
    if n_eval is not None and not (isinstance(n_eval, int) and n_eval >= 1):
        raise ValueError(f"n_eval == {n_eval!r}, must be None or an int >= 1.")
    spread = 1.0 / n + (0.0 if n_eval is None else 1.0 / n_eval)
    half = float(student_t.ppf(1.0 - level / 2.0, n - 1)) * sd * math.sqrt(spread)
    return mean - half, mean + half


def gain_ucb(g_norm: float, sigma2: float, n: int, delta: float, beta: float | None) -> float:
    """``(||G_hat|| + radius)^2 / (2 beta)``: level-``(1 - delta)`` upper bound on ``||G||^2 / (2 beta)``."""
    ucb = g_norm + chebyshev_radius(sigma2, n, delta)
    if ucb == 0.0:
        return 0.0
    return ucb**2 / (2 * beta) if beta else math.inf


def n_to_saturate(g_norm: float, sigma2: float, delta: float, beta: float | None, eps: float) -> int | None:
    """Smallest ``n`` with ``gain_ucb < eps`` at the same ``G_hat`` and ``sigma^2`` (None: never)."""
    if not beta:
        return None
    room = math.sqrt(2 * beta * eps) - g_norm
    if not room > 0:
        return None
    return math.floor(sigma2 / (delta * room**2)) + 1


def n_to_reject(log_wealth: float, n_bet: int, chunk: int, level: float) -> int | None:
    """Probe size at which the wealth, growing at its observed rate ``log W / n_bet``, reaches ``ln(1/level)``.

    None if the observed rate is not positive (no rejection in sight) or the test already rejected.
    """
    target = math.log(1.0 / level)
    if log_wealth >= target or not n_bet or not log_wealth > 0:
        return None
    return chunk + math.ceil(target * n_bet / log_wealth)


#: the score ``best_site`` is ranked by by default (``SaturationReport.ranked_by``; ``dc.saturation(rank_by=...)``
#: picks another). **Choice**: the pick of the rule ``numerics.user_network._ranking.RANKING_RULE`` on the stored studies'
#: pooled table (``docs/predicted/pooled.json``, ``benchmarks/study_predicted.py --pool docs/predicted``);
#: ``tests/api/test_ranking.py`` fails when the stored table's pick differs. Whether it predicts the realised gains
#: on a user's network: ``dc.calibration`` and ``SaturationReport.with_calibration``.
RANKED_BY = "predicted_gain"


def verdict(records: list[dict], eps: float, rank_by: str = RANKED_BY) -> dict:
    """Model verdict from the per-site records (each with ``reject``, ``gain_ucb``, ``certified_gain``,
    ``predicted_gain``, ``n_to_reject``, ``n_to_saturate``); ``best_site``: the largest ``rank_by`` among the
    rejecting sites, else among all (a None score ranks below every value; the first of equals)."""
    saturated = all(r["gain_ucb"] < eps for r in records)
    rejecting = [r for r in records if r["reject"]]
    best = max(rejecting or records, key=lambda r: -math.inf if r[rank_by] is None else r[rank_by])
    kind = "saturated" if saturated else ("improvable" if rejecting else "undetermined")
    n_rej = [r["n_to_reject"] for r in records if r["n_to_reject"] is not None]
    n_sat = [r["n_to_saturate"] for r in records]
    n_sat = max(n_sat) if n_sat and None not in n_sat else None
    options = [v for v in (min(n_rej) if n_rej else None, n_sat) if v is not None]
    return {"verdict": kind, "saturated": saturated, "best_site": best["site"], "ranked_by": rank_by,
            "predicted_gain": best["predicted_gain"],
            "certified_gain": max((r["certified_gain"] for r in rejecting), default=0.0),
            "gain_ucb": max(r["gain_ucb"] for r in records),
            "n_needed": min(options) if kind == "undetermined" and options else None,
            "n_needed_improvable": min(n_rej) if n_rej else None, "n_needed_saturated": n_sat}
