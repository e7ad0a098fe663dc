"""Figures of the scaling study (``depthcert plot --kind ...``), drawn from stored results only.

Each function takes the stored records and a path stem, writes ``<stem>.png``,
``<stem>.pdf`` and ``<stem>.json`` (the numbers drawn, fits included) and returns the
paths. matplotlib is imported lazily (:func:`plumbing.figures.pyplot`).
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Mapping

import numpy as np

from plumbing.figures import pyplot
from plumbing.io import atomic_write_text, dumps
from plumbing.validation import InputError
from numerics.studies import scaling as sc

__all__ = ["KINDS"]

NEAR_DIAGONAL = 1 / math.sqrt(2)   # ||offdiag||_F < ||diag||_F


def _save(fig, stem: Path, data: Mapping) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    paths = [stem.with_suffix(".png"), stem.with_suffix(".pdf")]
    fig.savefig(paths[0], dpi=110)
    fig.savefig(paths[1])
    pyplot().close(fig)
    return paths + [atomic_write_text(stem.with_suffix(".json"), dumps(data, indent=2) + "\n")]


def _depth_ticks(ax, depths) -> None:
    """Plain integer ticks at the measured depths on a log axis."""
    from matplotlib.ticker import NullFormatter

    ticks = sorted({int(d) for d in np.asarray(depths).ravel()})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _by_x(x: np.ndarray, y: np.ndarray):
    xs = np.unique(x)
    return xs, np.array([y[x == v].mean() for v in xs])


# ----------------------------------------------------------------------------- Appendix M
def _band(ax, xs, samples, fn, color):
    curves = np.array([fn(xs, *row) for row in samples])
    lo, hi = np.quantile(curves, [0.025, 0.975], axis=0)
    ax.fill_between(xs, lo, hi, color=color, alpha=0.2, lw=0)


def plot_appendix_m(records, stem: Path, *, depth_key="model.depth", n_boot=1000, confidence=0.95, seed=0, **_):
    """Two panels: ``s(D)`` with ``alpha_hat``; ``R(D) - R_inf`` with observed vs predicted exponent."""
    res = sc.appendix_m(records, depth_key=depth_key, n_boot=n_boot, confidence=confidence, seed=seed)
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    D, xs = res.depths, np.geomspace(res.depths.min(), res.depths.max(), 100)
    a1.errorbar(D, res.signal, yerr=np.nan_to_num(res.signal_stderr), fmt="o", ms=4, alpha=0.6, label="cells")
    a1.plot(*_by_x(D, res.signal), "s", color="k", ms=5, label="mean per depth")
    sf = res.signal_fit.fit
    a1.plot(xs, sf.predict(xs), color="C3", label=f"c D^-alpha, alpha_hat = {res.alpha.text()}")
    _band(a1, xs, res.signal_fit.samples[:, 1:], lambda x, A, al: A * x**-al, "C3")
    a1.set(xscale="log", yscale="log", xlabel="depth D", ylabel="s(D) = max_l ||G_l||",
           title="Assumption G: signal decay")
    a1.legend(fontsize=7)
    _excess_panel(a2, res, xs)
    for ax in (a1, a2):
        _depth_ticks(ax, D)
    paths = _save(fig, stem, res.to_dict())
    atomic_write_text(stem.with_name(stem.name + "_exponents.md"), sc.exponent_table(res) + "\n")
    return paths + [stem.with_name(stem.name + "_exponents.md")]


def _excess_panel(ax, res, xs):
    rf = res.risk_fit.fit
    excess = res.risk - rf.E
    pos = excess > 0
    ax.plot(res.depths[pos], excess[pos], "o", ms=4, alpha=0.6, label=f"cells with R > R_inf ({pos.sum()}/{pos.size})")
    ax.plot(xs, rf.A * xs**-rf.alpha, color="C0", label=f"observed a = {res.excess_observed.text()}")
    _band(ax, xs, res.risk_fit.samples[:, 1:], lambda x, A, al: A * x**-al, "C0")
    anchor = rf.A * xs[0] ** -rf.alpha
    pred = res.excess_predicted
    ax.plot(xs, anchor * (xs / xs[0]) ** -pred.estimate, "--", color="C3",
            label=f"predicted 2 alpha_hat - 1 = {pred.text()}")
    for v in pred.interval:
        ax.plot(xs, anchor * (xs / xs[0]) ** -v, ":", color="C3", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="depth D", ylabel="R(D) - R_inf (fitted R_inf)",
           title=f"Appendix M: excess risk ({res.verdict})")
    ax.legend(fontsize=7)


def plot_dstar(records, stem: Path, *, depth_key="model.depth", data_key="reference.n", confidence=0.95, seed=0,
               n_boot=500, **_):
    """``D*(M)`` against ``M`` (log-log) and against ``M^{1/(2a+1)}``."""
    res = sc.optimal_depth(records, depth_key=depth_key, data_key=data_key, confidence=confidence, seed=seed,
                           n_boot=n_boot)
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    a1.plot(res.sizes, res.d_star, "o-", label="D*(M) = argmin_D mean R")
    if res.exponent:
        a1.set_title(f"D* exponent {res.exponent.text()}")
    if res.predicted:
        ref = res.d_star[0] * (res.sizes / res.sizes[0]) ** res.predicted.estimate
        a1.plot(res.sizes, ref, "--", label=f"predicted M^(1/(2a+1)), a = {res.a_used:.3g}")
        a2.plot(res.sizes ** res.predicted.estimate, res.d_star, "o-")
        a2.set(xlabel=f"M^(1/(2a+1)) = M^{res.predicted.estimate:.3g}", ylabel="D*(M)",
               title="linear if D* ∝ M^(1/(2a+1))")
    a1.set(xscale="log", yscale="log", xlabel=data_key, ylabel="D*")
    a1.legend(fontsize=7)
    return _save(fig, stem, res.to_dict())


def plot_rebound(records, stem: Path, *, depth_key="model.depth", width_key="model.width", **_):
    """Risk against depth at each fixed width (depth only) and along the joint path."""
    res = sc.rebound(records, depth_key=depth_key, width_key=width_key)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for w, pts in res["curves"].items():
        m, s = np.array(pts).T
        ax.errorbar(res["depths"], m, yerr=np.nan_to_num(s), marker="o", ms=3, capsize=2,
                    label=f"depth only, width {w:g}")
    j = res["joint"]
    ax.errorbar(j["depths"], j["means"], yerr=np.nan_to_num(j["sems"]), color="k", lw=2, marker="s",
                label="joint depth and width")
    ax.set(xscale="log", yscale="log", xlabel="depth D", ylabel="population risk R(f_old)",
           title="Depth-only vs joint depth-and-width scaling")
    _depth_ticks(ax, res["depths"])
    ax.legend(fontsize=7)
    return _save(fig, stem, {**res, "curves": {str(k): v for k, v in res["curves"].items()}})


def plot_data(records, stem: Path, *, data_key="reference.n", group_key="model.depth", confidence=0.95, seed=0,
              n_boot=500, **_):
    """Risk against data size, one curve (and fit) per depth."""
    res = sc.data_scaling(records, data_key=data_key, group_key=group_key, confidence=confidence, seed=seed,
                          n_boot=n_boot)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for i, (g, v) in enumerate(res.items()):
        n, r = np.array(v["sizes"]), np.array(v["risk"])
        label = f"{group_key} = {g:g}"
        if v["fit"]:
            f = v["fit"]
            label += f": exponent {f['alpha']:.3g} [{f['alpha_interval'][0]:.3g}, {f['alpha_interval'][1]:.3g}]"
            xs = np.geomspace(n.min(), n.max(), 50)
            ax.plot(xs, f["E"] + f["A"] * xs ** -f["alpha"], color=f"C{i}", lw=1)
        ax.plot(*_by_x(n, r), "o", color=f"C{i}", label=label)
    ax.set(xscale="log", yscale="log", xlabel=data_key, ylabel="population risk R(f_old)", title="Loss vs data size")
    ax.legend(fontsize=7)
    return _save(fig, stem, {str(k): v for k, v in res.items()})


# ----------------------------------------------------------------------------- routes
def _setup(record: Mapping):
    """``(setup, level)`` of a stored run record: the run's own builder, on the quantities it stored."""
    from numerics.studies.run import setup_of_quantities

    return setup_of_quantities(record["quantities"], record["L_test_old"], record["R_old"]), record["level"]


