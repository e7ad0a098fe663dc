"""Statistics of a validity study, from its stored records only (STYLE: Studies).

Every rate comes with a Clopper--Pearson interval at the stated test level, and "observed
rate significantly above the stated probability" is a one-sided exact test: under the
guarantee the number of failures ``X`` is a sum of independent Bernoulli variables with
probabilities at most the stated ``p_i`` of each draw, so ``P(X >= x)`` under the
Poisson-binomial law of the ``p_i`` (the binomial law when they are equal) is a valid
p-value; the event is *significant* when it is below the level.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

__all__ = ["clopper_pearson", "exceedance_p_value", "rate_entry", "slack_summary"]

QUANTILES = (0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0)


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Exact two-sided ``1 - level`` interval for a binomial rate with ``k`` successes in ``n``.

    Example:
        >>> lo, hi = clopper_pearson(11, 60, 0.05)
        >>> round(lo, 4), round(hi, 4)
        (0.0952, 0.3044)
    """
    from scipy.stats import beta

    if not (0 <= k <= n and n >= 1):
        raise ValueError(f"(k, n) == {(k, n)!r}, must satisfy 0 <= k <= n and n >= 1.")
    lo = 0.0 if k == 0 else float(beta.ppf(level / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - level / 2, k + 1, n - k))
    return lo, hi


def exceedance_p_value(k: int, stated: Sequence[float]) -> float:
    """``P(X >= k)`` for ``X`` a sum of independent Bernoulli(``stated_i``) (Poisson-binomial, exact).

    Example:
        >>> round(exceedance_p_value(3, [0.05] * 20), 6)   # = binom.sf(2, 20, 0.05)
        0.075484
    """
    p = np.clip(np.asarray(stated, dtype=np.float64), 0.0, 1.0)
    if k <= 0:
        return 1.0
    if k > p.size:
        return 0.0
    dist = np.zeros(p.size + 1)
    dist[0] = 1.0
    for pi in p:    # O(n^2) convolution, n = number of draws
        dist[1:] = dist[1:] * (1 - pi) + dist[:-1] * pi
        dist[0] *= 1 - pi
    return float(min(1.0, dist[k:].sum()))


def rate_entry(failed: Sequence[bool], stated: Sequence[float], level: float) -> dict:
    """``failures``, ``draws``, ``rate``, ``interval``, ``stated`` (mean), ``p_value``, ``significant``.

    With no draw (nothing was claimed), rate and interval are ``None`` and nothing is significant.
    """
    k, n = int(np.sum(failed)), len(failed)
    if n == 0:
        return {"failures": 0, "draws": 0, "rate": None, "interval": None, "stated": None, "stated_max": None,
                "p_value": 1.0, "significant": False}
    lo, hi = clopper_pearson(k, n, level)
    p = exceedance_p_value(k, stated)
    return {"failures": k, "draws": n, "rate": k / n, "interval": [lo, hi],
            "stated": float(np.mean(np.clip(stated, 0, 1))), "stated_max": float(np.max(np.clip(stated, 0, 1))),
            "p_value": p, "significant": bool(p < level)}


def slack_summary(values: Sequence[float]) -> dict:
    """Quantiles of a premise's slack over draws (negative: violated), its mean and violations."""
    v = np.asarray(values, dtype=np.float64)
    q = np.quantile(v, QUANTILES)
    return {"min": float(q[0]), "q05": float(q[1]), "q25": float(q[2]), "median": float(q[3]), "q75": float(q[4]),
            "q95": float(q[5]), "max": float(q[6]), "mean": float(v.mean()), "violations": int(np.sum(v < 0)),
            "draws": int(v.size)}


def certification_entry(flags: Sequence[bool], level: float) -> dict:
    k, n = int(np.sum(flags)), len(flags)
    lo, hi = clopper_pearson(k, n, level)
    return {"certified": k, "certification_rate": k / n, "certification_interval": [lo, hi]}


def route_entry(certified: Sequence[bool], violated: Sequence[bool], stated: Sequence[float], level: float,
                events: Sequence[str]) -> dict:
    """``routes.{name}`` of ``validity.json`` (the issue's contract, plus p-values)."""
    v = rate_entry(violated, stated, level)
    return {**certification_entry(certified, level), "violations": v["failures"], "violation_rate": v["rate"],
            "violation_interval": v["interval"], "stated_failure_probability": v["stated"],
            "stated_failure_probability_max": v["stated_max"], "p_value": v["p_value"],
            "significant": v["significant"], "events": list(events)}


def merge_events(per_draw: Sequence[Mapping[str, Mapping]]) -> dict[str, dict]:
    """``{event: {"failed": [...], "stated": [...], "exact": bool, "at_functions_failed": [...]}}``."""
    out: dict[str, dict] = {}
    for rec in per_draw:
        for name, e in rec.items():
            if not e["claimed"]:           # no applicable route states this event at this draw
                out.setdefault(name, {"failed": [], "stated": [], "exact": [], "at_functions_failed": []})
                continue
            d = out.setdefault(name, {"failed": [], "stated": [], "exact": [], "at_functions_failed": []})
            for key in ("failed", "stated", "exact", "at_functions_failed"):
                d[key].append(e[key])
    return out
