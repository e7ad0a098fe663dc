"""The §8 studies around growth (Paper B): growth vs scratch over seeds, AG_max and local
insertion against depth, optimiser invariance on a network. Each returns a plain dict."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

import torch

from plumbing.config import merge_config
from numerics.seeding import Streams
from numerics.studies.growth._loop import grow_model, validate_grow_config
from numerics.studies.saturation import block_for, reference_network, scan_with_state
from numerics.workloads import as_model_dtype, build_network, make_workload, risk, seed_of, train_network


def _mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean and Student-t interval (``n >= 2``; the interval is ``(-inf, inf)`` for ``n = 1``)."""
    from scipy.stats import t as student_t

    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, (-math.inf, math.inf)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = student_t.ppf(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return mean, (mean - half, mean + half)


def _scratch(cfg: dict, w, streams: Streams, traj: Mapping):
    """The grown model's final architecture from a fresh initialisation, every ``V`` random."""
    from numerics.sites import insert_unit

    net = build_network(cfg, w, seed_of(streams, "reference_init", "scratch"))
    gen = torch.Generator().manual_seed(seed_of(streams, "reference_init", "scratch_V"))
    for ins in traj["insertions"]:
        block = block_for(net, ins["site"], tuple(ins["state_shape"]), cfg["saturation"], streams, ins["tag"])
        with torch.no_grad():   # PyTorch's default Linear scale 1/sqrt(fan_in)
            block.V.copy_((torch.rand(block.V.shape, generator=gen, dtype=block.V.dtype) * 2 - 1)
                          / math.sqrt(block.r))
        insert_unit(net, ins["site"], block)
    return net


def growth_vs_scratch_seeds(config: Mapping, seeds: Sequence[int], out_dir: str | Path, *,
                            progress: bool = False) -> dict:
    """Grown vs the same final architecture trained from scratch with the same step budget, per seed.

    Returns:
        ``per_seed`` rows (losses of both, depth, steps) and ``relative_mean``,
        ``relative_ci`` (95% Student-t) of ``(L_test_scratch - L_test_grown) / L_test_scratch``.
    """
    from tqdm import tqdm   # text bars (tqdm.auto warns in a notebook without ipywidgets)

    rows = []
    for s in tqdm(seeds, desc="growth vs scratch (seeds)", unit="seed", disable=not progress):
        cfg = validate_grow_config(merge_config(config, {"seed": int(s), "data_seed": int(s)}))
        traj, net, w, streams = grow_model(cfg, Path(out_dir) / f"seed_{s}", progress=progress)
        r, g, k = cfg["reference"], cfg["growth"], len(traj["insertions"])
        anneal = r.get("anneal_steps", 0)
        budget = r["steps"] + anneal + k * (g["steps_per_growth"] + anneal)
        scratch = _scratch(cfg, w, streams, traj)
        train_network(scratch, w, r, seed_of(streams, "reference_training", "scratch"), steps=budget - anneal)
        rows.append({"seed": int(s), "depth": traj["steps"][-1]["depth"], "inserted": k, "steps": budget,
                     **{f"{key}_grown": risk(net, w, which)[0] for key, which in _SPLITS},
                     **{f"{key}_scratch": risk(scratch, w, which)[0] for key, which in _SPLITS}})
        rows[-1]["relative"] = (rows[-1]["L_test_scratch"] - rows[-1]["L_test_grown"]) / rows[-1]["L_test_scratch"]
    mean, ci = _mean_ci([row["relative"] for row in rows])
    return {"per_seed": rows, "relative_mean": mean, "relative_ci": list(ci), "confidence": 0.95,
            "grown_better_fraction": sum(row["relative"] > 0 for row in rows) / len(rows),
            "notes": ["relative = (L_test_scratch - L_test_grown) / L_test_scratch (> 0: grown better); "
                      "same final architecture, same optimiser and total number of steps; scratch V drawn "
                      "U(-1/sqrt(r), 1/sqrt(r)) (a random init, not function-preserving)"]}


_SPLITS = (("L_train", "train"), ("L_test", "test"), ("R", "population"))


def _at_depth(config: Mapping, depth: int):
    cfg = validate_grow_config(merge_config(config, {"model": {"depth": int(depth)}}))
    streams = Streams(cfg["seed"], cfg["data_seed"])
    w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
    net, _ = reference_network(cfg, w, streams)
    return cfg, w, streams, net


def depth_profile(config: Mapping, depths: Sequence[int], *, progress: bool = False) -> dict:
    """Per depth (networks trained independently): AG_max, risks, the best site, the predicted
    gains and the *realised* loss reduction of one block inserted along ``-G`` (Theorem 1's
    step, THEORY §3) and along ``-G Sigma_phi^+`` (the natural direction).
    """
    from numerics.estimators._site_scan import loss_change

    out = {k: [] for k in ("depths", "AG_max", "L_test", "R", "best_site", "saturated", "gain_bound",
                           "realised_gain_population", "realised_gain_test", "gain_bound_natural",
                           "realised_gain_natural_population")}
    for depth in depths:
        cfg, w, streams, net = _at_depth(config, depth)
        scan = scan_with_state(net, w, cfg["saturation"], streams, progress=progress)
        model = scan.result["model"]
        site = model["best_site"]
        rec = next(r for r in scan.result["sites"] if r["site"] == site)
        G, block = scan.stats[site].G, scan.blocks[site]
        V = -G / rec["beta"] if rec["beta"] else torch.zeros_like(G)
        V_nat = _natural_step(scan.stats[site], rec)
        for key, which, step in (("realised_gain_population", "population", V), ("realised_gain_test", "test", V),
                                 ("realised_gain_natural_population", "population", V_nat)):
            x, y = getattr(w, which)
            out[key].append(loss_change(net, site, block, step, as_model_dtype(net, x), y, w.loss))
        out["gain_bound_natural"].append(rec["gain_bound_natural"])
        out["depths"].append(int(depth))
        out["AG_max"].append(max(r["AG_max"] for r in scan.result["sites"]))
        out["L_test"].append(risk(net, w, "test")[0])
        out["R"].append(risk(net, w, "population")[0])
        out["best_site"].append(site)
        out["saturated"].append(model["saturated"])
        out["gain_bound"].append(rec["gain_bound_euclidean"])
    return out


def _natural_step(acc, rec) -> torch.Tensor:
    """Theorem 1's step along ``-G Sigma_phi^+`` (GroMo's direction): ``V = -(slope / beta_natural) D^``."""
    from numerics._numerics import psd_pinv

    if not rec["beta_natural"]:
        return torch.zeros_like(acc.G)
    D = acc.G @ psd_pinv(acc.Sigma)
    D_hat = D / D.norm()
    return -(float((acc.G * D_hat).sum()) / rec["beta_natural"]) * D_hat


def _first_order_objective(net, site: str, block, x, y, loss):
    from numerics._numerics import per_sample_loss
    from numerics.families import from_tokens
    from numerics.sites import add_at_site

    def objective(V):
        with add_at_site(net, site, lambda u: from_tokens(block.phi(u) @ V.T.to(u.dtype), u)):
            return per_sample_loss(net(x), y, loss).mean()
    return objective


def _optimizer_steps(objective, shape, dtype, lr: float) -> dict:
    from numerics.training import OPTIMIZERS, _make_optimizer

    V0 = torch.zeros(shape, dtype=dtype, requires_grad=True)
    (G,) = torch.autograd.grad(objective(V0), V0)
    out = {}
    for name in OPTIMIZERS:
        V = torch.zeros(shape, dtype=dtype, requires_grad=True)
        opt = _make_optimizer(name, [V], lr)   # zero state (THEORY §8)
        V.grad = torch.autograd.grad(objective(V), V)[0]
        opt.step()
        step = V.detach()
        inner = float((step * G).sum())
        with torch.no_grad():
            R0 = objective(torch.zeros_like(step))
            change = float(objective(step) - R0)
            eps = 1e-4   # first-order change along the step by a central finite difference
            slope = float((objective(eps * step) - objective(-eps * step)) / (2 * eps))
        out[name] = {"inner_with_G": inner, "first_order_change": slope, "step_norm": float(step.norm()),
                     "loss_change": change, "descends": inner < 0}
    return {"G_norm": float(G.norm()), "optimizers": out}


def optimizer_invariance(config: Mapping, *, lr: float = 1e-4) -> dict:
    """THEORY §8 on a network: the first step of zero-state SGD, momentum and Adam has
    ``<step, G> < 0`` iff ``G != 0``; at a saturated site no such step lowers the loss to first order.

    Cases (the objective is the probe risk with exact conditional targets, so ``G`` is the
    population-style gradient of the block): ``improvable`` -- the too-shallow reference at
    its best site; ``saturated`` -- the teacher itself as the model (``m_bar = 0`` at every
    site, so ``G = 0`` exactly). Needs a teacher task.
    """
    from plumbing.validation import InputError

    cfg = validate_grow_config(config)
    if cfg["task"]["kind"] not in ("regression", "classification"):
        raise InputError("task.kind", "a teacher task (regression or classification: exact saturation needs the "
                         "teacher as the model)", cfg["task"]["kind"])
    streams = Streams(cfg["seed"], cfg["data_seed"])
    w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
    net, _ = reference_network(cfg, w, streams)
    x = as_model_dtype(net, w.probe[0])
    soft = w.soft(w.probe[0])
    site = scan_with_state(net, w, cfg["saturation"], streams).result["model"]["best_site"]
    teacher, t_site = w.task.net, f"norms.{w.task.net.depth - 1}" if w.task.net.depth else "embed_norm"
    cases = {}
    for name, model, s in (("improvable", net, site), ("saturated", teacher, t_site)):
        block = block_for(model, s, _state_shape(model, s, x[:2]), cfg["saturation"], streams, "invariance")
        obj = _first_order_objective(model, s, block, x.to(block.V.dtype), soft.to(block.V.dtype), w.loss)
        cases[name] = {"site": s, **_optimizer_steps(obj, block.V.shape, block.V.dtype, lr)}
    return {"cases": cases, "lr": lr,
            "holds": all(o["descends"] for o in cases["improvable"]["optimizers"].values())
            and cases["saturated"]["G_norm"] < 1e-10,
            "notes": ["first_order_change = d/dt R(t step) at t = 0 (central difference) equals <step, G>: "
                      "negative at the improvable site for every optimiser, 0 at the saturated one; loss_change = "
                      "R(step) - R(0) at the optimiser's lr includes second-order terms (Adam's first step "
                      "-lr G/(|G| + eps) moves every coordinate by ~lr)"]}


def _state_shape(net, site: str, x):
    from numerics.sites import SiteProbe

    with torch.no_grad(), SiteProbe(net, [site]) as probe:
        net(x)
    return tuple(probe.states[site].shape[1:])
