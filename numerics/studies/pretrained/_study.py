"""``depthcert study pretrained``: where to insert a block into MiniLM-L6 (post-LN BERT), does it help,
and LLaMA-Pro's control (an existing layer tuned with the same budget).

``f_old``: MiniLM's encoder (frozen) with BERT's MLM head trained alone on the reference sample (its
documents are in no other role under any seed), once. Every seed then redraws which of the other
documents go to signal, probe, ``S`` and ``T`` (``split_seed = seed``, disjoint by document), the masks
(``mask_seed = seed``) and the arms' minibatches. Per seed (every sample has one role,
:mod:`numerics.studies.pretrained._corpus`):

1. The seed's corpus: its split and masks (the reference sample keeps its documents).
2. The scan: :func:`depthcert.saturation` at every layer boundary ``encoder.layer.*`` on the seed's probe
   (curvature: its signal sample); seed 0's scan is the one reported (``scan``), with its cost against
   one forward+backward over the same probe.
3. The arms, trained on the seed's ``S`` and tested on its ``T`` (the block's features are the seed's
   scan's): a block after every layer (so (a) the seed's scan's ``best_site``, (b) LLaMA-Pro's uniform
   rule -- with one new block for six layers, after the last layer --, (c) the site with the lowest
   ``predicted_gain``, the score ``best_site`` maximises, are three of them), (d) no new block, the
   existing layer at the best site tuned, (e) nothing trained. Same optimiser (Adam), learning rate,
   steps and minibatches in every arm (**Choice**: the values of :data:`DEFAULTS`). Held-out MLM loss
   on ``T``; per-arm differences to (e) paired by seed.
4. Does the scan's ranking of sites predict the realised gains? Spearman's rho of every score the scan
   ranks by (``predicted_gain`` first: ``best_site`` uses it), with exact permutation p-values over the
   sites and the spread of the per-seed rho (:func:`numerics.studies.pretrained._stats.rank_correlations`);
   and the same question asked as a user asks it (``calibration``): :func:`depthcert.calibration` over the
   per-seed scores and gains at the horizon ``steps``, read by ``SaturationReport.with_calibration`` for the
   score seed 0's scan ranks by -- its note (no evidence: ask ``dc.trial_insertion``) is attached to the
   reported scan (``scan.calibration_note``, ``scan.predictive``).

Seed 0's ``f_old`` also gets the certificate of arm (a) (``certificate``).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

__all__ = ["DEFAULTS", "QUICK", "run_pretrained"]

#: **Choice**: the study's sizes (``depthcert study pretrained``), fixed before any run.
DEFAULTS = {"seq_len": 64, "n_mask": 9, "head_steps": 300, "head_lr": 2e-3, "head_batch": 64, "probe_n": 256,
            "curvature_n": 128, "cert_s_n": 256, "cert_erm_steps": 5, "seeds": 10, "steps": 40, "batch": 16, "lr": 3e-4, "width": 16, "threads": 2}
#: light sizes for ``--quick`` and the tests (a small slice: the machinery, not the question).
QUICK = dict(DEFAULTS, head_steps=40, probe_n=48, curvature_n=32, cert_s_n=32, cert_erm_steps=1, seeds=2, steps=4, batch=8,
             s_n=64, t_n=48)


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _f_old(cfg: dict, log, model=None):
    """``(net, tok, head losses)``: the head initialised and trained from seed 0 on the reference sample
    (mask seed 0; ``model``: ``(bert, tok)``; ``cfg["source"]``, default ``"pydoc"``: the corpus's documents)."""
    from numerics.interop.pretrained import minilm
    from numerics.studies.pretrained._corpus import MaskedCorpus
    from numerics.studies.pretrained._mlm import MLMNet, train_head

    bert, tok = model or minilm()
    corpus = MaskedCorpus.build(tok, cfg["seq_len"], cfg["n_mask"], mask_seed=0, source=cfg.get("source", "pydoc"))
    with torch.random.fork_rng():   # the head's initialisation is seeded (the study is reproducible)
        torch.manual_seed(0)
        net = MLMNet(bert, corpus.mask_id, corpus.n_mask).eval()
    x, y = corpus.sample("reference_sample")
    losses = train_head(net, x, y, cfg["head_steps"], cfg["head_lr"], cfg["head_batch"], seed=0)
    log(f"f_old: MLM head trained on {x.shape[0]} reference sequences, loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    return net, tok, [float(losses[0]), float(losses[-1])]


def _scan(net, corpus, cfg: dict, log, seed: int = 0, timed: bool = True) -> tuple:
    from numerics.user_network import saturation
    from numerics.studies.pretrained._mlm import mlm_loss

    probe = corpus.sample("probe", min(cfg["probe_n"], corpus.x["probe"].shape[0]), seed=seed)
    curv = corpus.sample("signal", min(cfg["curvature_n"], corpus.x["signal"].shape[0]), seed=seed)

    def fwd_bwd():
        for xb, yb in zip(probe[0].split(64), probe[1].split(64)):
            mlm_loss(net(xb), yb).sum().backward()
    t_base = None
    if timed:
        for p in net.parameters():
            p.requires_grad_(True)
        _, t_base = _timed(fwd_bwd)
        net.zero_grad(set_to_none=True)
        for p in net.parameters():
            p.requires_grad_(False)
    rep, t_scan = _timed(lambda: saturation(net, probe, loss=mlm_loss, sites="encoder.layer.*", curvature_data=curv,
                                            width=cfg["width"], batch_size=64, curvature_n=curv[0].shape[0], n_chunks=8))
    cost = f"; {t_scan:.1f} s = {t_scan / t_base:.2f}x one forward+backward ({t_base:.1f} s)" if timed else f"; {t_scan:.1f} s"
    log(f"seed {seed}: scan {rep.verdict}, best site {rep.best_site}{cost} over the {probe[0].shape[0]} probe sequences")
    return rep, {"scan_s": t_scan, "forward_backward_s": t_base, "ratio": t_scan / t_base if timed else None,
                 "n_probe": int(probe[0].shape[0])}


def _seed_samples(corpus, cfg: dict, seed: int, net):
    """``(S, T)`` of the seed's corpus (its split and masks): ``(states, positions, targets)`` each."""
    from numerics.studies.pretrained._arms import encoder_states

    c = corpus
    out = []
    for role, key in (("S", "s_n"), ("T", "t_n")):
        n = cfg.get(key)
        x, y = c.sample(role, None if n is None else min(n, c.x[role].shape[0]), seed=seed)
        out.append((encoder_states(net, x), net.positions(x), y))
    return out


def _arms_of_seed(net, rep, corpus, cfg: dict, seed: int, sites: list[str]) -> dict:
    """Held-out per-sequence losses of every arm for one seed."""
    from numerics.user_network import insert_block
    from numerics.families import ProtocolBlock
    from numerics.studies.pretrained._arms import heldout_losses, train_arm

    S, T = _seed_samples(corpus, cfg, seed, net)
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


def _one_seed(net, tok, cfg: dict, seed: int, log) -> tuple:
    """One seed end to end: its split and masks, scan and arms. Returns ``(rep, corpus, cost, record)``."""
    from numerics.studies.pretrained._corpus import MaskedCorpus
    from numerics.studies.pretrained._stats import SCORES

    corpus = MaskedCorpus.build(tok, cfg["seq_len"], cfg["n_mask"], mask_seed=seed, split_seed=seed)
    rep, cost = _scan(net, corpus, cfg, log, seed, timed=seed == 0)
    sites = [r["site"] for r in rep.sites]
    rec = _arms_of_seed(net, rep, corpus, cfg, seed, sites)
    table = {r["site"]: r for r in rep.to_dict()["sites"]}
    rec.update(seed=seed, sites=sites, best_site=rep.best_site, verdict=rep.verdict, ranked_by=rep.ranked_by,
               scores={name: [table[s].get(name) for s in sites] for name in SCORES},
               roles={r: {"sequences": int(corpus.x[r].shape[0]), "documents": len(corpus.docs[r])} for r in corpus.x})
    return rep, corpus, cost, rec


def _certificate(net, rep, corpus, cfg: dict, log) -> dict:
    """``dc.certify_insertion`` for arm (a) on signal / S / T (mask seed 0), every route, and the held-out test."""
    from numerics.user_network import certify_insertion
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


def _picks(per_seed: list[dict], sites: list[str]) -> str:
    """``encoder.layer.4 (seeds 0, 3), ...``: the sites a per-seed choice fell on."""
    by = {}
    for s in per_seed:
        by.setdefault(s["_pick"], []).append(str(s["seed"]))
    return ", ".join(f"{sites[k]} (seed{'s' if len(v) > 1 else ''} {', '.join(v)})" for k, v in sorted(by.items()))


def _calibration(per_seed: list[dict], sites: list[str], scores: dict, gains, steps) -> dict | None:
    """:func:`depthcert.calibration` of the scores (those finite at every site) against the realised gains at the
    horizon ``steps`` (each seed its own scores and gains), and its judgement of the score ``best_site`` is ranked
    by (:func:`numerics.user_network._ranking.calibration_judgement`, the line of ``SaturationReport.with_calibration``);
    None with fewer than 3 sites (no rank test)."""
    import json

    import pandas as pd

    from numerics.user_network import calibration
    from numerics.user_network._ranking import calibration_judgement

    names = [n for n, v in scores.items() if v.shape == gains.shape and np.isfinite(v).all()]
    ranked_by = per_seed[0].get("ranked_by", "predicted_gain")
    if len(sites) < 3 or ranked_by not in names:
        return None
    rows = [{"seed": s["seed"], "site": site, "horizon": steps, "realised_gain": float(gains[i, k]),
             **{n: float(scores[n][i, k]) for n in names}} for i, s in enumerate(per_seed) for k, site in enumerate(sites)]
    calib = calibration(pd.DataFrame(rows), scores=names)   # its slope is horizon 0's (the jumpboard): not this table's
    calib = calib.drop(columns=[c for c in calib.columns if c.startswith("slope") or c == "intercept"])
    return {"horizon": steps, "ranked_by": ranked_by, "judgement": calibration_judgement(calib, ranked_by),
            "table": json.loads(calib.to_json(orient="records")),
            "how": f"dc.calibration over the {len(sites)} sites (site means over the {len(per_seed)} seeds; exact "
                   f"permutations), horizon = the arms' {steps} steps; read for ranked_by as "
                   "SaturationReport.with_calibration reads it"}


def _summary(per_seed: list[dict], sites: list[str], steps: int | None = None) -> dict:
    from numerics.studies.pretrained._stats import SCORES, paired_interval, rank_correlations

    L = len(sites)
    best = [sites.index(s["best_site"]) for s in per_seed]
    worst = [int(np.argmin(s["scores"]["predicted_gain"])) for s in per_seed]
    gains = np.array([[float(np.mean(s["none"]) - np.mean(s[f"block@{k}"])) for k in range(L)] for s in per_seed])
    arms = [("a_scan_best_site", [f"block@{k}" for k in best], "one block after each seed's best site (the scan's pick, by "
             "predicted_gain: " + _picks([dict(s, _pick=k) for s, k in zip(per_seed, best)], sites) + "), only it trained"),
            ("b_llama_pro_uniform", [f"block@{L - 1}"] * len(per_seed), "one block where LLaMA-Pro's uniform rule puts one new "
             f"block among {L} layers: after the last group, {sites[-1]}"),
            ("c_worst_scored_site", [f"block@{k}" for k in worst], "one block after each seed's lowest-scored site (lowest "
             "predicted_gain, the score best_site maximises: " + _picks([dict(s, _pick=k) for s, k in zip(per_seed, worst)], sites) + ")"),
            ("d_existing_layer_tuned", ["layer_tuned"] * len(per_seed), "no new block: each seed's best site itself tuned "
             "(LLaMA-Pro #9's control)"),
            ("e_nothing_trained", ["none"] * len(per_seed), "f_old")]
    rows = []
    base = np.array([float(np.mean(s["none"])) for s in per_seed])
    for name, keys, what in arms:
        losses = np.array([float(np.mean(s[key])) for s, key in zip(per_seed, keys)])
        key = keys[0]
        n_par = per_seed[0].get("n_params_layer") if key == "layer_tuned" else per_seed[0].get(f"n_params_{key}", 0)
        rows.append({"name": name, "what": what, "heldout_loss": float(losses.mean()),
                     "paired_interval": paired_interval(base - losses), "trained_parameters": int(n_par or 0)})
    scores = {name: np.array([[np.nan if v is None else float(v) for v in s["scores"][name]] for s in per_seed])
              for name in SCORES}
    rcs = rank_correlations(scores, gains)
    readout = next(r for r in rcs if r["score"] == "P_readout")
    legacy = {"value": readout["rho"], "interval": readout["interval"], "level": readout["interval_level"],
              "method": "Spearman of P_readout (not the score best_site uses: see rank_correlations); interval: "
                        "percentiles of the per-seed rho", "n_sites": readout["n_sites"], "n_seeds": readout["n_seeds"],
              "score": "P_readout", "p_one_sided": readout["p_one_sided"], "p_two_sided": readout["p_two_sided"]}
    # where the scan's pick lands among the realised gains of its own seed (1 = the largest gain)
    pick_rank = [int(1 + np.sum(g > g[k])) for g, k in zip(gains, best)]
    seeds = [{"seed": s["seed"], "best_site": s["best_site"], "verdict": s["verdict"],
              "roles": s["roles"], "scores": s["scores"], "realised_gain": [float(v) for v in g],
              "best_site_realised_rank": r}
             for s, g, r in zip(per_seed, gains, pick_rank)]
    steps = (per_seed[0].get("config") or {}).get("steps", 0) if steps is None else steps
    return {"arms": rows, "rank_correlation": legacy, "rank_correlations": rcs,
            "calibration": _calibration(per_seed, sites, scores, gains, steps),
            "best_site_realised_rank": {"per_seed": pick_rank, "n_sites": L, "is": "1 + the number of sites whose realised "
                                        "gain in the same seed exceeds that of the seed's best_site (1 = the scan picked the best)"},
            "seeds": seeds,
            "sites": [dict({"site": s, "realised_gain": float(gains[:, k].mean())},
                           **{name: float(np.mean(scores[name][:, k])) for name in SCORES})
                      for k, s in enumerate(sites)],
            "sites_are": "per site: the mean over seeds of each score (each seed its own scan) and of the realised gain "
                         "(held-out loss drop of a block there, vs nothing trained)"}


class _SavedPlot:
    """Stands in for seed 0's scan report when it was read back from ``work_dir``: its plot is the saved one."""

    def __init__(self, path: Path):
        self.path = path

    def plot(self, out):
        import shutil
        shutil.copyfile(self.path, out)


def _pickle(path: Path, obj) -> None:
    """``obj`` pickled to ``path`` atomically (a kept seed; read back by :func:`_read_kept`)."""
    import pickle

    from plumbing.io import atomic_write

    data = pickle.dumps(obj)
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


def _read_kept(path: Path) -> tuple:
    """A kept seed ``(record, first)``, read by the restricted unpickler (numpy arrays, dicts, lists, numbers: a
    crafted file in ``work_dir`` runs no code)."""
    from numerics._pickled_batch import read_pickled_batch
    from plumbing.validation import InputError

    try:
        rec, first = read_pickled_batch(path)
    except InputError as exc:
        raise ValueError(f"{path} is not a seed record this study wrote ({exc}); remove it or use another "
                         "work_dir.") from None
    except (TypeError, ValueError):
        raise ValueError(f"{path} is not a seed record this study wrote; remove it or use another work_dir.") from None
    return rec, first


def _kept_seed(kept: Path, same: dict, log) -> tuple[dict, dict | None, float]:
    """A seed read back from ``work_dir``: its record, seed 0's extras (or None) and the seconds it had cost."""
    rec, first = _read_kept(kept)
    if rec["config"] != same:
        raise ValueError(f"{kept} was made with another configuration; remove it or use another work_dir.")
    log(f"seed {kept.stem[4:]}: read back from {kept}")
    return rec, first, rec["seconds"] + (first["certificate"]["seconds"] + first["head_seconds"] if first else 0.0)


def _run_seeds(cfg: dict, work: Path | None, same: dict, log, progress: bool) -> tuple[list, dict, float]:
    """Every seed, computed or read back from ``work``: ``(per_seed records, seed 0's extras with its scan, kept s)``."""
    from tqdm import tqdm

    from numerics.interop.pretrained import minilm

    trained = {}

    def f_old():      # trained once, and only when a seed is not read back
        if not trained:
            t = time.perf_counter()
            net, tok, head = _f_old(cfg, log, minilm())
            trained.update(net=net, tok=tok, head=head, seconds=time.perf_counter() - t)
        return trained["net"], trained["tok"]
    per_seed, primary, kept_s = [], None, 0.0
    for seed in tqdm(range(int(cfg["seeds"])), desc="seeds", unit="seed", disable=not progress):
        kept = None if work is None else work / f"seed{seed}.pkl"
        if kept is not None and kept.exists():
            rec, first, seconds = _kept_seed(kept, same, log)
            kept_s += seconds
            per_seed.append(rec)
            primary = primary or (first and dict(first, rep=_SavedPlot(work / "scan.png")))
            continue
        net, tok = f_old()
        t_seed = time.perf_counter()
        rep, corpus, cost, rec = _one_seed(net, tok, cfg, seed, log)
        rec.update(seconds=time.perf_counter() - t_seed, config=same)
        first = None
        if seed == 0:       # seed 0's f_old: the reported scan, its cost and the certificate of arm (a)
            first = {"cost": cost, "certificate": _certificate(net, rep, corpus, cfg, log),
                     "scan": {"verdict": rep.verdict, "best_site": rep.best_site, "table": rep.to_dict()["sites"], "seed": 0},
                     "roles": rec["roles"], "head_loss": trained["head"], "head_seconds": trained["seconds"]}
            primary = dict(first, rep=rep)
            if work is not None:
                rep.plot(work / "scan.png")
        if kept is not None:
            _pickle(kept, (rec, first))
        per_seed.append(rec)
        del rep, corpus
    return per_seed, primary, kept_s


def run_pretrained(out_dir, *, quick: bool = False, config: dict | None = None, progress: bool = True,
                   work_dir=None) -> dict:
    """Run the study; write ``study.json`` and ``report.md`` (with figures) to ``out_dir``; return the study.

    ``work_dir``: where each finished seed is kept (``seed{k}.pkl``) and read back by a later call with the
    same configuration, so an interrupted run goes on where it stopped (``None``: nothing kept).
    """
    from tqdm import tqdm

    from numerics.studies.pretrained._report import write_report

    cfg = dict(QUICK if quick else DEFAULTS, **(config or {}))
    torch.set_num_threads(int(cfg["threads"]))
    log = (lambda m: tqdm.write(m)) if progress else (lambda m: None)
    work = None if work_dir is None else Path(work_dir)
    if work is not None:
        work.mkdir(parents=True, exist_ok=True)
    same = {k: v for k, v in cfg.items() if k not in ("seeds", "threads")}   # what a kept seed must share
    t0 = time.perf_counter()
    per_seed, primary, kept_s = _run_seeds(cfg, work, same, log, progress)
    sites = per_seed[0]["sites"]
    if any(s["sites"] != sites for s in per_seed):
        raise RuntimeError("the seeds' scans found different sites")
    cost = primary["cost"]
    summary = _summary(per_seed, sites, int(cfg["steps"]))
    rep, scan = primary["rep"], dict(primary["scan"])
    if summary["calibration"] is not None:   # seed 0's scan report says what the study's calibration knows
        judged = summary["calibration"]["judgement"]
        scan.update(ranked_by=judged["score"], predictive=judged["predictive"], calibration_note=judged["note"])
        rep = rep.with_calibration(summary["calibration"]["table"]) if hasattr(rep, "with_calibration") else rep
    study = dict(summary, scan_cost_ratio=cost["ratio"], scan_cost=cost, config=cfg,
                 certificate=primary["certificate"], scan=scan, roles=primary["roles"],
                 roles_are="seed 0's split (scan, certificate); every seed draws its own (seeds[*].roles); the "
                           "reference sample (f_old's head) is the same documents in every seed",
                 head_loss=primary["head_loss"],
                 seconds_per_seed=[float(s["seconds"]) for s in per_seed],
                 command=f"depthcert study pretrained{' --quick' if quick else ''} --out DIR" +
                 ("" if int(cfg["seeds"]) == (QUICK if quick else DEFAULTS)["seeds"] else
                  f" --config FILE ([pretrained] seeds = {int(cfg['seeds'])})"),
                 wall_s=time.perf_counter() - t0 + kept_s)
    write_report(study, Path(out_dir), rep)
    return study
