"""The reproduce suite's own measurements, one function per claim (contract: ``_reproduce_claims``).

Each reads the stored cells of the suite's sweeps (or runs its own small study, stored
per seed so that a re-run resumes) and returns the evidence dict of one claim.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

from bounds.fitting import percentile_interval
from plumbing.store import ItemStore, config_hash
from numerics.studies import figures, scaling
from numerics.studies.reproduce._power import NO_EARLY_DROP, plateau_ratio, plateau_tests
from numerics.studies.sweeps import load_cells

__all__ = ["bound_validity", "covariance_near_diagonal", "exponent_agreement", "growth_vs_scratch",
           "joint_scaling_rebound", "ag_max_plateau", "plateau_ratio", "NO_EARLY_DROP",
           "local_insertion_shrinking", "signal_decay", "unpowered_guarantees"]

CONFIDENCE = 0.95
TEST_LEVEL = 0.05


def _cells(ctx, name: str) -> list[dict]:
    return load_cells(ctx.sweeps[name])


def _cached(ctx, key, make):
    """One computation per reproduce call (several claims read the same fit or figure)."""
    if key not in ctx.cache:
        ctx.cache[key] = make()
    return ctx.cache[key]


def _figure(ctx, name: str, kind: str, cell: int = 0) -> list[str]:
    paths = _cached(ctx, ("figure", name, kind), lambda: figures.plot_kind(
        ctx.sweeps[name], kind, out=Path(ctx.out_dir) / "figures", n_boot=ctx.suite.n_boot, cell=cell))
    return [str(p) for p in paths if str(p).endswith(".png")]


def _bootstrap_stat(values: np.ndarray, stat, n_boot: int, seed: int = 0) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(values), size=(n_boot, len(values)))
    return percentile_interval(np.array([stat(values[i]) for i in idx]), CONFIDENCE)


def _evidence(measured: str, estimate: float, interval, figures=(), **details) -> dict:
    return {"measured": measured, "estimate": float(estimate), "interval": [float(v) for v in interval],
            "confidence": CONFIDENCE, "figures": list(figures), "details": details}


def _appendix_m(ctx):
    return _cached(ctx, "appendix_m", lambda: scaling.appendix_m(_cells(ctx, "depth"), n_boot=ctx.suite.n_boot,
                                                                 confidence=CONFIDENCE))


def covariance_near_diagonal(ctx) -> dict:
    """Median off-diagonal mass ratio over the interior sites, averaged over the depth sweep's cells."""
    cells = _cells(ctx, "depth")
    per_cell = np.array([float(np.median(c["diagnostics"]["sites"]["offdiag_ratio"][:-1])) for c in cells])
    top = np.array([c["diagnostics"]["sites"]["offdiag_ratio"][-1] for c in cells])
    lo, hi = _bootstrap_stat(per_cell, np.mean, ctx.suite.n_boot)
    measured = (f"interior sites: mean ratio {per_cell.mean():.3f} [{lo:.3f}, {hi:.3f}] over {len(cells)} cells "
                f"(range {per_cell.min():.3f}-{per_cell.max():.3f}); top site (rank one by construction): "
                f"mean {top.mean():.3f}; threshold 1/sqrt(2) = {1 / math.sqrt(2):.3f}")
    deepest = int(np.argmax([c["config"]["model"]["depth"] for c in cells]))   # the most interior sites
    return _evidence(measured, per_cell.mean(), (lo, hi), _figure(ctx, "depth", "covariance", deepest),
                     per_cell=per_cell.tolist(), top_site=top.tolist())


def signal_decay(ctx) -> dict:
    res = _appendix_m(ctx)
    a = res.alpha
    measured = f"alpha_hat = {a.text()} ({CONFIDENCE:.0%} bootstrap, {len(res.depths)} cells); {res.signal_measure}"
    return _evidence(measured, a.estimate, a.interval, _figure(ctx, "depth", "appendix-m"),
                     appendix_m=res.to_dict())


