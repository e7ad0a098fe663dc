"""The MNIST-1D suites' measurements, one function per claim of ``MNIST1D_CLAIMS``.

Each reads the stored cells of the suite's sweeps (``depth``, ``rebound``, ``growth``: the
MNIST-1D cells of :mod:`numerics.studies.reproduce._mnist1d_cells`), computes its statistic
with the pure functions of :mod:`numerics.studies.reproduce._power` and appends the
minimum detectable effect at the suite's sizes, from the pilot's per-unit spread
(``Suite.power``), so that ``inconclusive`` says what was resolvable.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from numerics.studies import scaling
from numerics.studies.reproduce import _power as pw
from numerics.studies.reproduce._claims import NotRun
from numerics.studies.reproduce._studies import _cached, _cells, _evidence, plateau_ratio, ratio_text

__all__ = ["ag_max_plateau", "ag_max_plateau_level", "ag_rows", "bound_validity", "covariance_near_diagonal",
           "covariance_per_cell", "exponent_agreement", "growth_gains", "growth_vs_scratch", "insertion_pairs",
           "joint_scaling_rebound", "local_insertion_shrinking", "signal_decay"]


def _mde(ctx, claim: str, n: int) -> tuple[float | None, str]:
    """The claim's MDE at ``n`` units from the pilot's spread (``Suite.power``), and its text."""
    p = getattr(ctx.suite, "power", {}).get(claim)
    if not p:
        return None, "; MDE: no pilot estimate"
    if p.get("sd") is None:
        return None, f"; MDE: not estimable from the pilot ({p['why']})"
    m = pw.mde(p["sd"], n)
    return m, f"; MDE at 80% power (pilot sd {p['sd']:.3g} per {p['unit']}, n = {n}): {m:.3g} {p.get('scale', '')}".rstrip()


def _with_mde(ctx, claim: str, ev: dict, n: int) -> dict:
    m, text = _mde(ctx, claim, n)
    ev["measured"] += text
    ev["details"]["mde"], ev["details"]["n_units"] = m, n
    return ev


def _filled(cell: dict) -> dict:
    """A cell stored before ``G_norm_stderr`` was recorded (None): filled from its ``G_norm`` and ``G_sq_ustat``
    by the identity of :func:`numerics.studies.reproduce._mnist1d_cells._sites`."""
    s = cell["diagnostics"]["sites"]
    if any(v is None for v in s["G_norm_stderr"]):
        s["G_norm_stderr"] = [max(g * g - u, 0.0) ** 0.5 for g, u in zip(s["G_norm"], s["G_sq_ustat"])]
    return cell


def _depth_cells(ctx, min_depth: int = 1) -> list[dict]:
    return [_filled(c) for c in _cells(ctx, "depth") if c["config"]["model"]["depth"] >= min_depth]


def covariance_per_cell(cells) -> tuple[np.ndarray, np.ndarray]:
    """Per cell (D >= 1): the median per-channel ratio over the interior sites, and the top site's ratio."""
    per = np.array([float(np.median(c["diagnostics"]["sites"]["offdiag_ratio"][:-1])) for c in cells])
    top = np.array([c["diagnostics"]["sites"]["offdiag_ratio"][-1] for c in cells])
    return per, top


def covariance_near_diagonal(ctx) -> dict:
    cells = _depth_cells(ctx)
    per, top = covariance_per_cell(cells)
    est, lo, hi, _ = pw.bootstrap_interval(per, np.mean, ctx.suite.n_boot)
    measured = (f"interior sites, per channel: mean ratio {est:.3f} [{lo:.3f}, {hi:.3f}] over {per.size} cells "
                f"(range {per.min():.3f}-{per.max():.3f}); top site: mean {top.mean():.3f}; threshold 1/sqrt(2) "
                f"= {1 / math.sqrt(2):.3f}")
    return _with_mde(ctx, "covariance_near_diagonal", _evidence(measured, est, (lo, hi), per_cell=per.tolist(),
                                                                top_site=top.tolist()), per.size)


def _appendix_m(ctx):
    return _cached(ctx, "mnist1d_appendix_m", lambda: scaling.appendix_m(
        _depth_cells(ctx), n_boot=ctx.suite.n_boot, confidence=pw.CONFIDENCE))


