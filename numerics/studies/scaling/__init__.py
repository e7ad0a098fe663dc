"""The scaling study: what Appendix M predicts against what training does (THEORY §7, §9).

Everything here reads *stored* sweep cells (``DIR/cells/<key>/result.json``, see
:mod:`numerics.studies.sweeps`) and fits them with :mod:`bounds.fitting`:

* :func:`appendix_m` -- the signal ``s(D) = max_l ||G_l(D)||`` (per-site signals of the
  probe diagnostics: readout features of the configured block, exact ``y``-expectation,
  an independent probe sample) against depth with its decay exponent ``alpha_hat``
  (pure power law), and the population risk ``R(D)`` of the trained depth-``D`` model
  with ``R(D) = R_inf + A D^{-a}`` (``a`` observed) next to the exponent Appendix M
  predicts from ``alpha_hat`` (``bounds.appendix_m.excess_exponent``: ``2 alpha - 1``).
  Both fits are refitted on the *same* pairs-bootstrap resamples of the cells, so the
  difference ``a - (2 alpha_hat - 1)`` has its own percentile interval, and the verdict
  follows a rule fixed here (:data:`AGREEMENT_RULE`).
* :func:`optimal_depth` -- ``D*(M)`` (the depth of least population risk at each data
  size) against ``M``, next to the predicted ``M^{1/(2a+1)}``.
* :func:`rebound` -- depth-only curves at fixed widths and the joint depth-and-width
  path (Paper A's rebound), :func:`data_scaling` -- risk against data size.
* figures over these fits: :func:`numerics.studies.figures.plot_kind`.

Paper A's results are qualitative (THEORY §7): nothing here predicts specific ratios.
"""
from __future__ import annotations

from plumbing.deprecation import moved

import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from plumbing.validation import InputError
from bounds.fitting import bootstrap_indices, bootstrap_samples, fit_scaling_law, percentile_interval
from plumbing.config import get_dotted

__all__ = ["AGREEMENT_RULE", "AppendixMResult", "Estimate", "OptimalDepthResult", "appendix_m", "cell_values",
           "data_scaling", "exponent_table", "load_records", "optimal_depth", "rebound"]

#: The exponent-agreement decision, fixed before any sweep was run (never tuned to agree).
AGREEMENT_MAX_WIDTH = 0.5
AGREEMENT_RULE = (f"reproduced: the {{conf:.0%}} bootstrap interval of a_observed - (2 alpha_hat - 1) contains 0 and "
                  f"is at most {AGREEMENT_MAX_WIDTH} wide; not reproduced: it excludes 0; inconclusive: otherwise, "
                  "or a fit failed, or Assumption G itself fails (the alpha_hat interval lies below 1/2: Appendix M "
                  "then predicts no exponent)")


@dataclasses.dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile-bootstrap interval."""

    name: str
    estimate: float
    interval: tuple[float, float]
    confidence: float

    def to_dict(self) -> dict:
        return {"name": self.name, "estimate": self.estimate, "interval": list(self.interval),
                "confidence": self.confidence}

    def text(self, digits: int = 3) -> str:
        lo, hi = self.interval
        return f"{self.estimate:.{digits}g} [{lo:.{digits}g}, {hi:.{digits}g}]"


def load_records(folder: str | Path) -> list[dict]:
    """The stored results of a folder: a sweep's ok cells, or the one ``result.json`` of a run."""
    from plumbing.store import load_json
    from numerics.studies.sweeps import load_cells

    folder = Path(folder)
    if (folder / "cells").is_dir():
        return load_cells(folder)
    if (folder / "result.json").is_file():
        return [load_json(folder / "result.json")]
    raise InputError("DIR", "a sweep folder (cells/) or a run folder (result.json)", str(folder))


def cell_values(records: Sequence[Mapping], key: str) -> np.ndarray:
    """``key`` (dotted) of every record: from the result, else from its config."""
    out = []
    for r in records:
        try:
            out.append(get_dotted(r, key))
        except (KeyError, TypeError):
            out.append(get_dotted(r["config"], key))
    return np.asarray(out, dtype=np.float64)