def exponent_agreement(ctx) -> dict:
    res = _appendix_m(ctx)
    measured = (f"a_observed = {res.excess_observed.text()}, "
                f"predicted 2 alpha_hat - 1 = {res.excess_predicted.text()}, difference {res.difference.text()}; R_inf = {res.risk_fit.fit.E:.4g}")
    return _evidence(measured, res.difference.estimate, res.difference.interval, _figure(ctx, "depth", "appendix-m"),
                     table=scaling.exponent_table(res), alpha_interval=list(res.alpha.interval))


def local_insertion_shrinking(ctx) -> dict:
    from scipy.stats import kendalltau

    cells = _cells(ctx, "depth")
    D = scaling.cell_values(cells, "model.depth")
    gain = scaling.cell_values(cells, "quantities.delta_R_hat")
    pairs = np.column_stack([D, gain])
    tau = float(kendalltau(D, gain).statistic)
    lo, hi = _bootstrap_stat(pairs, lambda p: kendalltau(p[:, 0], p[:, 1]).statistic, ctx.suite.n_boot)
    means = {int(d): float(gain[D == d].mean()) for d in np.unique(D)}
    measured = (f"Kendall tau(depth, Delta_R) = {tau:.3f} [{lo:.3f}, {hi:.3f}]; mean Delta_R per depth: "
                + ", ".join(f"D={d}: {v:.3g}" for d, v in means.items()))
    return _evidence(measured, tau, (lo, hi), means=means)


def _paired_p(a: np.ndarray, b: np.ndarray) -> float:
    """One-sided paired t-test p-value for ``mean(a - b) > 0``."""
    from scipy.stats import ttest_rel

    if a.size < 2:
        return 1.0
    return float(ttest_rel(a, b, alternative="greater").pvalue)


def _width_tests(D, W, S, R, w, depths, seeds, joint: dict) -> dict:
    """The rebound tests of the depth-only curve at width ``w`` (with the joint path's, shared by every width)."""
    def risks(d):
        return np.array([R[(D == d) & (W == w) & (S == s)][0] for s in seeds])

    curve = {d: risks(d) for d in depths}
    deepest, bonf = curve[depths[-1]], TEST_LEVEL / max(1, depths.size - 1)
    steps = [_paired_p(curve[a], curve[b]) < bonf for a, b in zip(depths[:-1], depths[1:])]
    tests = {**joint, "rebound": any(_paired_p(deepest, curve[d]) < bonf for d in depths[:-1]),
             "depth_alone_improves": _paired_p(curve[depths[0]], deepest) < TEST_LEVEL,
             "depth_alone_monotone": bool(steps) and all(steps)}
    means = ", ".join(f"{int(d)}: {v.mean():.4g}" for d, v in curve.items())
    return {"convention": f"depth alone at width {w:g}", "statistic": "paired t-tests on the depth-only curve",
            "estimate": float("nan"), "interval": [float("nan"), float("nan")], "mde": None,
            "note": f"depth {means}; tests: " + ", ".join(f"{k}={v}" for k, v in tests.items()),
            "details": {"tests": tests}}


def joint_scaling_rebound(ctx) -> dict:
    """The joint path and, per width of the grid (what 'insufficient width' is the seeds do not say), the depth-only
    curve's rebound tests: one convention per width."""
    cells = _cells(ctx, "rebound")
    D, W, S, R = (scaling.cell_values(cells, k) for k in ("model.depth", "model.width", "seed", "R_old"))
    depths, widths, seeds = np.unique(D), np.unique(W), np.unique(S)

    def risks(d, w):
        return np.array([R[(D == d) & (W == w) & (S == s)][0] for s in seeds])

    k = min(depths.size, widths.size)
    first, last = risks(depths[0], widths[0]), risks(depths[k - 1], widths[k - 1])
    joint = {"joint_improves": _paired_p(first, last) < TEST_LEVEL, "joint_worsens": _paired_p(last, first) < TEST_LEVEL}
    convs = [_width_tests(D, W, S, R, w, depths, seeds, joint) for w in widths]
    measured = (f"joint path (D, w) = {list(zip(depths[:k].astype(int).tolist(), widths[:k].astype(int).tolist()))}: "
                f"R {first.mean():.4g} -> {last.mean():.4g} ({seeds.size} seeds); "
                + "; ".join(f"{c['convention']}: {c['note']}" for c in convs))
    return _evidence(measured, float("nan"), (float("nan"), float("nan")), _figure(ctx, "rebound", "rebound"),
                     tests=convs[0]["details"]["tests"], conventions=convs)