def _appendix_m_figure(ctx) -> list[str]:
    from numerics.studies.figures import KINDS

    out = Path(ctx.out_dir) / "figures"
    out.mkdir(parents=True, exist_ok=True)
    paths = _cached(ctx, ("figure", "mnist1d", "appendix-m"), lambda: KINDS["appendix-m"](
        _depth_cells(ctx), out / "appendix-m", n_boot=ctx.suite.n_boot))
    return [str(p) for p in paths if str(p).endswith(".png")]


def signal_decay(ctx) -> dict:
    res = _appendix_m(ctx)
    a, n = res.alpha, len(res.depths)
    measured = (f"alpha_hat = {a.text()} ({pw.CONFIDENCE:.0%} bootstrap, {n} cells); s(D) = max_l ||G_l||, plug-in "
                "on the probe sample with the protocol block's features and sampled labels")
    return _with_mde(ctx, "signal_decay", _evidence(measured, a.estimate, a.interval, _appendix_m_figure(ctx),
                                                    appendix_m=res.to_dict()), n)


def exponent_agreement(ctx) -> dict:
    res = _appendix_m(ctx)
    measured = (f"a_observed = {res.excess_observed.text()}, predicted 2 alpha_hat - 1 = "
                f"{res.excess_predicted.text()}, difference {res.difference.text()}; R_inf = {res.risk_fit.fit.E:.4g}")
    ev = _evidence(measured, res.difference.estimate, res.difference.interval, _appendix_m_figure(ctx),
                   table=scaling.exponent_table(res), alpha_interval=list(res.alpha.interval))
    return _with_mde(ctx, "exponent_agreement", ev, len(res.depths))


def joint_scaling_rebound(ctx) -> dict:
    from numerics.studies.reproduce._studies import joint_scaling_rebound as teacher_rule

    ev = teacher_rule(ctx)   # the same tests on the MNIST-1D grid (R_old: population cross-entropy)
    return _with_mde(ctx, "joint_scaling_rebound", ev, len({c["config"]["seed"] for c in _cells(ctx, "rebound")}))