def _signal(records: Sequence[Mapping]) -> tuple[np.ndarray, np.ndarray, str]:
    if all("sites" in r.get("diagnostics", {}) for r in records):
        s = cell_values(records, "diagnostics.sites.s_max")
        err = np.array([r["diagnostics"]["sites"]["G_norm_stderr"][r["diagnostics"]["sites"]["argmax"]]
                        for r in records])
        return s, err, "s(D) = max over sites l = 0..D of ||G_l|| (probe sample, readout features, exact y-expectation)"
    s = cell_values(records, "quantities.G_norm")
    return s, np.full(s.shape, np.nan), "s(D) = ||G|| at the insertion site only (a lower bound on max_l ||G_l||)"


@dataclasses.dataclass(frozen=True)
class AppendixMResult:
    """Appendix M on stored cells: fits, predicted vs observed exponent, verdict."""

    depths: np.ndarray
    signal: np.ndarray
    signal_stderr: np.ndarray
    signal_measure: str
    risk: np.ndarray
    risk_stderr: np.ndarray
    signal_fit: object
    risk_fit: object
    alpha: Estimate
    excess_observed: Estimate
    excess_predicted: Estimate
    difference: Estimate
    samples: np.ndarray          # (n_boot, 3): alpha, a_observed, a_predicted
    verdict: str
    rule: str

    def to_dict(self) -> dict:
        return {"depths": self.depths.tolist(), "signal": self.signal.tolist(),
                "signal_stderr": self.signal_stderr.tolist(), "signal_measure": self.signal_measure,
                "risk": self.risk.tolist(), "risk_stderr": self.risk_stderr.tolist(),
                "signal_fit": self.signal_fit.to_dict(), "risk_fit": self.risk_fit.to_dict(),
                "alpha": self.alpha.to_dict(), "excess_observed": self.excess_observed.to_dict(),
                "excess_predicted": self.excess_predicted.to_dict(), "difference": self.difference.to_dict(),
                "n_boot": int(self.samples.shape[0]), "verdict": self.verdict, "rule": self.rule}


def predicted_excess_exponent(alpha) -> np.ndarray:
    """Appendix M's ``R(D) - R_inf`` exponent at ``alpha`` (read from ``bounds.appendix_m``)."""
    from bounds.appendix_m import excess_exponent, numeric

    return np.asarray(numeric(excess_exponent())(alpha=np.asarray(alpha, dtype=np.float64)), dtype=np.float64)


def agreement_verdict(difference: Estimate, alpha: Estimate | None = None) -> str:
    """:data:`AGREEMENT_RULE` applied to the interval of ``a_observed - a_predicted`` (and ``alpha_hat``'s)."""
    lo, hi = difference.interval
    if not (np.isfinite(lo) and np.isfinite(hi)) or (alpha is not None and alpha.interval[1] < 0.5):
        return "inconclusive"
    if lo > 0 or hi < 0:
        return "not reproduced"
    return "reproduced" if hi - lo <= AGREEMENT_MAX_WIDTH else "inconclusive"


def _depth_data(records, depth_key):
    D = cell_values(records, depth_key)
    if np.unique(D).size < 3 or np.any(D < 1):
        raise InputError(depth_key, "varied over at least 3 depths >= 1 in the sweep", sorted(set(D.tolist())))
    return D


