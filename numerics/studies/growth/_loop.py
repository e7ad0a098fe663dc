"""Growth to saturation (Paper B, THEORY §3, §8): scan -> insert -> train -> rescan.

Each step ``k`` scans the current network (:func:`numerics.studies.saturation.scan_with_state`)
on a probe (:mod:`numerics.studies.growth._probe`: generated data, a fresh draw per step; a fixed
split, the whole split again, the later steps' level conditional), records it, then stops when

* ``saturated`` -- no site rejects ``G = 0`` at ``growth.level`` (the adaptive test);
* ``certified_gain_below_2eps_M`` -- the best site's certified gain
  ``LCB(||G||)^2 / (2 beta)`` is below ``2 eps_M`` (THEORY §4 with plug-in constants,
  :mod:`numerics.estimators._site_constants`): the data could not certify the improvement.
  **Choice** (ours): opt-in (``growth.eps_stop = true``); at the sizes of the shipped
  examples ``2 eps_M`` (~4e-3 for the teacher with ``M = 20000``) exceeds every certified
  gain (1e-5 to 1e-4), so the rule would end every run at step 0;
* ``max_depth`` -- the depth budget is spent;

(``growth.run_past_stop``: record where the rule fired first -- ``stop_rule`` -- and go on
to ``max_depth``, to see what further depth would have brought);

else it inserts the scan's block at the best site (function-preserving for ``init =
"zero"``; ``"jumpboard"``: ``V = -G / beta``, Theorem 1's step along ``-G``; ``"natural"``:
the Theorem 1 step along ``-G Sigma_phi^+``) and trains every parameter for
``growth.steps_per_growth`` steps. ``DIR/trajectory.json`` is rewritten atomically after
every step and ``DIR/checkpoint.pt`` holds the network; a re-run with the same config
resumes where it stopped (the steps are deterministic given the seeds).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Mapping

import torch

from plumbing.io import atomic_write, atomic_write_json, dumps
from plumbing.validation import InputError, Interval
from plumbing.config import merge_config
from plumbing.validation import check_schema
from numerics.seeding import Streams
from numerics.studies.saturation import CONFIG_SCHEMA as SATURATION_CONFIG_SCHEMA
from numerics.studies.saturation import DEFAULT_CONFIG as SATURATION_DEFAULT
from numerics.studies.saturation import block_for, check_run_world, reference_network, scan_with_state
from numerics.builders import own_part, reference_seeds
from numerics.studies.growth._probe import probe_source, step_workload
from numerics.studies.growth._stored import grow_hash, read_stored, stamp
from numerics.workloads import as_model_dtype, build_network, make_workload, risk, seed_of, train_network

GROWTH_SCHEMA: Mapping[str, Any] = {
    "max_depth": Interval(0, integer=True), "level": Interval(0, 1, closed_low=False, closed_high=False),
    "init": ("zero", "jumpboard", "natural"), "steps_per_growth": Interval(0, integer=True),
    "eps_stop": (True, False), "run_past_stop": (True, False)}
GROW_SCHEMA: Mapping[str, Mapping[str, Any]] = {**SATURATION_CONFIG_SCHEMA, "growth": GROWTH_SCHEMA}
DEFAULT_GROW_CONFIG: dict = merge_config(SATURATION_DEFAULT, {"growth": {
    "max_depth": 8, "level": 0.05, "init": "jumpboard", "steps_per_growth": 1500, "eps_stop": False,
    "run_past_stop": False}})
STOP_REASONS = ("saturated", "certified_gain_below_2eps_M", "max_depth")


def validate_grow_config(config: Mapping) -> dict:
    """Check against :data:`GROW_SCHEMA`, merge over :data:`DEFAULT_GROW_CONFIG`; ``growth.level``
    is the scan's level.

    Raises:
        InputError: unknown key or value out of range.
    """
    check_run_world(config, "grow", DEFAULT_GROW_CONFIG)
    config, notes = own_part(config, GROW_SCHEMA)
    check_schema(config, GROW_SCHEMA)
    levels = config.get("saturation", {}).get("level"), config.get("growth", {}).get("level")
    if None not in levels and levels[0] != levels[1]:
        raise InputError("growth.level", f"equal to saturation.level = {levels[0]!r} when both are given (the scan's "
                         "level; one file, one level)", levels[1])
    cfg = merge_config(DEFAULT_GROW_CONFIG, config)
    cfg["saturation"]["level"] = levels[1] if levels[1] is not None else (levels[0] or cfg["growth"]["level"])
    cfg["growth"]["level"] = cfg["saturation"]["level"]
    from plumbing.sizes import check_config_sizes

    check_config_sizes(cfg)                       # memory and steps, before anything is built
    return cfg


def _init_V(scan, site: str, init: str) -> torch.Tensor:
    from numerics._numerics import psd_pinv

    acc, rec = scan.stats[site], next(r for r in scan.result["sites"] if r["site"] == site)
    G = acc.G
    if init == "zero" or not rec["beta"]:
        return torch.zeros_like(G)
    if init == "jumpboard":
        return -G / rec["beta"]
    D = G @ psd_pinv(acc.Sigma)
    D_hat = D / D.norm()
    return -(float((G * D_hat).sum()) / rec["beta_natural"]) * D_hat


def _eps_M(net, w, scan, site: str, level: float) -> dict:
    from numerics.estimators._site_constants import eps_M_plugin, lipschitz_top_at_site, loss_constants_plugin

    acc, rec = scan.stats[site], next(r for r in scan.result["sites"] if r["site"] == site)
    if not rec["beta"]:
        return {"eps_M": math.inf}
    x, y = w.train
    x = as_model_dtype(net, x)
    B, L_loss = loss_constants_plugin(net, x[:4096], y[:4096], w.loss)
    L_top = lipschitz_top_at_site(net, site, as_model_dtype(net, w.probe[0][:64]))
    c = {"M": x.shape[0], "level": level, "B": B, "L_loss": L_loss, "L_top": L_top, "d": scan.blocks[site].d,
         "nu_V": math.sqrt(rec["G_sq_plugin"]) / rec["beta"], "rho_phi": acc.phi_max}
    return {"eps_M": eps_M_plugin(**c), "eps_constants": c}


def _evaluate(net, w) -> dict:
    R, R_se = risk(net, w, "population")
    return {"L_train": risk(net, w, "train")[0], "L_test": risk(net, w, "test")[0], "R": R, "R_stderr": R_se}


def _step_record(k, depth, net, w, scan, cfg, inserted) -> dict:
    res, g = scan.result, cfg["growth"]
    model = res["model"]
    rec = {"step": k, "depth": depth, "site": inserted.get("site"), "init": inserted.get("init"),
           "immediate_gain": inserted.get("immediate_gain"), **_evaluate(net, w),
           "AG_max": max(s["AG_max"] for s in res["sites"]), "saturated": model["saturated"],
           "best_site": model["best_site"], "predicted_gain": model["predicted_gain"],
           "certified_gain": model["certified_gain"],
           "sites": [{k2: s[k2] for k2 in ("site", "P_all", "G_sq", "AG_max", "gain_bound_natural",
                                            "certified_gain", "saturated")} for s in res["sites"]],
           "scan_s": res["timings"]["scan_s"] + res["timings"]["scores_s"]}
    rec.update(_eps_M(net, w, scan, model["best_site"], g["level"]) if g["eps_stop"] else {"eps_M": None})
    return rec


def _stop_reason(rec: Mapping, depth: int, cfg: Mapping) -> str | None:
    if rec["saturated"]:
        return "saturated"
    if cfg["growth"]["eps_stop"] and rec["certified_gain"] < 2 * rec["eps_M"]:
        return "certified_gain_below_2eps_M"
    if depth >= cfg["growth"]["max_depth"]:
        return "max_depth"
    return None


def _insert(net, w, scan, site: str, init: str, tag) -> dict:
    from numerics.estimators._site_scan import loss_change
    from numerics.sites import insert_unit

    block = scan.blocks[site]
    with torch.no_grad():
        block.V.copy_(_init_V(scan, site, init).to(block.V.dtype))
    x, y = w.test
    gain = loss_change(net, site, block, block.V.detach(), as_model_dtype(net, x), y, w.loss)
    insert_unit(net, site, block)
    return {"site": site, "init": init, "tag": tag, "state_shape": list(block.state_shape), "immediate_gain": gain}


def _save_checkpoint(path: Path, step: int, net, insertions: list, cfg: Mapping) -> None:
    state = {"step": step, "state_dict": net.state_dict(), "insertions": insertions, "config_hash": grow_hash(cfg)}
    atomic_write(path, lambda tmp: torch.save(state, tmp))


def _resume(out: Path, cfg: dict, w, streams):
    """``(net, depth0, steps, insertions, start_step)`` from ``out`` if it holds this config's run, else None."""
    from numerics.sites import insert_unit

    import json

    stored = read_stored(out, cfg)
    if stored is None or stored[0].get("config") != json.loads(dumps(cfg)):
        return None
    traj, ck = stored
    net = build_network(cfg, w, reference_seeds(streams)[0])
    for ins in ck["insertions"]:
        insert_unit(net, ins["site"], block_for(net, ins["site"], tuple(ins["state_shape"]), cfg["saturation"],
                                                streams, ins["tag"]))
    net.load_state_dict(ck["state_dict"])
    steps = [s for s in traj["steps"] if s["step"] < ck["step"]]
    return net.eval(), traj["depth0"], steps, list(ck["insertions"]), ck["step"], traj