def _varied(records, keys):
    return [k for k in keys if np.unique(sc.cell_values(records, k)).size > 1]


def plot_bound_vs_M(records, stem: Path, **_):
    """Bounds of both routes vs observed ``L_test(f_new)`` as ``M`` (and ``K``) grow."""
    varied = _varied(records, ["sizes.M", "sizes.K"]) if len(records) > 1 else []
    plt = pyplot()
    fig, axes = plt.subplots(1, max(1, len(varied)), figsize=(5.8 * max(1, len(varied)), 4.2), squeeze=False)
    data = {}
    if not varied:
        data["curve"] = _bound_curve(axes[0, 0], records[0])
    for ax, key in zip(axes[0], varied):
        data[key] = _bound_points(ax, records, key)
    return _save(fig, stem, data)


def _bound_points(ax, records, key):
    x = sc.cell_values(records, key)
    out = {"x": x.tolist()}
    for name, path, style in (("population bound (Thm 2)", "routes.population.bound", "o-"),
                              ("direct bound (Thm 3)", "routes.direct.bound", "s-"),
                              ("observed L_test(f_new)", "L_test_new", "^-"),
                              ("L_test(f_old): certify below", "L_test_old", "k--")):
        y = sc.cell_values(records, path)
        ax.plot(*_by_x(x, y), style, ms=4, label=name)
        out[path] = y.tolist()
    if key == "sizes.M":
        for route, c in (("population", "C0"), ("direct", "C1")):
            mins = [v for v in sc.cell_values(records, f"routes.{route}.min_M") if np.isfinite(v)]
            if mins:
                ax.axvline(float(np.median(mins)), color=c, ls="-.", lw=1, label=f"min_M ({route}, median)")
    ys = np.concatenate([np.asarray(v, dtype=float) for k, v in out.items() if k != "x"])
    ax.set(xscale="log", yscale="log" if np.all(ys > 0) else "linear", xlabel=key, ylabel="test loss",
           title=f"Bound vs observed as {key} grows")
    ax.legend(fontsize=7)
    return out