def appendix_m(records: Sequence[Mapping], *, depth_key: str = "model.depth", risk_key: str = "R_old",
               confidence: float = 0.95, n_boot: int = 1000, seed: int = 0) -> AppendixMResult:
    """Fit ``s(D) = c D^{-alpha}`` and ``R(D) = R_inf + A D^{-a}``; compare ``a`` with ``2 alpha - 1``.

    Args:
        records: stored run results (cells of a depth sweep; several seeds per depth).
        depth_key: the varied depth (``D >= 1``: the power law needs positive depths).
        risk_key: the risk of the trained depth-``D`` model (default ``R_old``: its
            population risk, Monte Carlo over ``x`` with exact ``y``-expectation).
        confidence, n_boot, seed: the percentile bootstrap (pairs of cells resampled).

    Raises:
        InputError: fewer than 3 depths >= 1.
        ValueError: non-positive signals or risks (no log-space fit).
    """
    D = _depth_data(records, depth_key)
    s, s_err, measure = _signal(records)
    R = cell_values(records, risk_key)
    R_err = cell_values(records, risk_key + "_stderr") if risk_key in ("R_old", "R_new") else np.full(R.shape, np.nan)
    s_fit, R_fit = fit_scaling_law(D, s, offset=False), fit_scaling_law(D, R, offset=True)
    idx = bootstrap_indices(D, n_boot, seed)
    s_b, R_b = bootstrap_samples(D, s, idx, s_fit), bootstrap_samples(D, R, idx, R_fit)
    pred_b = predicted_excess_exponent(s_b[:, 2])
    samples = np.column_stack([s_b[:, 2], R_b[:, 2], pred_b])
    est = [Estimate(n, float(v), percentile_interval(col, confidence), confidence) for n, v, col in (
        ("alpha_hat", s_fit.alpha, samples[:, 0]), ("a_observed", R_fit.alpha, samples[:, 1]),
        ("a_predicted", float(predicted_excess_exponent(s_fit.alpha)), samples[:, 2]),
        ("a_observed - a_predicted", R_fit.alpha - float(predicted_excess_exponent(s_fit.alpha)),
         samples[:, 1] - samples[:, 2]))]
    from bounds.fitting import BootstrapFit

    s_bf = BootstrapFit(s_fit, confidence, est[0].interval, percentile_interval(s_b[:, 1], confidence),
                        (0.0, 0.0), s_b)
    R_bf = BootstrapFit(R_fit, confidence, est[1].interval, percentile_interval(R_b[:, 1], confidence),
                        percentile_interval(R_b[:, 0], confidence), R_b)
    return AppendixMResult(D, s, s_err, measure, R, R_err, s_bf, R_bf, *est, samples,
                           agreement_verdict(est[3], est[0]), AGREEMENT_RULE.format(conf=confidence))


def exponent_table(res: AppendixMResult) -> str:
    """Markdown table: fitted vs predicted exponents with their bootstrap intervals and the verdict."""
    c = res.alpha.confidence
    rows = [("signal decay alpha_hat (s(D) = c D^-alpha)", res.alpha.text(), "—"),
            ("excess risk a (R(D) - R_inf = A D^-a)", res.excess_observed.text(), res.excess_predicted.text()),
            ("a_observed - a_predicted", res.difference.text(), "0")]
    lines = [f"| quantity | fitted ({c:.0%} bootstrap interval) | predicted by Appendix M (2 alpha_hat - 1) |",
             "|---|---|---|"] + [f"| {a} | {b} | {p} |" for a, b, p in rows]
    lo, hi = res.alpha.interval
    g = "holds" if lo > 0.5 else "fails" if hi < 0.5 else "undecided"
    E_lo, E_hi = res.risk_fit.E_interval
    return "\n".join(lines + ["", f"verdict: **{res.verdict}** ({res.rule})",
                              f"Assumption G needs alpha > 1/2: {g} at this level (alpha_hat interval "
                              f"[{lo:.3g}, {hi:.3g}])", f"measure: {res.signal_measure}",
                              f"R_inf (fitted) = {res.risk_fit.fit.E:.4g} [{E_lo:.4g}, {E_hi:.4g}]"])


@dataclasses.dataclass(frozen=True)
class OptimalDepthResult:
    """``D*(M)`` per data size, its growth exponent and the prediction ``1/(2a+1)``."""

    sizes: np.ndarray
    d_star: np.ndarray
    exponent: Estimate | None
    predicted: Estimate | None
    a_used: float

    def to_dict(self) -> dict:
        return {"sizes": self.sizes.tolist(), "d_star": self.d_star.tolist(), "a_used": self.a_used,
                "exponent": self.exponent.to_dict() if self.exponent else None,
                "predicted": self.predicted.to_dict() if self.predicted else None}


def _best_depth(D, R):
    depths = np.unique(D)
    return depths[np.argmin([R[D == d].mean() for d in depths])]


