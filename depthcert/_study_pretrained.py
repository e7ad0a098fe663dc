"""``depthcert study pretrained``: where to insert a block into MiniLM-L6 (post-LN BERT), does it help,
and LLaMA-Pro's control (an existing layer tuned with the same budget).

Stages (every sample has one role, :mod:`numerics.studies.pretrained._corpus`):
1. ``f_old``: MiniLM's encoder (frozen) with BERT's MLM head trained alone on the reference sample.
2. The scan: :func:`depthcert.saturation` at every layer boundary ``encoder.layer.*`` on the probe
   (curvature: the signal sample), and its cost against one forward+backward over the same probe.
3. The arms, paired by seed (the seed draws the masks of ``S`` and ``T`` and the minibatch order; the
   block's features are the scan's, fixed by its seed): a block after every layer (so (a) the scan's best site, (b) LLaMA-Pro's uniform
   rule -- with one new block for six layers, after the last layer --, (c) the worst-scored site are
   three of them), (d) no new block, the existing layer at the best site tuned, (e) nothing trained.
   Same optimiser (Adam), learning rate, steps and minibatches in every arm (**Choice**: the values of
   :data:`DEFAULTS`). Held-out MLM loss on ``T``; per-arm differences to (e) paired by seed.
4. Does the scan's ranking of sites predict the realised gains? Spearman's rho with a bootstrap interval.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

__all__ = ["DEFAULTS", "QUICK", "run_pretrained"]

#: **Choice**: the study's sizes (``depthcert study pretrained``), fixed before any run.
DEFAULTS = {"seq_len": 64, "n_mask": 9, "head_steps": 300, "head_lr": 2e-3, "head_batch": 64, "probe_n": 256,
            "curvature_n": 128, "cert_s_n": 256, "cert_erm_steps": 5, "seeds": 5, "steps": 40, "batch": 16, "lr": 3e-4, "width": 16, "threads": 2}
#: light sizes for ``--quick`` and the tests (a small slice: the machinery, not the question).
QUICK = dict(DEFAULTS, head_steps=40, probe_n=48, curvature_n=32, cert_s_n=32, cert_erm_steps=1, seeds=2, steps=4, batch=8,
             s_n=64, t_n=48)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _f_old(cfg: dict, log):
    from numerics.interop.pretrained import minilm
    from numerics.studies.pretrained._corpus import MaskedCorpus
    from numerics.studies.pretrained._mlm import MLMNet, train_head

    bert, tok = minilm()
    corpus = MaskedCorpus.build(tok, cfg["seq_len"], cfg["n_mask"], mask_seed=0)
    with torch.random.fork_rng():   # the head's initialisation is seeded (the study is reproducible)
        torch.manual_seed(0)
        net = MLMNet(bert, corpus.mask_id, corpus.n_mask).eval()
    x, y = corpus.sample("reference_sample")
    losses = train_head(net, x, y, cfg["head_steps"], cfg["head_lr"], cfg["head_batch"], seed=0)
    log(f"f_old: MLM head trained on {x.shape[0]} reference sequences, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return net, tok, corpus


def _scan(net, corpus, cfg: dict, log) -> tuple:
    from depthcert.api import saturation
    from numerics.studies.pretrained._mlm import mlm_loss

    probe = corpus.sample("probe", min(cfg["probe_n"], corpus.x["probe"].shape[0]), seed=0)
    curv = corpus.sample("signal", min(cfg["curvature_n"], corpus.x["signal"].shape[0]), seed=0)

    def fwd_bwd():
        for xb, yb in zip(probe[0].split(64), probe[1].split(64)):
            mlm_loss(net(xb), yb).sum().backward()
    for p in net.parameters():
        p.requires_grad_(True)
    _, t_base = _timed(fwd_bwd)
    net.zero_grad(set_to_none=True)
    for p in net.parameters():
        p.requires_grad_(False)
    rep, t_scan = _timed(lambda: saturation(net, probe, loss=mlm_loss, sites="encoder.layer.*", curvature_data=curv,
                                            width=cfg["width"], batch_size=64, curvature_n=curv[0].shape[0], n_chunks=8))
    log(f"scan: {rep.verdict}, best site {rep.best_site}; {t_scan:.1f} s = {t_scan / t_base:.2f}x one forward+backward "
        f"({t_base:.1f} s) over the {probe[0].shape[0]} probe sequences")
    return rep, {"scan_s": t_scan, "forward_backward_s": t_base, "ratio": t_scan / t_base, "n_probe": int(probe[0].shape[0])}


def _seed_samples(tok, cfg: dict, seed: int, net):
    """``(S, T)`` re-masked with ``mask_seed = seed``: ``(states, positions, targets)`` each."""
    from numerics.studies.pretrained._arms import encoder_states
    from numerics.studies.pretrained._corpus import MaskedCorpus

    c = MaskedCorpus.build(tok, cfg["seq_len"], cfg["n_mask"], mask_seed=seed)
    out = []
    for role, key in (("S", "s_n"), ("T", "t_n")):
        n = cfg.get(key)
        x, y = c.sample(role, None if n is None else min(n, c.x[role].shape[0]), seed=seed)
        out.append((encoder_states(net, x), net.positions(x), y))
    return out


def _arms_of_seed(net, rep, tok, cfg: dict, seed: int, sites: list[str]) -> dict:
    """Held-out per-sequence losses of every arm for one seed."""
    from depthcert.api import insert_block
    from numerics.families import ProtocolBlock
    from numerics.studies.pretrained._arms import heldout_losses, train_arm

    S, T = _seed_samples(tok, cfg, seed, net)
    L = len(net.encoder.layer)
    out = {"none": heldout_losses(net, list(net.encoder.layer), L, *T).numpy()}
    run = dict(steps=cfg["steps"], batch=cfg["batch"], lr=cfg["lr"], seed=seed)
    for k, site in enumerate(sites):
        grown = insert_block(net, site, family="readout", init="zero", scan=rep)
        block = next(m for m in grown.modules() if isinstance(m, ProtocolBlock))
        res = train_arm(net, {"kind": "block", "site": k, "block": block}, S, T, **run)
        out[f"block@{k}"], out[f"n_params_block@{k}"] = res["heldout"].numpy(), res["n_params"]
    best = sites.index(rep.best_site)
    res = train_arm(net, {"kind": "layer", "site": best}, S, T, **run)
    out["layer_tuned"], out["n_params_layer"] = res["heldout"].numpy(), res["n_params"]
    return out


def _certificate(net, rep, corpus, cfg: dict, log) -> dict:
    """``dc.certify_insertion`` for arm (a) on signal / S / T (mask seed 0), every route, and the held-out test."""
    from depthcert.api import certify_insertion
    from numerics.studies.pretrained._mlm import loss_bound, mlm_loss
    from numerics.studies.pretrained._stats import heldout_paired

    sure = loss_bound(net.head)
    n_s = cfg.get("cert_s_n")
    S = corpus.sample("S", None if n_s is None else min(n_s, corpus.x["S"].shape[0]), seed=0)
    cert, t = _timed(lambda: certify_insertion(net, rep.best_site, signal=corpus.sample("signal"), S=S,
                                               T=corpus.sample("T"), loss=mlm_loss, B=sure["B"],
                                               erm_steps=cfg["cert_erm_steps"], batch_size=64))
    rows = [{k: r.get(k) for k in ("route", "bound", "certified", "missing", "failure_probability") if k in r}
            for r in cert.rows]
    log(f"certificate at {rep.best_site}: {cert.route} certified={cert.certified} bound={cert.bound} ({t:.0f} s)")
    q = cert.quantities
    return {"site": rep.best_site, "route": cert.route, "certified": bool(cert.certified), "bound": cert.bound,
            "L_test_old": cert.quantities.get("L_test_old", cert.quantities.get("L_T_old")), "rows": rows, "seconds": t,
            "constants": {"B": sure["B"], "B_is": "sure: ln V + 2 max|logit| through the head's LayerNorm and tied decoder",
                          "L_top": "not derivable (attention and LayerNorm above the site)", "kappa": "not derivable",
                          "rho_phi": "plug-in on the signal sample (certify_insertion's default)"},
            "M": int(S[0].shape[0]),
            "heldout_paired": heldout_paired(q["L_T_new"] - q["L_T_old"], q["var_T_dnew"], int(q["K"]), sure["B"])
            if "L_T_new" in q else {"not_run": "; ".join(cert.notes) or "no f_new was measured on T"}}


def _summary(per_seed: list[dict], rep, sites: list[str]) -> dict:
    from numerics.studies.pretrained._stats import paired_interval, rank_correlation

    scores = [rep.site(s)["P_readout"] for s in sites]
    best, worst = sites.index(rep.best_site), int(np.argmin(scores))
    arms = [("a_scan_best_site", f"block@{best}", f"one block after {sites[best]} (the scan's best site), only it trained"),
            ("b_llama_pro_uniform", f"block@{len(sites) - 1}", "one block where LLaMA-Pro's uniform rule puts one new "
             f"block among {len(sites)} layers: after the last group, {sites[-1]}"),
            ("c_worst_scored_site", f"block@{worst}", f"one block after {sites[worst]} (the lowest readout score)"),
            ("d_existing_layer_tuned", "layer_tuned", f"no new block: {sites[best]} itself tuned (LLaMA-Pro #9's control)"),
            ("e_nothing_trained", "none", "f_old")]
    rows = []
    for name, key, what in arms:
        losses = np.array([float(np.mean(s[key])) for s in per_seed])
        base = np.array([float(np.mean(s["none"])) for s in per_seed])
        n_par = per_seed[0].get("n_params_layer") if key == "layer_tuned" else per_seed[0].get(f"n_params_{key}", 0)
        rows.append({"name": name, "what": what, "heldout_loss": float(losses.mean()),
                     "paired_interval": paired_interval(base - losses), "trained_parameters": int(n_par or 0)})
    gains = [[float(np.mean(s["none"]) - np.mean(s[f"block@{k}"])) for k in range(len(sites))] for s in per_seed]
    return {"arms": rows, "rank_correlation": rank_correlation(scores, gains),
            "sites": [{"site": s, "P_readout": sc, "realised_gain": float(np.mean([g[k] for g in gains]))}
                      for k, (s, sc) in enumerate(zip(sites, scores))]}


def run_pretrained(out_dir, *, quick: bool = False, config: dict | None = None, progress: bool = True) -> dict:
    """Run the study; write ``study.json`` and ``report.md`` (with figures) to ``out_dir``; return the study."""
    from tqdm import tqdm

    from numerics.studies.pretrained._report import write_report

    cfg = dict(QUICK if quick else DEFAULTS, **(config or {}))
    torch.set_num_threads(int(cfg["threads"]))
    log = (lambda m: tqdm.write(m)) if progress else (lambda m: None)
    t0 = time.perf_counter()
    net, tok, corpus = _f_old(cfg, log)
    rep, cost = _scan(net, corpus, cfg, log)
    sites = [r["site"] for r in rep.sites]
    per_seed = [_arms_of_seed(net, rep, tok, cfg, s, sites)
                for s in tqdm(range(int(cfg["seeds"])), desc="arms (seeds)", unit="seed", disable=not progress)]
    certificate = _certificate(net, rep, corpus, cfg, log)
    study = dict(_summary(per_seed, rep, sites), scan_cost_ratio=cost["ratio"], scan_cost=cost, config=cfg,
                 certificate=certificate,
                 scan={"verdict": rep.verdict, "best_site": rep.best_site, "table": rep.to_dict()["sites"]},
                 roles={r: {"sequences": int(corpus.x[r].shape[0]), "documents": len(corpus.docs[r])} for r in corpus.x},
                 wall_s=time.perf_counter() - t0)
    write_report(study, Path(out_dir), rep)
    return study