def _note(text: str) -> None:
    print(f"depthcert reproduce: note: {text}", file=sys.stderr)


def _stored_rows(folder: Path, settings: dict, compute) -> list[dict]:
    """``compute(seed)`` for each of ``settings["seeds"]``, stored per seed with its hash; resumable.

    A stored seed made by other settings, or whose file is corrupt (named), is recomputed.
    """
    seeds = {f"seed={s}": s for s in settings["seeds"]}
    hashes = {k: config_hash({"settings": settings, "seed": s}, f"reproduce {folder.name}") for k, s in seeds.items()}
    store = ItemStore(folder, hashes=hashes, kind=f"reproduce {folder.name}")
    for key in store.pending(list(hashes), _note):
        store.put(key, {"settings": settings, "result": compute(seeds[key])})
    return [rec["result"] for rec in store.load(list(hashes))]


def growth_vs_scratch(ctx) -> dict:
    """Paper B's comparison over seeds, from the growth study's public ``growth_vs_scratch``."""
    from scipy import stats

    from plumbing.config import merge_config
    from numerics.studies.growth import growth_vs_scratch as compare

    g = ctx.suite.growth
    rows = _stored_rows(Path(ctx.out_dir) / "growth", g, lambda s: compare(
        merge_config(g["config"], {"seed": s}), grow_steps=g["grow_steps"], base_steps=g["base_steps"], seed=s))
    gain = np.array([r["relative_test_gain"] for r in rows])
    half = stats.t.ppf(0.5 + CONFIDENCE / 2, gain.size - 1) * gain.std(ddof=1) / math.sqrt(gain.size)
    train = np.array([r["train_loss_scratch"] - r["train_loss_grown"] for r in rows])
    measured = (f"relative test gain (R_scratch - R_grown)/R_scratch = {gain.mean():.3%} "
                f"[{gain.mean() - half:.3%}, {gain.mean() + half:.3%}] over {gain.size} seeds; train loss lower "
                f"for the grown model in {int((train > 0).sum())}/{gain.size}")
    return _evidence(measured, gain.mean(), (gain.mean() - half, gain.mean() + half), per_seed=gain.tolist())


def ratio_text(est: float, lo: float, hi: float) -> str:
    """:func:`plateau_ratio` with its interval, in words where it is censored (:data:`NO_EARLY_DROP`,
    or not finite), never as the sentinel number."""
    def censored(v: float) -> bool:
        return not math.isfinite(v) or v >= NO_EARLY_DROP

    if censored(est):
        some = "" if censored(lo) else f" (in some bootstrap resamples it does: interval [{lo:.3g}, unbounded])"
        return "not estimable: AG_max does not drop over the first depths, so there is no early slope to divide by" + some
    return f"{est:.3g} [{lo:.3g}, " + ("unbounded: some bootstrap resamples have no early drop]" if censored(hi) else f"{hi:.3g}]")