def optimal_depth(records: Sequence[Mapping], *, depth_key: str = "model.depth", data_key: str = "reference.n",
                  risk_key: str = "R_old", a: float | None = None, confidence: float = 0.95, n_boot: int = 500,
                  seed: int = 0) -> OptimalDepthResult:
    """``D*(M) = argmin_D mean R(D, M)`` against ``M``, with a bootstrap interval on its exponent.

    The prediction ``D* ∝ M^{1/(2a+1)}`` (``bounds.appendix_m.optimal_depth``) uses ``a``
    if given, else the excess exponent fitted at the largest data size.
    """
    from bounds.appendix_m import growth_exponent, numeric, optimal_depth as dstar_expr

    D, M, R = (cell_values(records, k) for k in (depth_key, data_key, risk_key))
    sizes = np.unique(M)
    if sizes.size < 3:
        raise InputError(data_key, "varied over at least 3 data sizes in the sweep", sizes.tolist())
    d_star = np.array([_best_depth(D[M == m], R[M == m]) for m in sizes])
    if a is None:
        big = M == sizes[-1]
        a = fit_scaling_law(D[big], R[big], offset=True).alpha if np.unique(D[big]).size >= 3 else float("nan")
    rate = numeric(growth_exponent(dstar_expr()))
    pred = Estimate("1/(2a+1)", float(rate(a=a)), (float(rate(a=a)),) * 2, confidence) if np.isfinite(a) else None
    if np.unique(d_star).size < 2:
        return OptimalDepthResult(sizes, d_star, None, pred, float(a))
    rng = np.random.default_rng(seed)
    boot = []
    for _ in range(n_boot):
        pick = np.concatenate([rng.choice(np.flatnonzero(M == m), size=int(np.sum(M == m))) for m in sizes])
        ds = np.array([_best_depth(D[pick][M[pick] == m], R[pick][M[pick] == m]) for m in sizes])
        boot.append(np.polyfit(np.log(sizes), np.log(ds), 1)[0])
    slope = float(np.polyfit(np.log(sizes), np.log(d_star), 1)[0])
    est = Estimate("D* exponent", slope, percentile_interval(np.array(boot), confidence), confidence)
    return OptimalDepthResult(sizes, d_star, est, pred, float(a))


def rebound(records: Sequence[Mapping], *, depth_key: str = "model.depth", width_key: str = "model.width",
            risk_key: str = "R_old") -> dict:
    """Per width, the mean risk against depth (depth-only curves), and the joint path.

    The joint depth-and-width path pairs the ``i``-th smallest depth with the ``i``-th
    smallest width of the grid (**Choice**: the sweep varies both; the diagonal is the
    joint scaling). Returns ``{"depths", "widths", "curves": {width: (means, sems)},
    "joint": {"depths", "widths", "means", "sems"}, "per_seed": {(D, w): [risks]}}``.
    """
    D, W, R = (cell_values(records, k) for k in (depth_key, width_key, risk_key))
    depths, widths = np.unique(D), np.unique(W)
    if depths.size < 2 or widths.size < 2:
        raise InputError(f"{depth_key}, {width_key}", "both varied (>= 2 values each) in the sweep",
                         {"depths": depths.tolist(), "widths": widths.tolist()})

    def stats(d, w):
        v = R[(D == d) & (W == w)]
        return (float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan"))

    curves = {float(w): [stats(d, w) for d in depths] for w in widths}
    k = min(depths.size, widths.size)
    joint = [stats(depths[i], widths[i]) for i in range(k)]
    return {"depths": depths.tolist(), "widths": widths.tolist(), "curves": curves,
            "joint": {"depths": depths[:k].tolist(), "widths": widths[:k].tolist(),
                      "means": [m for m, _ in joint], "sems": [s for _, s in joint]}}


def data_scaling(records: Sequence[Mapping], *, data_key: str = "reference.n", risk_key: str = "R_old",
                 group_key: str | None = "model.depth", confidence: float = 0.95, n_boot: int = 500,
                 seed: int = 0) -> dict:
    """Risk against data size (one curve per ``group_key`` value), each with a fitted exponent."""
    from bounds.fitting import bootstrap_scaling_law

    N, R = cell_values(records, data_key), cell_values(records, risk_key)
    G = cell_values(records, group_key) if group_key else np.zeros(N.shape)
    out = {}
    for g in np.unique(G):
        sel = G == g
        fit = None
        if np.unique(N[sel]).size >= 3:
            bf = bootstrap_scaling_law(N[sel], R[sel], offset=True, n_boot=n_boot, confidence=confidence, seed=seed)
            fit = {"E": bf.fit.E, "A": bf.fit.A, "alpha": bf.fit.alpha, "alpha_interval": list(bf.alpha_interval)}
        out[float(g)] = {"sizes": N[sel].tolist(), "risk": R[sel].tolist(), "fit": fit}
    return out


#: ``plot_kind`` moved to :mod:`numerics.studies.figures` (figures over stored results): a deprecated alias.
__getattr__ = moved("numerics.studies.scaling", {"plot_kind": "numerics.studies.figures"})