def _n_scans(cfg, depth0: int) -> int:
    """The most scans a run can make (steps ``0 .. max_depth - depth0``)."""
    return max(cfg["growth"]["max_depth"] - depth0, 0) + 1


def _trajectory(cfg, depth0, steps, insertions, stopped, timings) -> dict:
    first = next((s["stop_rule"] for s in steps if s.get("stop_rule")), None)
    traj = {"steps": steps, "stopped_because": stopped, "depth0": depth0, "insertions": insertions,
            "stop_depth": steps[-1]["depth"] if stopped else None, "stop_rule": first, "timings": timings,
            "config": cfg,
            "notes": ["depth = the reference depth plus the inserted blocks; R = population risk (exact conditionals "
                      "for teacher tasks, a held-out split otherwise)",
                      "eps_M uses plug-in constants (numerics.estimators._site_constants): an estimate, not a "
                      "certificate",
                      probe_source(cfg["task"]["kind"], _n_scans(cfg, depth0))]}
    return stamp(traj, cfg)


def grow(config: Mapping, out_dir: str | Path, *, progress: bool = True) -> dict:
    """Grow the ``[reference]`` network until saturated, ``< 2 eps_M`` or ``max_depth`` (docstring of ``numerics.studies.growth._loop``).

    **Not** :func:`depthcert.grow` (the caller's own network and samples in, the grown network out): this
    is the growth study, a config in and a resumable ``DIR/trajectory.json`` out, on the project's
    generated tasks and reference networks, with the study's stop rules and per-step probes drawn from
    the task.

    Returns:
        The trajectory, a dict with ``steps`` (each with ``depth``, ``site``, ``L_train``, ``L_test``, ``R``,
        ``AG_max``, ``saturated``, ...), ``stopped_because``, ``stop_depth``, ``insertions``.
    """
    return grow_model(config, out_dir, progress=progress)[0]