def ag_max_plateau(ctx) -> dict:
    """Paper B's AG_max plateau, from the growth study's public ``ag_max_vs_depth`` over seeds.

    Statistic (fixed with the claim): ``abs(late slope) / abs(early slope)`` of ``log AG_max``
    against ``log D`` (:func:`plateau_ratio`), with a percentile bootstrap over seeds.
    """
    from numerics.studies.growth import ag_max_vs_depth

    a = ctx.suite.ag_max
    if not a:
        raise ValueError("this suite has no AG_max study")
    rows = _stored_rows(Path(ctx.out_dir) / "ag_max", a, lambda s: ag_max_vs_depth(
        {**(a["config"] or {}), "seed": s, "data_seed": s}, depths=a["depths"], quick=a["quick"]))
    depths = np.asarray(rows[0]["depths"], dtype=float)
    log_ag = np.log(np.array([r["AG_max"] for r in rows]))
    t = plateau_tests(depths, log_ag, ctx.suite.n_boot)
    ratio, lo, hi = t["ratio"]
    mean = np.exp(log_ag.mean(axis=0))
    plateau = [r["plateau_depth"] for r in rows]
    measured = (f"|late/early slope| of log AG_max vs log D = {ratio_text(ratio, lo, hi)} over {len(rows)} seeds; "
                "geometric-mean AG_max per depth: " + ", ".join(f"D={int(d)}: {v:.3g}" for d, v in zip(depths, mean))
                + f"; first depth below {rows[0]['plateau_threshold']:g}: {plateau}; early slope of log AG_max vs log D "
                f"{t['early_slope'][0]:.3g} [{t['early_slope'][1]:.3g}, {t['early_slope'][2]:.3g}]; |late/early| on the "
                f"linear scale (AG_max itself) {ratio_text(*t['ratio_linear'])}")
    return _evidence(measured, ratio, (lo, hi), depths=depths.tolist(), AG_max=np.exp(log_ag).tolist(),
                     tests=t["tests"])


def bound_validity(ctx) -> dict:
    """The validity study (:func:`numerics.studies.validity.run_validity`, public) on the suite's setup.

    The statistic counts the true guarantees (routes and events) whose observed failure
    rate is significantly above the stated probability; it is reported only when the
    study shows power (some deliberately weakened guarantee is flagged), else NaN.
    ``details["unpowered"]`` (:func:`unpowered_guarantees`) names what no weakened guarantee
    covers; the claim's rule reproduces only when it is empty.
    """
    from numerics.studies.reproduce._claims import validity_power_note
    from numerics.studies.validity import run_validity

    v = ctx.suite.validity
    out = Path(ctx.out_dir) / "validity"
    s = run_validity(v["config"], v["draws"], out, progress=False)
    sig = [f"route {k}" for k, r in s["routes"].items() if r["significant"]]
    sig += [f"event {k}" for k, e in s["events"].items() if e["significant"]]
    weak = {k: p for k, p in s["power"].items() if p["weakened"]}
    flagged = [k for k, p in weak.items() if p["flagged"]]
    n = float(len(sig)) if flagged else float("nan")
    unpowered = unpowered_guarantees(s)
    routes = "; ".join(f"{k}: {r['violations']}/{s['draws']} violated (stated {r['stated_failure_probability']:.3g}, "
                       f"rate interval [{r['violation_interval'][0]:.3g}, {r['violation_interval'][1]:.3g}])"
                       for k, r in s["routes"].items())
    cert = s["certification"]["any"]
    measured = (f"{s['draws']} draws of one setup: {routes}; significant: {', '.join(sig) or 'none'}; power: "
                f"{len(flagged)}/{len(weak)} weakened guarantees flagged; 'some route certifies' in "
                f"{cert['certified']}/{s['draws']} (interval [{cert['certification_interval'][0]:.3g}, "
                f"{cert['certification_interval'][1]:.3g}])")
    details = {"significant": sig, "flagged": flagged, "unpowered": unpowered}
    return _evidence(measured + validity_power_note(details), n, (n, n), [str(out / "slack.png")], **details)


def unpowered_guarantees(summary: dict) -> list[str]:
    """The events the validity study's routes rest on (``routes.*.events``, the part after a route's ``/``) for which
    no weakened version was flagged (``power.*``: ``weakened`` and ``flagged``), and the routes that name no event:
    0 violations of these are no evidence. Sorted; empty when power is shown for all."""
    powered = {p["event"] for p in summary["power"].values() if p.get("weakened") and p.get("flagged")}
    out: set[str] = set()
    for name, r in summary["routes"].items():
        events = [e.rsplit("/", 1)[-1] for e in r.get("events", [])]
        if not events:
            out.add(f"route {name} (names no event)")
        out |= {f"event {e}" for e in events if e not in powered}
    return sorted(out)