def _bound_curve(ax, record):
    from bounds.routes import evaluate_routes

    setup, level = _setup(record)
    M0 = float(setup.M)
    Ms = np.geomspace(max(2.0, M0 / 100), M0 * 100, 120)
    rep = evaluate_routes(dataclasses.replace(setup, M=Ms), level)
    ax.plot(Ms, rep.population.bound, label="population bound (Thm 2)")
    ax.plot(Ms, rep.direct.bound, label="direct bound (Thm 3)")
    ax.axhline(record["L_test_old"], color="k", ls="--", lw=1, label="L_test(f_old): certify below")
    ax.plot([M0], [record["L_test_new"]], "k^", label="observed L_test(f_new)")
    one = evaluate_routes(setup, level)
    found = []
    for r, c in ((one.population, "C0"), (one.direct, "C1")):
        if np.isfinite(r.min_M):
            ax.axvline(float(r.min_M), color=c, ls="-.", lw=1, label=f"min_M ({r.route}) = {float(r.min_M):.3g}")
            found.append(r.route)
    values = np.concatenate([rep.population.bound, rep.direct.bound, [record["L_test_old"], record["L_test_new"]]])
    ax.set(xscale="log", yscale="log" if np.all(values > 0) else "linear", xlabel="M (others fixed)",
           ylabel="test loss",
           title="Bound vs observed as M grows" + ("" if found else " (no route certifies: no min_M)"))
    ax.legend(fontsize=7)
    return {"M": Ms.tolist(), "population": rep.population.bound.tolist(), "direct": rep.direct.bound.tolist()}