def grow_model(config: Mapping, out_dir: str | Path, *, progress: bool = True):
    """:func:`grow`, also returning ``(trajectory, grown network, workload, streams)``."""
    cfg = validate_grow_config(config)
    from plumbing.io import check_writable_dir

    out = check_writable_dir(out_dir)
    streams = Streams(cfg["seed"], cfg["data_seed"])
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg["seed"])
        w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
        state = _resume(out, cfg, w, streams)
        if state is not None and state[5].get("stopped_because"):
            return state[5], state[0], w, streams
        if state is None:
            net, _ = reference_network(cfg, w, streams)
            depth0 = int(getattr(net, "depth", 0))
            steps, insertions, start = [], [], 0
            _save_checkpoint(out / "checkpoint.pt", 0, net, insertions, cfg)
        else:
            net, depth0, steps, insertions, start, _ = state
        traj = _loop(net, w, cfg, streams, out, depth0, steps, insertions, start, t0, progress)
    aside = own_part(config, GROW_SCHEMA)[1]   # the sections of other commands in this file, named
    if aside:
        traj["notes"] = [*traj["notes"], *aside]
        atomic_write_json(out / "trajectory.json", traj)
    return traj, net, w, streams


def _loop(net, w, cfg, streams, out, depth0, steps, insertions, k, t0, progress) -> dict:
    from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

    g = cfg["growth"]
    bar = tqdm(total=max(g["max_depth"] - depth0, 0) + 1, initial=k, desc="grow", disable=not progress)
    stopped, first = None, next((s["stop_rule"] for s in steps if s.get("stop_rule")), None)
    while stopped is None:
        depth = depth0 + len(insertions)
        wk = step_workload(w, cfg, streams, k, _n_scans(cfg, depth0))   # step k's own probe
        scan = scan_with_state(net, wk, cfg["saturation"], streams, tag=k)
        rec = _step_record(k, depth, net, wk, scan, cfg, insertions[-1] if insertions else {})
        steps.append(rec)
        reason = _stop_reason(rec, depth, cfg)
        if reason and first is None:   # what the stop rule said first (run_past_stop goes on to max_depth)
            first = rec["stop_rule"] = {"reason": reason, "depth": depth, "step": k}
        stopped = "max_depth" if depth >= g["max_depth"] else (None if g["run_past_stop"] else reason)
        atomic_write_json(out / "trajectory.json", _trajectory(cfg, depth0, steps, insertions, stopped,
                                                               {"total_s": time.perf_counter() - t0}))
        bar.update(1)
        if stopped is not None:
            break
        insertions.append(_insert(net, w, scan, rec["best_site"], g["init"], k))
        train_network(net, w, cfg["reference"], seed_of(streams, "block_training", k), steps=g["steps_per_growth"])
        k += 1
        _save_checkpoint(out / "checkpoint.pt", k, net, insertions, cfg)
    bar.close()
    traj = _trajectory(cfg, depth0, steps, insertions, stopped, {"total_s": time.perf_counter() - t0})
    atomic_write_json(out / "trajectory.json", traj)
    return traj
