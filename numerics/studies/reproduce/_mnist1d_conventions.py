"""The MNIST-1D claims measured under every convention the seeds leave open.

Each study returns the claim's evidence with ``details["conventions"]``: one evidence-shaped
dict per convention (``convention``, ``statistic``, ``estimate``, ``interval``, ``mde``,
``note``, optionally ``details["tests"]`` or a preset ``inconclusive``), which
:func:`numerics.studies.reproduce._claims.decide` turns into one verdict each and a summary.
The cells' per-site fields are those of :mod:`numerics.studies.reproduce._mnist1d_signals`
(stored-cell format 2); a format-1 cell gives the conventions it has the fields for.

The MDE of a convention is ``(t_{0.975} + t_{0.8}) x`` its bootstrap (or Student) standard
error in this run (**Choice**: the pilot measured one convention per claim; its MDE is in
the claim's ``measured`` line where it applies).
"""
from __future__ import annotations

import math

import numpy as np

from numerics.studies.reproduce import _power as pw
from numerics.studies.reproduce._mnist1d_studies import _depth_cells, _with_mde
from numerics.studies.reproduce._mnist1d_signals import AG_CONVENTIONS, ag_curves
from numerics.studies.reproduce._power import plateau_onset, plateau_tests
from numerics.studies.reproduce._studies import _evidence, ratio_text

__all__ = ["REDUCTIONS", "ag_max_plateau", "ag_max_plateau_level",
           "ag_max_plateau_test_loss", "covariance_near_diagonal", "equicorrelation", "exponent_agreement",
           "local_insertion_shrinking", "onset_difference", "signal_decay", "signal_resolution"]

#: The loss reductions of the level claim: the per-sample loss, the gradient of a batch mean over B.
REDUCTIONS = (("per-sample loss", 1), ("batch mean over 128 (the training batch)", 128), ("batch mean over 1024", 1024))
DIAG_THRESHOLDS = (0.5, 0.6, 1 / math.sqrt(2), 0.8, 0.9)
#: The seeds' own plateau level ("near zero, e.g. < 5e-3"; a CIFAR-10 number on its own loss scale).
SEED_LEVEL = 5e-3
#: Sensitivity of the Choice thresholds (the claim's own value in the middle): the plateau's |late/early| bound,
#: the change-point rule's remaining drop, the coincidence's |log2(D_AG / D_loss)| bound.
PLATEAU_THRESHOLDS = (0.25, 0.5, 1.0)
ONSET_DROPS = (0.05, 0.1, 0.2)
COINCIDENCE_BOUNDS = (0.5, 1.0, 2.0)


def _plateau_sensitivity(t: dict) -> str:
    from numerics.studies.reproduce._claims import Rule

    tests = {**t["tests"], "flat_upper": t["tests"].get("flat_upper", t["ratio"][2])}
    out = [f"{thr:g}: " + Rule("plateau", thr).decide({"details": {"tests": tests}}) for thr in PLATEAU_THRESHOLDS]
    return "verdict at |late/early| bound " + ", ".join(out) + f" (Choice: {pw.FLAT_BOUND:g})"


def _onset_sensitivity(D, log_ag, loss, interval) -> str:
    from numerics.studies.reproduce._claims import Rule

    def at(drop):
        a, b = plateau_onset(D, np.exp(log_ag.mean(0)), drop), plateau_onset(D, loss.mean(0), drop)
        return f"{drop:.0%}: " + ("no onset to compare" if a is None or b is None else f"{int(a)} vs {int(b)}")

    within = [f"{2 ** b:.3g}: " + Rule("within", b).decide({"interval": interval}) for b in COINCIDENCE_BOUNDS]
    return ("onsets (AG_max vs test loss) at remaining drop " + ", ".join(at(d) for d in ONSET_DROPS)
            + " (Choice: 10%); verdict at 'coincide' within a factor " + ", ".join(within) + " (Choice: 2)")


def _mde_se(se: float, n: int) -> float | None:
    return pw.mde(se * math.sqrt(n), n) if math.isfinite(se) and n >= 2 else None


def _conv(name, statistic, est, lo, hi, mde=None, note="", **extra) -> dict:
    return {"convention": name, "statistic": statistic, "estimate": float(est), "interval": [float(lo), float(hi)],
            "mde": mde, "note": note, **extra}


# ------------------------------------------------------------------ covariance
def equicorrelation(ratio: float, d: int) -> float:
    """The common correlation ``rho`` of a ``d x d`` equicorrelated unit-variance covariance with this off-diagonal
    mass ratio: ``ratio^2 = (d-1) rho^2 / (1 + (d-1) rho^2)``."""
    r2 = min(ratio, 1 - 1e-12) ** 2
    return math.sqrt(r2 / ((d - 1) * (1 - r2))) if d > 1 else 0.0


