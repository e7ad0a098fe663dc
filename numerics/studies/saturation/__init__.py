"""The saturation study (Paper B, THEORY §8): where would one more block help, by how much, and
is the network already deep enough at a stated level?

:func:`run` trains the ``[reference]`` network of any supported workload
(:mod:`numerics.workloads`) and calls :func:`scan_model`, which on an independent probe
sample (its own role stream) gives, for every insertion site:

* ``P_linear``, ``P_affine``, ``P_readout``, ``P_block`` (the requested families) and
  ``P_all`` (the protocol block: all families together), ``P = tr(G Sigma_phi^+ G^T)``;
* ``G_sq`` (the unbiased U-statistic of ``||G||_F^2`` of the protocol block), ``AG_max``,
  the realisability ratio ``P_all / E||m_bar||^2`` (exact ``m_bar`` for the teacher tasks,
  else ``m``: then a lower bound, ``realisability_kind``);
* ``beta`` along ``-G`` and ``beta_natural`` along ``-G Sigma_phi^+`` (GroMo's direction),
  Theorem 1's ``gain_bound_euclidean = ||G||^2 / (2 beta)`` and
  ``gain_bound_natural = slope^2 / (2 beta_natural)`` (plug-in estimates), and
  ``certified_gain = LCB(||G||)^2 / (2 beta)`` (the adaptive test's lower confidence bound),
  and ``realised_gain_*``: the loss reduction of the Theorem 1 step on the curvature sample
  (``beta_n`` samples of the population sample, independent of the probe that fixed the
  directions: the bound holds on that sample, which checks the grid estimate of ``beta``);
* ``test_hoeffding`` and ``test_adaptive`` (:mod:`numerics.estimators._site_stats`), each
  with ``n_needed`` for ``saturation.target_gain``; ``saturated`` = not rejected.

Multiple sites: each site's test runs at ``level / K`` (Bonferroni over the ``K`` sites); the
model's verdict averages the sites' betting wealths (a test martingale for "every site is
saturated", family-wise level ``level``, at least as powerful as Bonferroni): ``saturated``
at ``level``, or improvable with the best site (largest ``gain_bound_natural`` among the
rejecting sites, or among all when only the average rejects) and its predicted gain.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from typing import Any, Mapping

import torch

from plumbing.validation import InputError, Interval
from plumbing.config import merge_config
from plumbing.validation import check_schema
from plumbing.sizes import check_config_sizes
from numerics.families import FAMILIES
from numerics.seeding import Streams
from numerics.builders import own_part, reference_seeds
from numerics.workloads import (DEFAULT_WORKLOAD, WORKLOAD_SCHEMA, ListOf, as_model_dtype, build_network,
                                make_workload, risk, seed_of, train_network)

from numerics.studies.saturation._result import SaturationResult

__all__ = ["CONFIG_SCHEMA", "DEFAULT_CONFIG", "SATURATION_SCHEMA", "SaturationResult", "format_table", "load", "plot",
           "run_saturation", "Scan", "block_for", "check_run_world", "reference_network", "run", "scan_model", "scan_with_state", "site_blocks",
           "validate_config", "write"]

SATURATION_SCHEMA: Mapping[str, Any] = {
    "sites": ListOf(), "level": Interval(0, 1, closed_low=False, closed_high=False),
    "probe_n": Interval(8, integer=True),
    "families": ListOf(FAMILIES), "width": Interval(1, integer=True), "batch_size": Interval(1, integer=True),
    "target_gain": Interval(0, closed_low=False), "beta_n": Interval(2, integer=True),
    "beta_grid": Interval(2, integer=True), "b": Interval(0, closed_low=False),
    "n_chunks": Interval(2, integer=True)}
CONFIG_SCHEMA: Mapping[str, Mapping[str, Any]] = {**WORKLOAD_SCHEMA, "saturation": SATURATION_SCHEMA}

#: ``depthcert saturation`` defaults: a depth-3 teacher, a depth-1 student (too shallow).
DEFAULT_CONFIG: dict = merge_config(DEFAULT_WORKLOAD, {"saturation": {
    "level": 0.05, "probe_n": 4096, "families": ["linear", "affine", "readout"], "width": 16,
    "batch_size": 512, "target_gain": 1e-3, "beta_n": 1024, "beta_grid": 5, "n_chunks": 16}})


_RUN_SECTIONS = ("level", "insertion", "block_training", "sizes", "variants", "localised")


def check_run_world(config: Mapping, command: str, defaults: Mapping) -> None:
    """A file that ``run`` reads too (it has one of run's sections) builds run's world: every world key
    whose defaults differ must be given (:func:`numerics.builders.check_one_world`)."""
    if any(k in config for k in _RUN_SECTIONS):
        from numerics.builders import check_one_world
        from numerics.studies.run import DEFAULT_DEMO_CONFIG

        check_one_world(config, (command, defaults), ("run", DEFAULT_DEMO_CONFIG))


def validate_config(config: Mapping) -> dict:
    """Check ``config`` against :data:`CONFIG_SCHEMA` and merge it over :data:`DEFAULT_CONFIG`
    (sections only other commands read, e.g. ``[growth]`` or ``[insertion]``, are set aside).

    Raises:
        InputError: unknown key or value out of range (names the dotted key).
    """
    check_run_world(config, "saturation", DEFAULT_WORKLOAD)
    config, _ = own_part(config, CONFIG_SCHEMA)   # one file may serve `grow`, `run`, ... too
    check_schema(config, CONFIG_SCHEMA)
    merged = merge_config(DEFAULT_CONFIG, config)
    check_config_sizes(merged)                    # memory and steps, before anything is built
    return merged


def block_for(net, site: str, state_shape, sat: Mapping, streams: Streams, tag):
    """The protocol block scanned at ``site``: the ``[saturation]`` families (linear and affine
    always) on a state of ``state_shape``, its features seeded by the ``insertion`` stream of
    ``site`` and ``tag``; a 2-D state's layout is read from the module, never guessed."""
    from numerics.families import ProtocolBlock

    fams = list(dict.fromkeys(["linear", "affine", *sat["families"]]))
    dtype = next(net.parameters()).dtype
    layout = None
    if len(state_shape) == 2:   # (C, L) of a conv net or (T, d) tokens: read from the model, never guessed
        layout = _layout_of(net, site, state_shape)
    return ProtocolBlock(state_shape, fams, sat["width"], seed_of(streams, "insertion", site, tag), dtype,
                         layout=layout)


def _layout_of(net, site: str, state_shape) -> str:
    """The layout of a ``(C, L)`` / ``(T, d)`` state (THEORY §10): read from the module at the site,
    else from the whole network (its convolutions' channels, its linear layers' features), else a
    token model's (an ``nn.Embedding``: token streams); never guessed."""
    from numerics.layouts import infer_layout
    from numerics.sites import module_at

    try:
        return infer_layout(module_at(net, site), state_shape, site)
    except ValueError:
        pass
    try:
        return infer_layout(net, state_shape, site)
    except ValueError as exc:
        if any(isinstance(m, torch.nn.Embedding) for m in net.modules()):
            return "NLD"
        raise InputError("saturation.sites", "sites whose state layout can be told from the model", str(exc)) from None


def site_blocks(net, x_example, sat: Mapping, streams: Streams, tag=0) -> dict:
    """``{site: ProtocolBlock}`` for the checked sites of ``net`` (features drawn per site, before any gradient)."""
    from numerics.sites import SiteProbe, resolve_sites

    names = resolve_sites(net, sat.get("sites"), x_example, key="saturation.sites")
    with torch.no_grad(), SiteProbe(net, names) as probe:
        net(x_example)
        shapes = {s: tuple(probe.states[s].shape[1:]) for s in names}
    return {s: block_for(net, s, shapes[s], sat, streams, tag) for s in names}


def _direction_scores(net, site, block, acc, xb, yb, loss, sat) -> dict:
    from numerics._numerics import psd_pinv
    from numerics.estimators._site_scan import curvature_along

    G, Sigma = acc.G, acc.Sigma
    out = {"beta": None, "beta_natural": None, "gain_bound_euclidean": 0.0, "gain_bound_natural": 0.0,
           "realised_gain_euclidean": 0.0, "realised_gain_natural": 0.0, "beta_self_consistent": None}
    if not float(G.norm()) > 0:
        return out
    kw = dict(n_grid=sat["beta_grid"], batch_size=sat["batch_size"])
    be, _, gain_e, real_e = curvature_along(net, site, block, xb, yb, G, G, loss, **kw)
    bn, _, gain_n, real_n = curvature_along(net, site, block, xb, yb, G, G @ psd_pinv(Sigma), loss, **kw)
    out.update(beta=be.beta, beta_natural=bn.beta, gain_bound_euclidean=gain_e, gain_bound_natural=gain_n,
               realised_gain_euclidean=real_e, realised_gain_natural=real_n,
               beta_self_consistent=be.self_consistent and bn.self_consistent)
    return out


def _site_record(net, site, block, acc, w, sat, level_site, curvature: bool = True) -> dict:
    from numerics.estimators._site_stats import adaptive_test, hoeffding_test, projection_scores

    x, y = w.population   # curvature sample: independent of the probe that fixed the direction
    nb = min(sat["beta_n"], x.shape[0])
    rec = {"site": site, "d": block.d, "layout": block.layout or {1: "ND", 2: "NLD", 3: "NCHW"}[len(block.state_shape)],
           "r": block.r, "n": acc.n}
    P = projection_scores(acc.G, acc.Sigma, block.slices)
    rec.update({f"P_{f}": P.get(f) for f in ("linear", "affine", "readout", "block")}, P_all=P["all"])
    rec.update(G_sq=acc.u_statistic, G_sq_plugin=float(acc.G.pow(2).sum()), AG_max=acc.ag_max)
    denom = acc.m_bar_sq if acc.m_bar_sq is not None else acc.m_sq
    rec["realisability"] = P["all"] / (denom / acc.n) if denom > 0 else 0.0
    rec["realisability_kind"] = "m_bar (exact conditional)" if acc.m_bar_sq is not None else "m (lower bound)"
    if curvature:
        rec.update(_direction_scores(net, site, block, acc, as_model_dtype(net, x[:nb]), y[:nb], w.loss, sat))
    else:
        rec.update(beta=None, beta_natural=None, gain_bound_euclidean=0.0, gain_bound_natural=0.0,
                   realised_gain_euclidean=0.0, realised_gain_natural=0.0, beta_self_consistent=None)
    target = 2 * rec["beta"] * sat["target_gain"] if rec["beta"] else None
    hoef = hoeffding_test(acc, level_site, sat.get("b"), target)
    adap = adaptive_test(acc, level_site, sat.get("b"), target)
    rec["test_hoeffding"], rec["test_adaptive"] = hoef.to_dict(), adap.to_dict()
    lcb = max(adap.lower_bound, 0.0)
    rec["certified_gain"] = lcb**2 / (2 * rec["beta"]) if rec["beta"] else 0.0
    rec["alignment"] = _alignment(acc)
    rec["saturated"] = not adap.reject
    return rec


def _alignment(acc) -> float | None:
    """Cosine between the last betting direction and ``G_hat`` (how well the bets were aimed)."""
    if acc.direction is None or not float(acc.G_sum.norm()) > 0:
        return None
    return float((acc.direction * acc.G_sum).sum() / acc.G_sum.norm())


def _model_verdict(records: list, level: float) -> dict:
    """The model is improvable iff the *average* of the sites' betting wealths reaches ``1/level``.

    Under the global null (every site saturated) each site's wealth is a non-negative
    martingale for the same probe order, so their average is one too: Ville's inequality
    gives family-wise level ``level`` with at least Bonferroni's power (``max_k W_k / K <=``
    the average).
    """
    logs = torch.tensor([r["test_adaptive"]["statistic"] for r in records], dtype=torch.float64)
    log_mean = float(torch.logsumexp(logs, 0) - math.log(len(records)))
    saturated = log_mean < math.log(1.0 / level)
    rejecting = [r for r in records if not r["saturated"]]
    best = max(rejecting or records, key=lambda r: r["gain_bound_natural"])
    verdict = (f"saturated at level {level:g}" if saturated else
               f"improvable: best site {best['site']}, predicted gain {best['gain_bound_natural']:.3g}")
    return {"saturated": saturated, "best_site": best["site"], "predicted_gain": best["gain_bound_natural"],
            "certified_gain": best["certified_gain"], "level": level, "level_per_site": level / len(records),
            "n_sites": len(records), "verdict": verdict, "log_wealth_mean": log_mean,
            "threshold": math.log(1.0 / level),
            "saturated_hoeffding": not any(r["test_hoeffding"]["reject"] for r in records),
            "test": "betting with a predictable (Hotelling) direction; model: average of the site wealths (Ville); "
                    "sites: each at level/K"}


@dataclasses.dataclass(frozen=True)
class Scan:
    """A scan's JSON-ready ``result`` and, per site, its ``ProtocolBlock`` and accumulated statistics."""

    result: dict
    blocks: dict
    stats: dict


def scan_with_state(net, w, sat: Mapping, streams: Streams, *, tag=0, progress: bool = False,
                    curvature: bool = True) -> Scan:
    """:func:`scan_model`, also returning the blocks and statistics (``G``, ``Sigma_phi``) per site."""
    from numerics.estimators._site_scan import accumulate_site_stats

    t0 = time.perf_counter()
    x, y = w.probe
    x = as_model_dtype(net, x)
    blocks = site_blocks(net, x[:2], sat, streams, tag)
    soft = w.soft(w.probe[0]).to(x.dtype) if w.soft is not None else None
    bar = _bar(x.shape[0] * (2 if soft is not None else 1), progress, "scan")
    accs = accumulate_site_stats(net, x, y, blocks, w.loss, batch_size=sat["batch_size"], soft_y=soft,
                                 progress=bar.update if bar else None, n_chunks=sat["n_chunks"], b=sat.get("b"))
    if bar:
        bar.close()
    t_scan = time.perf_counter() - t0
    level_site = sat["level"] / len(blocks)
    records = [_site_record(net, s, blocks[s], accs[s], w, sat, level_site, curvature) for s in blocks]
    result = {"sites": records, "model": _model_verdict(records, sat["level"]),
              "timings": {"scan_s": t_scan, "scores_s": time.perf_counter() - t0 - t_scan}}
    return Scan(result, blocks, accs)


def scan_model(net, w, sat: Mapping, streams: Streams, *, tag=0, progress: bool = False,
               curvature: bool = True) -> dict:
    """Scores, tests and verdicts of ``net`` on ``w.probe`` at every site (docstring of ``numerics.studies.saturation``).

    Args:
        net: any per-sample-safe network (eval mode).
        w: a :class:`~numerics.workloads.Workload` (its ``probe`` sample is used).
        sat: the ``[saturation]`` section (merged with defaults).
        streams: role streams (the block features come from ``insertion``).
        tag: distinguishes the features of successive scans of a growing model.
        curvature: False skips ``beta`` and the gain bounds (tests and scores only).

    Returns:
        ``{"sites": [...], "model": {...}, "timings": {...}}`` (JSON-ready).
    """
    return scan_with_state(net, w, sat, streams, tag=tag, progress=progress, curvature=curvature).result


def _bar(total: int, on: bool, desc: str):
    if not on:
        return None
    from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

    return tqdm(total=total, desc=desc, unit="sample", leave=False)


def reference_network(cfg: Mapping, w, streams: Streams):
    """``f_old``: the ``[model]`` architecture trained on ``w.train`` (reference roles of ``seed``)."""
    from numerics.sites import check_no_batchnorm

    init, _, order = reference_seeds(streams)   # the run study's roles: one reference per config
    net = build_network(cfg, w, init)
    check_no_batchnorm(net, "model.norm")   # refuse before any training (THEORY §1)
    if cfg["model"].get("kind") == "hf" and cfg["reference"]["steps"] == 0:
        return net.eval(), None
    return train_network(net, w, cfg["reference"], order)


def run_saturation(config: Mapping, out_dir: str | Path | None = None, *, progress: bool = False) -> dict:
    """Train the reference network and scan it; write ``saturation.json`` and a figure to ``out_dir``
    (the dict form; :func:`run` gives the typed :class:`SaturationResult`).

    Returns:
        ``{"sites", "model", "reference", "timings", "config", "notes"}``.

    Raises:
        InputError: bad config, unknown site, batch-norm, a shape-changing site.
    """
    cfg = validate_config(config)
    if out_dir is not None:
        from plumbing.io import check_writable_dir

        check_writable_dir(out_dir)     # before any work
    t0 = time.perf_counter()
    streams = Streams(cfg["seed"], cfg["data_seed"])
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg["seed"])
        w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
        net, res = reference_network(cfg, w, streams)
        t_train = time.perf_counter() - t0
        result = scan_model(net, w, cfg["saturation"], streams, progress=progress)
    result["reference"] = {"depth": getattr(net, "depth", None), "L_train": risk(net, w, "train")[0],
                           "L_test": risk(net, w, "test")[0], "R": risk(net, w, "population")[0],
                           "train_final_loss": None if res is None else res.final_loss}
    result["timings"]["train_s"] = t_train
    result["config"] = cfg
    result["notes"] = list(w.notes) + _NOTES + own_part(config, CONFIG_SCHEMA)[1]
    if out_dir is not None:
        write(result, out_dir)
    return result



