"""The MNIST-1D cells of ``depthcert reproduce --suite mnist1d*``: one runner per cell kind.

Each runner takes one validated cell config (a ``depthcert saturation`` / ``grow`` config on
``task.kind = "mnist1d"``, ``model.kind = "cnn1d"``, plus a ``[cell]`` section naming the
kind) and returns one JSON-ready record. They run as sweep cells
(:func:`numerics.studies.sweeps.sweep` with ``runner = "...:run_cell"`` and
``validate = validate_cell``): stored per cell under its config hash, resumable, on the
local or the Ray backend. Every sample has a role (:mod:`numerics.workloads`): the network
is trained on its own i.i.d. sample (``reference_sample``); the scan and the covariance use
the ``probe`` sample; test loss the ``T`` sample; ``R`` and the realised insertion gains
the ``population`` sample; all independent draws of the generator.

Kinds (``cell.format``: 2 for the depth cells since the conventions registry, see
:data:`numerics.studies.reproduce._mnist1d_signals.CELL_FORMAT`):

* ``depth`` -- train a :class:`numerics.zoo_cnn1d.ResCNN1d` at depth ``D`` and width ``W``
  with the fixed recipe of ``[reference]``; then the saturation study's scan
  (:func:`numerics.studies.saturation.scan_with_state`) gives per site ``AG_max``,
  ``||G_l||`` (plug-in, protocol block) and the realised loss reduction of Theorem 1's
  step along ``-G`` (``realised_gain_euclidean``); the per-channel covariance of the
  activation gradients at each site (:func:`channel_covariance`). The record carries the
  keys the run study's figures and Appendix M fit read (``R_old``, ``R_old_stderr``,
  ``diagnostics.sites``), so :mod:`numerics.studies.scaling` and
  :mod:`numerics.studies.figures` apply unchanged.
* ``risk`` -- the same training, only the losses (the depth x width grid).
* ``growth`` -- grown vs scratch at the same final architecture and step budget for one
  seed (:func:`numerics.studies.growth.growth_vs_scratch_study`, public).
* ``own_block`` -- growth vs scratch as Paper B ran it: the network's own block inserted
  function-preservingly, equal counted steps and sample-gradients
  (:func:`numerics.studies.reproduce._own_block_cell.own_block_cell`).
"""
from __future__ import annotations

import time
from typing import Mapping

import torch

from plumbing.validation import InputError

__all__ = ["CELL_KINDS", "channel_covariance", "run_cell", "validate_cell"]

#: The cell kinds and what each measures (docstring of ``numerics.studies.reproduce._mnist1d_cells``).
CELL_KINDS = ("depth", "risk", "growth", "own_block")


def validate_cell(config: Mapping) -> dict:
    """``config`` checked by the study its kind runs (saturation or grow), merged over its defaults.

    Raises:
        InputError: no ``cell.kind`` among :data:`CELL_KINDS`, a workload other than MNIST-1D
            with a 1-D CNN, or what the study's own ``validate_config`` refuses.
    """
    from numerics.studies.growth import validate_grow_config

    config = dict(config)
    cell = dict(config.pop("cell", {}))
    if cell.get("kind") not in CELL_KINDS or not set(cell) <= {"kind", "format"} or cell.get("format", 1) not in (1, 2):
        raise InputError("cell", f"a table with kind in {list(CELL_KINDS)} and optionally format 1 or 2", cell)
    cfg = validate_grow_config(config)
    if (cfg["task"]["kind"], cfg["model"].get("kind")) != ("mnist1d", "cnn1d"):
        raise InputError("task.kind, model.kind", "'mnist1d', 'cnn1d' (the MNIST-1D cells)",
                         (cfg["task"]["kind"], cfg["model"].get("kind")))
    return {**cfg, "cell": cell}


@torch.no_grad()
def _no_grad_risks(net, w) -> dict:
    from numerics.workloads import risk

    out = {}
    for key, which in (("L_train", "train"), ("L_test", "test"), ("R_old", "population")):
        out[key], out[key + "_stderr"] = risk(net, w, which)
    x, y = w.test
    logits = torch.cat([net(x[i:i + 4096].to(next(net.parameters()).dtype)) for i in range(0, x.shape[0], 4096)])
    out["acc_test"] = float((logits.argmax(1) == y).double().mean())
    return out


def channel_covariance(net, sites, x: torch.Tensor, y: torch.Tensor, loss: str, batch_size: int = 512) -> list[dict]:
    """Per site: (A3) of the per-channel activation gradients, positions pooled.

    ``m_i = d loss(f(x_i), y_i) / d u_site`` has shape ``(C, L)`` at a conv site; the
    covariance is that of the channel vector ``m_i[:, p]`` over samples ``i`` and positions
    ``p`` (**Choice**: positions pooled, one ``C x C`` matrix per site; THEORY §9's claim
    is about channels), computed by :func:`numerics.estimators.covariance_diagnostics`.

    Args:
        net: a network in eval mode; sites: its site names; x ``(n, 1, L)``, y ``(n,)``.

    Returns:
        One dict per site: ``offdiag_ratio``, ``spectral_norm``, ``trace``, ``effective_rank``.
    """
    from numerics.estimators import covariance_diagnostics
    from numerics.studies.reproduce._mnist1d_signals import activation_gradients

    ms = activation_gradients(net, sites, x, y, loss, batch_size)
    out = []
    for s in sites:
        m = ms[s]
        rows = m.movedim(1, -1).reshape(-1, m.shape[1]) if m.dim() == 3 else m
        out.append(covariance_diagnostics(rows))
    return out