def _ratio_at(rho: float, d: int) -> float:
    return math.sqrt((d - 1) * rho ** 2 / (1 + (d - 1) * rho ** 2))


def _cov_note(per, null, width: int, conv: str, n_boot: int) -> str:
    from numerics.studies.reproduce._claims import Rule

    sens = ", ".join(f"{t:.3g}: {Rule('below', t).decide({'interval': list(pw.bootstrap_interval(per, np.mean, n_boot)[1:3])})}"
                     for t in DIAG_THRESHOLDS)
    text = f"permutation null (coordinates permuted independently) {np.mean(null):.3f}; verdict at threshold {sens}"
    if conv != "state":
        rho = equicorrelation(float(np.mean(per)), width)
        text += (f"; at width {width} the ratio means a typical correlation rho = {rho:.3f}, which gives "
                 f"{_ratio_at(rho, 16):.3f} at 16 channels and {_ratio_at(rho, 64):.3f} at 64")
    return text


def covariance_near_diagonal(ctx) -> dict:
    from numerics.studies.reproduce._mnist1d_signals import COVARIANCE_CONVENTIONS

    cells = _depth_cells(ctx)
    width = int(cells[0]["config"]["model"]["width"])
    names = {"per_channel": "per channel over positions (C x C)", "summed": "position-summed per sample (C x C)",
             "state": "whole state (CL x CL)"}
    convs = []
    for conv in COVARIANCE_CONVENTIONS:
        key = conv if conv in cells[0]["diagnostics"]["sites"] else ("offdiag_ratio" if conv == "per_channel" else None)
        if key is None:
            continue
        per = np.array([float(np.median(c["diagnostics"]["sites"][key][:-1])) for c in cells])
        null = [float(np.median(c["diagnostics"]["sites"].get(conv + "_null", [math.nan])[:-1] or [math.nan]))
                for c in cells]
        est, lo, hi, se = pw.bootstrap_interval(per, np.mean, ctx.suite.n_boot)
        convs.append(_conv(names[conv], "mean interior off-diagonal mass ratio", est, lo, hi, _mde_se(se, per.size),
                           _cov_note(per, null, width, conv, ctx.suite.n_boot), per_cell=per.tolist()))
    main = convs[0]
    measured = "; ".join(f"{c['convention']}: {c['estimate']:.3f} [{c['interval'][0]:.3f}, {c['interval'][1]:.3f}]"
                         for c in convs) + f" over {len(cells)} cells; threshold 1/sqrt(2) = {1 / math.sqrt(2):.3f} (Choice)"
    ev = _evidence(measured, main["estimate"], main["interval"], conventions=convs)
    return _with_mde(ctx, "covariance_near_diagonal", ev, len(cells))


# ------------------------------------------------------------------ signal decay
_SIGNALS = (("protocol block G_l, max over sites", "G", "max"), ("protocol block G_l, top site", "G", "top"),
            ("raw activation gradient E[m_l], max over sites", "m", "max"),
            ("raw activation gradient E[m_l], top site", "m", "top"))