def run(config: Mapping, out_dir: str | Path | None = None, *, progress: bool = False) -> SaturationResult:
    """:func:`run_saturation` as a typed result (a read-only mapping of the same content, so code that
    reads the dict reads it unchanged)."""
    return SaturationResult.from_dict(run_saturation(config, out_dir, progress=progress))


_NOTES = [
    "probe sample drawn from its own role stream (data_seed), independent of the training sample",
    "tests: each site at level/K (Bonferroni); adaptive = testing by betting with a predictable direction, level exact "
    "when b bounds |<X_i, w>|; with b from earlier chunks (b_from_data) the level is a plug-in",
    "gain bounds are plug-in estimates (Theorem 1 with the probe's G and beta); certified_gain uses the adaptive "
    "test's lower confidence bound on ||G||",
]


def write(result: Mapping, out_dir: str | Path) -> dict:
    """``saturation.json`` (atomic) and ``saturation.png`` in ``out_dir``."""
    from plumbing.io import atomic_write_json
    from plumbing.store import config_hash, stamp

    out = Path(out_dir)
    stored = stamp(result, config_hash(result.get("config"), "saturation"), "saturation")
    paths = {"json": atomic_write_json(out / "saturation.json", stored)}
    paths["figure"] = plot(result, out / "saturation.png")
    return paths


def load(path: str | Path) -> SaturationResult:
    """A stored result (a ``saturation.json`` or the folder holding it), typed (:class:`SaturationResult`)."""
    from plumbing.store import load_result

    return SaturationResult.from_dict(load_result(path, "saturation.json"))


def plot(result: Mapping | str | Path, path: str | Path) -> Path:
    """Per site: ``P_affine``, the two gain bounds and ``AG_max`` (log scale), rejections marked."""
    from numerics.studies.saturation._outputs import plot_sites

    return plot_sites(load(result) if not isinstance(result, Mapping) else result, path)


def format_table(result: Mapping) -> str:
    """One line per site and the verdict."""
    from numerics.studies.saturation._outputs import table

    return table(result)