def ag_rows(cells) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(depths, log AG_max (seeds x depths), test loss (seeds x depths))`` of the depth cells (complete seeds only)."""
    D = sorted({c["config"]["model"]["depth"] for c in cells})
    by = {}
    for c in cells:
        by.setdefault(c["config"]["seed"], {})[c["config"]["model"]["depth"]] = c
    seeds = [s for s in sorted(by) if len(by[s]) == len(D)]
    if len(seeds) < 2 or len(D) < 4:
        raise ValueError(f"AG_max vs depth needs >= 2 complete seeds and >= 4 depths, got {len(seeds)} and {len(D)}")
    log_ag = np.log([[by[s][d]["AG_max"] for d in D] for s in seeds])
    loss = np.array([[by[s][d]["L_test"] for d in D] for s in seeds])
    return np.asarray(D, dtype=float), log_ag, loss


def _ag_figure(ctx) -> list[str]:
    from numerics.studies.reproduce._mnist1d_figures import plot_ag_max

    from numerics.studies.reproduce._mnist1d_figures import plot_ag_conventions

    out = Path(ctx.out_dir) / "figures"
    return _cached(ctx, ("figure", "mnist1d", "ag"), lambda: plot_ag_conventions(_depth_cells(ctx, 1), out)
                   + plot_ag_max(_depth_cells(ctx, 0), out))


def ag_max_plateau(ctx) -> dict:
    D, log_ag, loss = ag_rows(_depth_cells(ctx))
    est, lo, hi, _ = pw.bootstrap_interval(log_ag, lambda b: plateau_ratio(D, b), ctx.suite.n_boot)
    gm = np.exp(log_ag.mean(axis=0))
    measured = (f"|late/early slope| of log AG_max vs log D = {ratio_text(est, lo, hi)} over {log_ag.shape[0]} "
                "seeds; geometric-mean AG_max: " + ", ".join(f"D={int(d)}: {v:.3g}" for d, v in zip(D, gm))
                + "; mean test loss: " + ", ".join(f"D={int(d)}: {v:.3g}" for d, v in zip(D, loss.mean(0))))
    ev = _evidence(measured, est, (lo, hi), _ag_figure(ctx), depths=D.tolist(), AG_max=np.exp(log_ag).tolist(),
                   L_test=loss.tolist())
    return _with_mde(ctx, "ag_max_plateau", ev, log_ag.shape[0])


def ag_max_plateau_level(ctx) -> dict:
    D, log_ag, _ = ag_rows(_depth_cells(ctx))
    m, lo, hi = pw.t_interval(log_ag[:, -1])
    measured = (f"AG_max at D = {int(D[-1])}: geometric mean {math.exp(m):.3g} [{math.exp(lo):.3g}, "
                f"{math.exp(hi):.3g}] over {log_ag.shape[0]} seeds (paper: < 5e-3)")
    ev = _evidence(measured, math.exp(m), (math.exp(lo), math.exp(hi)), _ag_figure(ctx), log_AG_max=log_ag[:, -1].tolist())
    return _with_mde(ctx, "ag_max_plateau_level", ev, log_ag.shape[0])


def growth_gains(cells) -> tuple[np.ndarray, np.ndarray]:
    """Per seed: the relative test gain ``(L_test_scratch - L_test_grown) / L_test_scratch`` and the train-loss gap."""
    gain = np.array([c["relative"] for c in cells])
    train = np.array([c["L_train_scratch"] - c["L_train_grown"] for c in cells])
    return gain, train


def growth_vs_scratch(ctx) -> dict:
    from numerics.studies.reproduce._mnist1d_figures import plot_growth_pairs

    cells = _cells(ctx, "growth")
    gain, train = growth_gains(cells)
    m, lo, hi = pw.t_interval(gain)
    depths = sorted({c["depth"] for c in cells})
    measured = (f"relative test gain (L_scratch - L_grown)/L_scratch = {m:.2%} [{lo:.2%}, {hi:.2%}] over {gain.size} "
                f"paired seeds (paper: ~11.8%); train loss lower for the grown model in {int((train > 0).sum())}/"
                f"{gain.size}; final depth {depths}")
    figs = plot_growth_pairs(cells, Path(ctx.out_dir) / "figures")
    ev = _evidence(measured, m, (lo, hi), figs, per_seed=gain.tolist(), train_gap=train.tolist())
    return _with_mde(ctx, "growth_vs_scratch", ev, gain.size)


def insertion_pairs(cells) -> tuple[np.ndarray, np.ndarray]:
    """``(depth, best realised gain over the sites)`` per cell."""
    D = np.array([c["config"]["model"]["depth"] for c in cells], dtype=float)
    gain = np.array([max(c["diagnostics"]["sites"]["realised_gain"]) for c in cells])
    return D, gain


def local_insertion_shrinking(ctx) -> dict:
    D, gain = insertion_pairs(_depth_cells(ctx, 0))
    tau, lo, hi, _ = pw.tau_interval(D, gain, ctx.suite.n_boot)
    means = {int(d): float(gain[D == d].mean()) for d in np.unique(D)}
    measured = (f"Kendall tau(depth, realised gain along -G) = {tau:.3f} [{lo:.3f}, {hi:.3f}] over {D.size} cells; "
                "mean gain per depth: " + ", ".join(f"D={d}: {v:.3g}" for d, v in means.items()))
    return _with_mde(ctx, "local_insertion_shrinking", _evidence(measured, tau, (lo, hi), means=means), D.size)


def bound_validity(ctx) -> dict:
    """The validity study on the suite's MNIST-1D run config; ``not run`` (:class:`NotRun`) when ``run`` refuses it."""
    from plumbing.validation import InputError
    from numerics.studies.reproduce._studies import bound_validity as validity
    from numerics.studies.run import validate_config

    cfg = ctx.suite.validity.get("config")
    if not cfg or not ctx.suite.validity.get("draws"):
        raise NotRun("this suite has no validity draws")
    try:
        validate_config(cfg)
    except InputError as exc:
        raise NotRun(f"numerics.studies.run.validate_config refuses the MNIST-1D run config: {exc}") from None
    return validity(ctx)