def _sites(scan_result: Mapping, cov: list[dict]) -> dict:
    """Per site, from the scan: ``||G_l||`` (plug-in), its standard error, AG_max, the gains; and (A3) per channel.

    The standard error of the mean ``G = (1/n) sum_i X_i`` in Frobenius norm is
    ``sqrt((sum_i ||X_i||^2 - n ||G||^2) / (n (n-1)))`` (as :func:`numerics.diagnostics.site_signals`);
    with the U-statistic ``U = (||sum X_i||^2 - sum ||X_i||^2) / (n (n-1))`` it equals
    ``sqrt(||G||^2 - U)``: read from the scan's two estimates of ``||G||^2``, no per-sample pass.
    """
    recs = scan_result["sites"]
    g = [max(r["G_sq_plugin"], 0.0) ** 0.5 for r in recs]
    top = max(range(len(g)), key=g.__getitem__)
    return {"names": [r["site"] for r in recs], "AG_max": [r["AG_max"] for r in recs], "G_norm": g,
            "G_norm_stderr": [max(r["G_sq_plugin"] - r["G_sq"], 0.0) ** 0.5 for r in recs],
            "G_sq_ustat": [r["G_sq"] for r in recs],
            "realised_gain": [r["realised_gain_euclidean"] for r in recs],
            "gain_bound": [r["gain_bound_euclidean"] for r in recs],
            "offdiag_ratio": [c["offdiag_ratio"] for c in cov], "effective_rank": [c["effective_rank"] for c in cov],
            "argmax": top, "s_max": g[top]}


def _trained(cfg: Mapping):
    from numerics.seeding import Streams
    from numerics.studies.saturation import reference_network
    from numerics.workloads import make_workload

    streams = Streams(cfg["seed"], cfg["data_seed"])
    w = make_workload(cfg, streams, cfg["saturation"]["probe_n"])
    net, _ = reference_network(cfg, w, streams)
    return net.eval(), w, streams


def _conventions(net, w, names, batch_size: int) -> dict:
    """Format 2: the per-site statistics of :func:`numerics.studies.reproduce._mnist1d_signals.site_conventions`."""
    from numerics.studies.reproduce._mnist1d_signals import activation_gradients, site_conventions

    dtype = next(net.parameters()).dtype
    grads = {role: activation_gradients(net, names, x.to(dtype), y, w.loss, batch_size)
             for role, (x, y) in (("probe", w.probe), ("train", w.train))}
    return site_conventions(grads["probe"], grads["train"])


def depth_cell(cfg: Mapping, scan: bool = True) -> dict:
    """Train at ``model.depth`` / ``model.width``, then (``scan``) the per-site measurements
    (docstring of ``numerics.studies.reproduce._mnist1d_cells``)."""
    from numerics.studies.saturation import scan_with_state

    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg["seed"])
        net, w, streams = _trained(cfg)
        t_train = time.perf_counter() - t0
        rec = {"config": dict(cfg), "depth": net.depth, "width": net.width, **_no_grad_risks(net, w)}
        if scan:
            res = scan_with_state(net, w, cfg["saturation"], streams).result
            x, y = w.probe
            cov = channel_covariance(net, [r["site"] for r in res["sites"]], x, y, w.loss,
                                     cfg["saturation"]["batch_size"])
            sites = _sites(res, cov)
            if cfg["cell"].get("format", 1) >= 2:
                sites.update(_conventions(net, w, sites["names"], cfg["saturation"]["batch_size"]))
            rec["diagnostics"] = {"sites": sites}
            rec["AG_max"] = max(sites["AG_max"])
            rec["model_saturated"] = res["model"]["saturated"]
    rec["timings"] = {"train_s": t_train, "total_s": time.perf_counter() - t0}
    return rec


def growth_cell(cfg: Mapping) -> dict:
    """Grown vs scratch for the cell's seed (``seed = data_seed``), the growth study's public function."""
    from numerics.studies.growth import growth_vs_scratch_study

    t0 = time.perf_counter()
    study = {k: v for k, v in cfg.items() if k != "cell"}
    res = growth_vs_scratch_study(study, seeds=[cfg["seed"]])
    return {"config": dict(cfg), **res["per_seed"][0], "notes": res["notes"],
            "timings": {"total_s": time.perf_counter() - t0}}


def run_cell(config: Mapping) -> dict:
    """The sweep runner: dispatch on ``config["cell"]["kind"]`` (``config`` as :func:`validate_cell` returns it)."""
    cfg = validate_cell(config)
    kind = cfg["cell"]["kind"]
    if kind == "growth":
        return growth_cell(cfg)
    if kind == "own_block":
        from numerics.studies.reproduce._own_block_cell import own_block_cell

        return own_block_cell(cfg)
    return depth_cell(cfg, scan=kind == "depth")