def _u_se(sites: dict, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per site ``(U, se(U))``. G: the scan keeps no per-sample X_i, so se(U) is the bound
    ``sqrt(4 U+ se_G^2 + 2 se_G^4)`` (``mu' Sigma mu <= tr(Sigma) ||mu||^2``, ``tr(Sigma^2) <= tr(Sigma)^2``,
    ``se_G^2 = tr(Sigma)/n``; conservative); m: the jackknife of the stored U-statistic."""
    if kind == "m":
        return np.asarray(sites["m_sq_ustat"]), np.asarray(sites["m_sq_ustat_se"])
    U, se_g = np.asarray(sites["G_sq_ustat"]), np.asarray(sites["G_norm_stderr"])
    return U, np.sqrt(4 * np.maximum(U, 0) * se_g ** 2 + 2 * se_g ** 4)


def _cell_signal(c: dict, kind: str, site: str) -> tuple[float, float]:
    U, se = _u_se(c["diagnostics"]["sites"], kind)
    k = len(U) - 1 if site == "top" else int(np.argmax(U))
    return float(U[k]), float(se[k])


def signal_resolution(cells, kind: str, site: str):
    """``(depths, U (seeds x depths), per-depth se of the seeds' mean U, resolved per depth, probe n needed)``:
    resolved where the seeds' mean U > 0 and se <= U / 2 (then se(s) ~ se(U) / (2 s) <= s / 4)."""
    D = sorted({c["config"]["model"]["depth"] for c in cells})
    by: dict = {}
    for c in cells:
        by.setdefault(c["config"]["seed"], {})[c["config"]["model"]["depth"]] = _cell_signal(c, kind, site)
    seeds = [s for s in sorted(by) if len(by[s]) == len(D)]
    U = np.array([[by[s][d][0] for d in D] for s in seeds])
    se = np.sqrt(np.array([[by[s][d][1] ** 2 for d in D] for s in seeds]).sum(0)) / len(seeds)
    Um = U.mean(0)
    resolved = (Um > 0) & (se <= Um / 2)
    n = cells[0]["config"]["saturation"]["probe_n"]
    need = [float(n * (2 * e / u) ** 2) if u > 0 else math.inf for u, e in zip(Um, se)]
    return np.asarray(D, float), U, se, resolved, need


def _alpha(D, U) -> float:
    m = U.mean(0)
    if (m <= 0).any():
        return math.nan
    return -float(np.polyfit(np.log(D), 0.5 * np.log(m), 1)[0])


def signal_decay(ctx) -> dict:
    cells = [c for c in _depth_cells(ctx) if "m_sq_ustat" in c["diagnostics"]["sites"]] or _depth_cells(ctx)
    convs = []
    for name, kind, site in _SIGNALS:
        if kind == "m" and "m_sq_ustat" not in cells[0]["diagnostics"]["sites"]:
            continue
        D, U, se, ok, need = signal_resolution(cells, kind, site)
        res = ", ".join(f"D={int(d)}: se/U = {e / u:.2g}" if u > 0 else f"D={int(d)}: U <= 0"
                        for d, u, e in zip(D, U.mean(0), se))
        if not ok.all():
            bad = [f"D={int(d)} (probe n needed ~{n:.3g})" for d, n, r in zip(D, need, ok) if not r]
            convs.append(_conv(name, "alpha_hat", math.nan, math.nan, math.nan, verdict="inconclusive",
                               note=f"s(D) not resolved at the sizes run (needs se(U) <= U/2): {', '.join(bad)}; {res}"))
            continue
        est, lo, hi, sd = pw.bootstrap_interval(U, lambda b: _alpha(D, b), ctx.suite.n_boot)
        convs.append(_conv(name, "alpha_hat", est, lo, hi, _mde_se(sd / math.sqrt(U.shape[0]), U.shape[0]), res))
    measured = "; ".join(f"{c['convention']}: " + (f"alpha_hat = {c['estimate']:.3g} [{c['interval'][0]:.3g}, "
                                                   f"{c['interval'][1]:.3g}]" if c.get("verdict") is None else
                                                   "not resolved") for c in convs)
    main = convs[0]
    ev = _evidence(measured + f" ({len(cells)} cells; unbiased U-statistic of ||G||^2)", main["estimate"],
                   main["interval"], conventions=convs)
    return _with_mde(ctx, "signal_decay", ev, len(cells))


def _resolved_cells(cells, kind: str) -> list[dict]:
    """Copies of ``cells`` whose ``s_max`` is the U-statistic's ``sqrt(U)`` at its best site (Appendix M's input)."""
    out = []
    for c in cells:
        U, se = _u_se(c["diagnostics"]["sites"], kind)
        k = int(np.argmax(U))
        if U[k] <= 0:
            raise ValueError(f"U <= 0 in the cell at depth {c['config']['model']['depth']}: no log-space fit")
        sites = {**c["diagnostics"]["sites"], "s_max": math.sqrt(U[k]), "argmax": k,
                 "G_norm_stderr": [float(e / (2 * math.sqrt(U[k]))) for e in se]}
        out.append({**c, "diagnostics": {**c["diagnostics"], "sites": sites}})
    return out


def _reference_figure(ctx) -> list[str]:
    """The Appendix M figure of the plug-in s(D) and the test-risk fit (for reference: the plug-in is not resolved)."""
    from numerics.studies.reproduce._mnist1d_studies import _appendix_m_figure

    try:
        return _appendix_m_figure(ctx)
    except ValueError:
        return []


def exponent_agreement(ctx) -> dict:
    from numerics.studies import scaling

    cells, convs = _depth_cells(ctx), []
    for name, kind, _ in (s for s in _SIGNALS if s[2] == "max"):
        if kind == "m" and "m_sq_ustat" not in cells[0]["diagnostics"]["sites"]:
            continue
        if not signal_resolution(cells, kind, "max")[3].all():
            convs.append(_conv(name, "a_observed - (2 alpha_hat - 1)", math.nan, math.nan, math.nan,
                               verdict="inconclusive", note="s(D) not resolved at every depth (signal_decay): no "
                                                            "alpha to build the exponent on"))
            continue
        try:
            res = scaling.appendix_m(_resolved_cells(cells, kind), n_boot=ctx.suite.n_boot, confidence=pw.CONFIDENCE)
        except ValueError as exc:
            convs.append(_conv(name, "a_observed - (2 alpha_hat - 1)", math.nan, math.nan, math.nan,
                               verdict="inconclusive", note=f"the fit could not be made: {exc}"))
            continue
        d = res.difference
        convs.append(_conv(name, "a_observed - (2 alpha_hat - 1)", d.estimate, *d.interval, note=(
            f"a_observed = {res.excess_observed.text()}, 2 alpha_hat - 1 = {res.excess_predicted.text()}"),
            details={"alpha_interval": list(res.alpha.interval)}))
    measured = "; ".join(f"{c['convention']}: {c['note']}" for c in convs) + " (2 alpha - 1: Assumption G, Choice)"
    ev = _evidence(measured, convs[0]["estimate"], convs[0]["interval"], _reference_figure(ctx), conventions=convs)
    return _with_mde(ctx, "exponent_agreement", ev, len(cells))


# ------------------------------------------------------------------ AG_max
def _ag_conventions(cells):
    have = cells[0]["diagnostics"]["sites"]
    return [(n, k, s) for n, k, s in AG_CONVENTIONS if k in have]


def ag_max_plateau(ctx) -> dict:
    from numerics.studies.reproduce._mnist1d_studies import _ag_figure

    cells, convs, short = _depth_cells(ctx), [], []
    for name, key, site in _ag_conventions(cells):
        D, log_ag, loss = ag_curves(cells, key, site)
        t = plateau_tests(D, log_ag, ctx.suite.n_boot)
        e, r, q = t["early_slope"], t["ratio"], t["ratio_linear"]
        stats = (f"early slope {e[0]:.3g} [{e[1]:.3g}, {e[2]:.3g}], |late/early| {ratio_text(*r)} (log scale), "
                 f"{ratio_text(*q)} (linear scale)")
        short.append(f"{name}: {stats}")
        note = (stats + f"; {_plateau_sensitivity(t)}; geometric mean: "
                + ", ".join(f"D={int(d)}: {v:.3g}" for d, v in zip(D, np.exp(log_ag.mean(0)))))
        mde = _mde_se(t["early_se"], log_ag.shape[0])
        convs.append(_conv(name, "early slope of log AG_max vs log D", *e, mde, note, details={"tests": t["tests"]}))
        m, lo, hi = pw.t_interval(log_ag[:, -1])
        level = (f"AG_max at D = {int(D[-1])} {math.exp(m):.3g} [{math.exp(lo):.3g}, {math.exp(hi):.3g}] (per-sample "
                 f"loss, geometric mean over seeds) against the seed's 5e-3; early slope {e[0]:.3g} [{e[1]:.3g}, {e[2]:.3g}]")
        short.append(f"{name}, seed's level: AG_max at D = {int(D[-1])} {math.exp(m):.3g} [{math.exp(lo):.3g}, "
                     f"{math.exp(hi):.3g}]")
        convs.append(_conv(f"{name}, the seed's level (< 5e-3 at the deepest depth)", "early slope of log AG_max vs "
                           "log D, and AG_max at the deepest depth", *e, mde, level,
                           details={"tests": {"early_drop": t["tests"]["early_drop"], "early_rise": t["tests"]["early_rise"],
                                              "near_zero": math.exp(hi) < SEED_LEVEL, "above_level": math.exp(lo) > SEED_LEVEL}}))
    D, _, loss = ag_curves(cells, *AG_CONVENTIONS[-1][1:])
    measured = ("; ".join(short) + "; mean test loss: " + ", ".join(f"D={int(d)}: {v:.3g}" for d, v in zip(D, loss.mean(0))))
    ev = _evidence(measured, convs[0]["estimate"], convs[0]["interval"], _ag_figure(ctx), conventions=convs)
    return _with_mde(ctx, "ag_max_plateau", ev, len({c["config"]["seed"] for c in cells}))


def ag_max_plateau_level(ctx) -> dict:
    from numerics.studies.reproduce._mnist1d_studies import _ag_figure

    cells, convs = _depth_cells(ctx), []
    for name, key, site in _ag_conventions(cells):
        D, log_ag, _ = ag_curves(cells, key, site)
        for red, B in REDUCTIONS:
            v = log_ag[:, -1] - math.log(B)
            m, lo, hi = pw.t_interval(v)
            se = float(v.std(ddof=1) / math.sqrt(v.size))
            convs.append(_conv(f"{name}, {red}", f"AG_max at D = {int(D[-1])} (geometric mean)", math.exp(m),
                               math.exp(lo), math.exp(hi), _mde_se(se, v.size),
                               "MDE on log AG_max" if B == 1 else ""))
    measured = "; ".join(f"{c['convention']}: {c['estimate']:.3g} [{c['interval'][0]:.3g}, {c['interval'][1]:.3g}]"
                         for c in convs) + " (seeds: < 5e-3)"
    ev = _evidence(measured, convs[0]["estimate"], convs[0]["interval"], _ag_figure(ctx), conventions=convs)
    return _with_mde(ctx, "ag_max_plateau_level", ev, len({c["config"]["seed"] for c in cells}))


def onset_difference(D, log_ag, loss) -> float:
    """``log2(D_AG / D_loss)`` of the seeds' mean curves (``plateau_onset``), NaN where either has no onset."""

    a, b = plateau_onset(D, np.exp(log_ag.mean(0))), plateau_onset(D, loss.mean(0))
    return math.log2(a / b) if a is not None and b is not None else math.nan


def ag_max_plateau_test_loss(ctx) -> dict:
    from numerics.studies.reproduce._mnist1d_studies import _ag_figure

    cells, convs, short = _depth_cells(ctx), [], []
    for name, key, site in _ag_conventions(cells):
        D, log_ag, loss = ag_curves(cells, key, site)
        a, b = plateau_onset(D, np.exp(log_ag.mean(0))), plateau_onset(D, loss.mean(0))
        note = f"AG_max onset {a if a is None else int(a)}, test-loss onset {b if b is None else int(b)}"
        if a is None or b is None:
            short.append(f"{name}: {note}: no onset to compare")
            convs.append(_conv(name, "log2(D_AG / D_loss)", math.nan, math.nan, math.nan, verdict="inconclusive",
                               note=note + ": no onset to compare; " + _onset_sensitivity(D, log_ag, loss, [math.nan] * 2)))
            continue
        rng = np.random.default_rng(0)
        idx = rng.integers(0, log_ag.shape[0], size=(ctx.suite.n_boot, log_ag.shape[0]))
        boot = np.array([onset_difference(D, log_ag[i], loss[i]) for i in idx])
        fin = boot[np.isfinite(boot)]
        lo, hi = (np.quantile(fin, [0.025, 0.975]) if fin.size >= boot.size / 2 else (-math.inf, math.inf))
        note += f"; {fin.size}/{boot.size} bootstrap draws with both onsets"
        short.append(f"{name}: {note}, log2 ratio {math.log2(a / b):.2g} [{lo:.2g}, {hi:.2g}]")
        convs.append(_conv(name, "log2(D_AG / D_loss)", math.log2(a / b), lo, hi,
                           _mde_se(float(fin.std(ddof=1)) if fin.size > 1 else math.nan, log_ag.shape[0]),
                           note + "; " + _onset_sensitivity(D, log_ag, loss, [lo, hi])))
    measured = "; ".join(short)
    ev = _evidence(measured, convs[0]["estimate"], convs[0]["interval"], _ag_figure(ctx), conventions=convs)
    return _with_mde(ctx, "ag_max_plateau_test_loss", ev, len({c["config"]["seed"] for c in cells}))


# ------------------------------------------------------------------ local insertions
def local_insertion_shrinking(ctx) -> dict:
    cells, convs = _depth_cells(ctx, 0), []
    D = np.array([c["config"]["model"]["depth"] for c in cells], dtype=float)
    for name, pick in (("best over sites", max), ("top site", lambda g: g[-1])):
        gain = np.array([pick(c["diagnostics"]["sites"]["realised_gain"]) for c in cells])
        tau, lo, hi, se = pw.tau_interval(D, gain, ctx.suite.n_boot)
        means = ", ".join(f"D={int(d)}: {gain[D == d].mean():.3g}" for d in np.unique(D))
        convs.append(_conv(name, "Kendall tau(depth, realised gain)", tau, lo, hi, _mde_se(se, D.size),
                           f"mean gain per depth: {means}"))
    measured = "; ".join(f"{c['convention']}: tau = {c['estimate']:.3f} [{c['interval'][0]:.3f}, "
                         f"{c['interval'][1]:.3f}] ({c['note']})" for c in convs) + f" over {D.size} cells"
    ev = _evidence(measured, convs[0]["estimate"], convs[0]["interval"], conventions=convs)
    return _with_mde(ctx, "local_insertion_shrinking", ev, D.size)