def plot_region(records, stem: Path, *, cell: int = 0, **_):
    """Certification region in the ``(M, Delta_R)`` plane with the degenerate-regime crossover.

    **Choice**: the direct route's test margin ``Delta_test^R`` is set equal to ``Delta_R``
    (its expectation when ``f~_S ≈ f~_pop``), so both routes live in the same plane. The
    other quantities are those of the stored cell ``cell``; the measured cells are marked.
    """
    from bounds.regimes import degenerate_regime
    from bounds.routes import evaluate_routes

    setup, level = _setup(records[cell])
    M0 = float(setup.M)
    grid = np.geomspace(max(2.0, M0 / 1e3), M0 * 1e3, 10)
    cross = np.array([degenerate_regime(dataclasses.replace(setup, M=m), level).delta_R_crossover for m in grid])
    pts = [(float(r["quantities"]["M"]), r["quantities"]["delta_R"]) for r in records if r["quantities"]["delta_R"] > 0]
    finite = [v for v in list(cross) + [d for _, d in pts] if np.isfinite(v) and v > 0] or [1.0]
    Ms, dRs = np.geomspace(grid[0], grid[-1], 80), np.geomspace(min(finite) / 100, max(finite) * 10, 80)
    MM, RR = np.meshgrid(Ms, dRs)
    rep = evaluate_routes(dataclasses.replace(setup, M=MM, delta_R=RR, delta_test_R=RR), level)
    code = rep.population.certified.astype(int) + 2 * rep.direct.certified.astype(int)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    from matplotlib.colors import ListedColormap

    colors = ["#eeeeee", "#9ecae1", "#fdae6b", "#a1d99b"]
    ax.pcolormesh(MM, RR, code, cmap=ListedColormap(colors), vmin=-0.5, vmax=3.5, shading="auto")
    ax.plot(grid, cross, "k-", lw=1.5, label="population-route crossover (degenerate regime below)")
    if pts:
        ax.plot(*zip(*pts), "kx", label="measured cells (Delta_R > 0)")
    for lab, c in zip(("neither", "population only", "direct only", "both"), colors):
        ax.fill_between([], [], color=c, label=lab)
    n_out = len(records) - len(pts)
    ax.set(xscale="log", yscale="log", xlabel="M", ylabel="Delta_R (= Delta_test^R for the direct route)",
           title=f"Certification region at level {level:g}" + (f" ({n_out} cells with Delta_R <= 0)" if n_out else ""))
    ax.legend(fontsize=6, loc="lower right")
    return _save(fig, stem, {"M": Ms.tolist(), "delta_R": dRs.tolist(), "code": code.tolist(),
                             "crossover_M": grid.tolist(), "crossover_delta_R": cross.tolist()})


def _heatmap(fig, ax, S, title):
    lim = np.abs(S).max() or 1.0
    im = ax.imshow(S, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title, fontsize=9)


def _offdiag_ratio(S: np.ndarray) -> float:
    fro = np.linalg.norm(S)
    return float(np.linalg.norm(S - np.diag(np.diag(S))) / fro) if fro > 0 else 0.0


def plot_covariance(records, stem: Path, *, cell: int = 0, **_):
    """(A3) heatmaps of ``Cov(m)`` at the insertion site and at an interior site, and the
    off-diagonal mass ratio per site (``1/sqrt(2)``: as much mass off the diagonal as on it)."""
    rec = records[cell]
    cov = rec.get("diagnostics", {}).get("covariance", {})
    if "matrix" not in cov:
        raise InputError("--kind covariance", "results whose diagnostics store the covariance matrix", "absent")
    sites = rec["diagnostics"].get("sites", {})
    per_site, ratios = sites.get("covariance"), sites.get("offdiag_ratio", [])
    inner = len(per_site) // 2 - (len(per_site) % 2 == 0) if per_site and len(per_site) > 1 else None
    plt = pyplot()
    fig, axes = plt.subplots(1, 3 if inner is not None else 2, figsize=(15 if inner is not None else 11, 4.2))
    S = np.array(cov["matrix"])
    _heatmap(fig, axes[0], S, f"Cov(m) at the insertion site: off-diagonal ratio {cov['offdiag_ratio']:.3f}")
    data = {"matrix": S.tolist(), "offdiag_ratio": cov["offdiag_ratio"], "per_site": ratios}
    if inner is not None:
        Si = np.array(per_site[inner])
        _heatmap(fig, axes[1], Si, f"Cov(m) at interior site l = {inner}: ratio {_offdiag_ratio(Si):.3f}")
        data.update(interior_site=inner, interior_matrix=Si.tolist())
    ax = axes[-1]
    ax.bar(range(len(ratios)), ratios, color="C0")
    ax.axhline(NEAR_DIAGONAL, color="k", ls="--", lw=1, label="1/sqrt(2): off-diagonal = diagonal mass")
    ax.set(xlabel="site l", ylabel="||offdiag||_F / ||Sigma_m||_F", ylim=(0, 1), title="(A3) per site")
    ax.legend(fontsize=7)
    return _save(fig, stem, data)


KINDS = {"bound-vs-M": plot_bound_vs_M, "region": plot_region, "appendix-m": plot_appendix_m, "dstar": plot_dstar,
         "rebound": plot_rebound, "data": plot_data, "covariance": plot_covariance}
