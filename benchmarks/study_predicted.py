"""Predicted vs observed on a named network: ``dc.predicted_vs_observed`` + ``dc.calibration`` + ``dc.plot_calibration``.

    OMP_NUM_THREADS=1 python benchmarks/study_predicted.py --network mnist1d --out docs/predicted-mnist1d \\
        [--seeds 6] [--horizons 0,1,10,100]

Networks (``NETWORKS``; each ``f_old`` is trained here, deterministically, from a fixed seed, and is the
same network in every seed of the study):

* ``mnist1d`` -- :class:`numerics.zoo_cnn1d.ResCNN1d` (width 32, 5 blocks, GroupNorm) trained 300 Adam
  steps on 4000 MNIST-1D samples (:func:`numerics.mnist1d.sample`, seed 10**6). Factory form: every
  seed and role draws fresh samples from the MNIST-1D generative process.
* ``digits`` -- :class:`numerics.zoo.GroupNormResNet` (pre-activation, GroupNorm, 8 channels, 4 blocks)
  trained 300 Adam steps on 597 of scikit-learn's 1797 digits. The other 1200 are a finite pool: each
  seed permutes them and cuts them into the three roles (disjoint within a seed; across seeds the images
  recur, so the spread over seeds understates a fresh population's -- stated in the stored JSON).
* ``llama`` -- Hugging Face ``LlamaForCausalLM`` from a tiny config (4 layers, hidden 64, pre-norm
  RMSNorm decoder) trained 300 Adam steps on next-character prediction over the standard library's
  source (:class:`numerics.corpus.CharCorpus`, train files). Factory form: each seed and role draws
  windows at fresh random offsets -- ``scan`` from the held-out files, ``train`` from the train files,
  ``heldout`` from the test files (no file in two of those splits).
* ``minilm`` -- MiniLM-L6 (``numerics.interop.pretrained.minilm()``) with BERT's MLM head trained once on
  the reference documents (the pretrained study's ``f_old`` recipe at 32-token sequences, :data:`MINILM_TEXT`);
  sites ``encoder.layer.*``. Factory form over documents: each seed deals the documents outside the
  reference sample anew to probe / S / T (``scan`` / ``train`` / ``heldout``, disjoint by document) and
  draws new masks; across seeds the same finite pool of documents recurs (stated in the stored JSON).

Per seed (its rows stored in ``seeds/seed_<k>.csv`` at once, atomically: a rerun skips stored seeds),
then the whole table (``table.csv``: the seed rows and the per site x horizon means), the calibration
(``calibration.json``: per horizon and score rho, the exact permutation p-values and at horizon 0 the
slope with its interval), the plot (``calibration.png``) and ``manifest.json`` (the configuration; a
folder of another configuration is refused).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROLE_INDEX = {"scan": 0, "train": 1, "heldout": 2}


def _train(model, x, y, loss_fn, steps: int, lr: float, batch: int, seed: int):
    """``steps`` Adam steps of every parameter on minibatches of ``(x, y)`` (seeded): ``f_old``."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, x.shape[0], (batch,), generator=gen)
        opt.zero_grad()
        loss_fn(model(x[idx]), y[idx]).mean().backward()
        opt.step()
    return model.eval()


def _ce(out, y):
    out = out.logits if hasattr(out, "logits") else out
    return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="none")


def net_mnist1d(n: dict) -> dict:
    from numerics import mnist1d
    from numerics.zoo_cnn1d import ResCNN1d

    model = ResCNN1d(1, 32, 5, 10, groups=4, seed=0)
    x, y = mnist1d.sample(4000, 10**6)
    _train(model, x, y, _ce, 300, 3e-3, 128, 0)

    def data(seed, role):
        return mnist1d.sample(n[role], 1000 * int(seed) + ROLE_INDEX[role])

    return {"model": model, "data": data, "sites": "blocks.*", "output": None,
            "f_old": "ResCNN1d(1, 32, 5, 10, groups=4, seed=0), 300 Adam steps (lr 3e-3, batch 128) on 4000 MNIST-1D samples "
                     "(numerics.mnist1d.sample(4000, 10**6))",
            "data_form": "factory: numerics.mnist1d.sample(n_role, 1000 * seed + role_index), a fresh draw of the generative "
                         "process per seed and role"}


def net_digits(n: dict) -> dict:
    from sklearn.datasets import load_digits

    from numerics.zoo import GroupNormResNet

    d = load_digits()
    x = torch.tensor(d.images / 16.0, dtype=torch.float32)[:, None]
    y = torch.tensor(d.target, dtype=torch.long)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    x, y = x[perm], y[perm]
    n_fit = len(y) - 1200
    model = GroupNormResNet(1, 8, 4, 10, groups=2, seed=0, dtype=torch.float32)
    _train(model, x[:n_fit], y[:n_fit], _ce, 300, 3e-3, 64, 0)
    pool_x, pool_y = x[n_fit:], y[n_fit:]
    cuts = np.cumsum([0, n["scan"], n["train"], n["heldout"]])
    if cuts[-1] > len(pool_y):
        raise ValueError(f"digits: the roles ask {int(cuts[-1])} images, the pool holds {len(pool_y)}.")

    def data(seed, role):
        p = torch.randperm(len(pool_y), generator=torch.Generator().manual_seed(int(seed)))
        i = ROLE_INDEX[role]
        take = p[cuts[i]:cuts[i + 1]]
        return pool_x[take], pool_y[take]

    return {"model": model, "data": data, "sites": "blocks.*", "output": None,
            "f_old": f"GroupNormResNet(1, 8, 4, 10, groups=2, seed=0), 300 Adam steps (lr 3e-3, batch 64) on {n_fit} of "
                     "sklearn's 1797 digits (a seed-0 permutation)",
            "data_form": "finite pool: the other 1200 digits, permuted per seed and cut into the roles (disjoint within a "
                         "seed; across seeds images recur, so the spread over seeds understates a fresh population's)"}


def net_llama(n: dict) -> dict:
    import transformers

    from numerics.corpus import CharCorpus

    transformers.logging.set_verbosity_error()
    corpus = CharCorpus(1_000_000)
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(vocab_size=CharCorpus.vocab_size, hidden_size=64, intermediate_size=128,
                                   num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                                   max_position_embeddings=128, bos_token_id=0, eos_token_id=1, pad_token_id=1)
    cfg._attn_implementation = "eager"
    model = transformers.LlamaForCausalLM(cfg)
    T = 32
    x, y = corpus.windows("train", 8000, T, seed=10**6)
    _train(model, x, y, _ce, 300, 3e-3, 32, 0)
    split = {"scan": "held", "train": "train", "heldout": "test"}

    def data(seed, role):
        return corpus.windows(split[role], n[role], T, seed=1000 * int(seed) + ROLE_INDEX[role])

    return {"model": model, "data": data, "sites": "model.layers.*", "output": "logits",
            "f_old": "LlamaForCausalLM(hidden 64, intermediate 128, 4 layers, 4 heads, eager attention; torch seed 0), "
                     "300 Adam steps (lr 3e-3, batch 32) on 8000 windows of 32 characters of CharCorpus(1_000_000)'s train files",
            "data_form": "factory: CharCorpus.windows(split, n_role, 32, seed=1000 * seed + role_index) -- scan from the "
                         "'held' files, train from the 'train' files, heldout from the 'test' files"}


#: MiniLM's corpus roles per predicted-vs-observed role (:mod:`numerics.studies.pretrained._corpus`).
MINILM_ROLES = {"scan": "probe", "train": "S", "heldout": "T"}


#: **Choice** (time: a forward of 16 sequences of 64 tokens costs ~0.5 s on one thread, and the runs share two
#: cores): MiniLM's sequences are 32 tokens with 4 masked (the pretrained study: 64 and 9, the same ~14% masked).
MINILM_TEXT = {"seq_len": 32, "n_mask": 4}


def minilm_f_old(text: dict | None = None):
    """``(net, tok, cfg)``: MiniLM-L6's encoder with BERT's MLM head trained once on the reference documents
    (the pretrained study's ``f_old`` recipe, :func:`depthcert._study_pretrained._f_old`, with the head settings of
    its ``DEFAULTS`` and the sequences of ``text``, default :data:`MINILM_TEXT`), every parameter then left
    trainable (as a loaded model is: the arms that tune an existing layer train its parameters)."""
    from numerics.studies.pretrained._study import DEFAULTS, _f_old
    from numerics.interop.pretrained import minilm

    cfg = {**{k: DEFAULTS[k] for k in ("head_steps", "head_lr", "head_batch")}, **(text or MINILM_TEXT)}
    net, tok, _ = _f_old(cfg, lambda m: None, minilm())
    for p in net.parameters():
        p.requires_grad_(True)
    return net.eval(), tok, cfg


def minilm_corpus(tok, cfg: dict, seed: int, cache: dict):
    """The seed's :class:`MaskedCorpus` (split and masks drawn from ``seed``, documents from ``cfg["source"]``, default
    ``"pydoc"``; the last one kept in ``cache``)."""
    from numerics.studies.pretrained._corpus import MaskedCorpus

    if cache.get("seed") != int(seed):
        cache.update(seed=int(seed), corpus=MaskedCorpus.build(tok, cfg["seq_len"], cfg["n_mask"], mask_seed=int(seed),
                                                               split_seed=int(seed), source=cfg.get("source", "pydoc")))
    return cache["corpus"]


def net_minilm(n: dict) -> dict:
    from numerics.studies.pretrained._mlm import mlm_loss

    net, tok, cfg = minilm_f_old()
    cache: dict = {}

    def data(seed, role):
        c = minilm_corpus(tok, cfg, seed, cache)
        r = MINILM_ROLES[role]
        return c.sample(r, min(n[role], c.x[r].shape[0]), seed=1000 * int(seed) + ROLE_INDEX[role])

    return {"model": net, "data": data, "sites": "encoder.layer.*", "output": None, "loss": mlm_loss,
            "f_old": f"MiniLM-L6 (numerics.interop.pretrained.minilm(), encoder frozen for the head) with BERT's MLM head "
                     f"trained {cfg['head_steps']} Adam steps (lr {cfg['head_lr']}, batch {cfg['head_batch']}) on the "
                     f"reference documents' sequences (seq_len {cfg['seq_len']}, {cfg['n_mask']} masks, mask seed 0): "
                     "depthcert._study_pretrained._f_old",
            "data_form": "factory over documents: per seed, MaskedCorpus.build(split_seed=seed, mask_seed=seed) deals the "
                         "documents outside the reference sample anew to probe / S / T (disjoint by document) and draws "
                         "new masks; scan = up to n_scan probe sequences, train = up to n_train S sequences, heldout = up "
                         "to n_heldout T sequences (a role with fewer sequences gives all of them: n_* per row). What "
                         "recurs across seeds: the same ~135 documents (a finite pool), dealt to other roles, so the "
                         "spread over seeds understates a fresh population's; the reference documents (f_old's head) are "
                         "in no role under any seed"}


NETWORKS = {"mnist1d": net_mnist1d, "digits": net_digits, "llama": net_llama, "minilm": net_minilm}
#: **Choice**: per network the role sizes, Adam's lr for the arms, the minibatch and the scan's curvature sample.
SIZES = {"mnist1d": {"n": {"scan": 512, "train": 1024, "heldout": 2000}, "lr": 1e-3, "batch_size": 64, "curvature_n": 256},
         "digits": {"n": {"scan": 400, "train": 400, "heldout": 400}, "lr": 1e-3, "batch_size": 64, "curvature_n": 256},
         "llama": {"n": {"scan": 256, "train": 1024, "heldout": 512}, "lr": 1e-3, "batch_size": 16, "curvature_n": 64},
         # MiniLM: small roles (time, see MINILM_TEXT); lr as the pretrained study's arms
         "minilm": {"n": {"scan": 64, "train": 128, "heldout": 96}, "lr": 3e-4, "batch_size": 16, "curvature_n": 32,
                    "text": MINILM_TEXT}}


def _config(network: str, seeds: list[int], horizons: list[int]) -> dict:
    return {"network": network, "seeds": seeds, "horizons": horizons, "family": "readout", **SIZES[network]}


def _manifest(out: Path, cfg: dict, net: dict) -> dict:
    from plumbing.io import atomic_write_json

    ident = {k: cfg[k] for k in cfg if k != "seeds"}
    path = out / "manifest.json"
    if path.exists():
        old = json.loads(path.read_text())
        if old.get("identity") != json.loads(json.dumps(ident)):
            raise SystemExit(f"--out {out}: holds a study of another configuration ({old.get('identity')}); "
                             "use an empty folder.")
    man = {"identity": ident, "f_old": net["f_old"], "data_form": net["data_form"], "sites": net["sites"],
           "versions": {"python": sys.version.split()[0], "torch": torch.__version__, "numpy": np.__version__}}
    atomic_write_json(path, man)
    return man


def _model_hash(model) -> str:
    h = hashlib.sha256()
    for k, v in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def _json_safe(v):
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not math.isfinite(float(v)) else float(v)
    if v is None:
        return None
    try:
        import pandas as pd

        if v is pd.NA:
            return None
    except ImportError:
        pass
    return v


def _network_or_stored(network: str, out: Path, cfg: dict, seeds: list[int]) -> tuple:
    """``(net, manifest, f_old hash)``; when every seed is stored under the same configuration, ``f_old`` is not
    rebuilt (``net`` None): the stored manifest, and the hash the seeds agree on."""
    import pandas as pd

    paths = [out / "seeds" / f"seed_{s}.csv" for s in seeds]
    mpath = out / "manifest.json"
    ident = json.loads(json.dumps({k: cfg[k] for k in cfg if k != "seeds"}))
    if all(p.exists() for p in paths) and mpath.exists() and json.loads(mpath.read_text()).get("identity") == ident:
        hashes = {str(pd.read_csv(p)["f_old_hash"].iloc[0]) for p in paths}
        if len(hashes) != 1:
            raise SystemExit(f"--out {out}: the stored seeds were computed with different f_old ({sorted(hashes)}).")
        return None, json.loads(mpath.read_text()), hashes.pop()
    net = NETWORKS[network](cfg["n"])
    return net, _manifest(out, cfg, net), _model_hash(net["model"])


def run(network: str, out: Path, seeds: list[int], horizons: list[int], command: str) -> dict:
    import pandas as pd

    import depthcert as dc
    from depthcert.api._predicted import _aggregate
    from plumbing.io import atomic_write, atomic_write_json

    t0 = time.perf_counter()
    cfg = _config(network, seeds, horizons)
    out.mkdir(parents=True, exist_ok=True)
    (out / "seeds").mkdir(exist_ok=True)
    net, man, h = _network_or_stored(network, out, cfg, seeds)
    seconds = {}
    for s in seeds:
        path = out / "seeds" / f"seed_{s}.csv"
        if path.exists():
            stored = pd.read_csv(path)
            if str(stored["f_old_hash"].iloc[0]) != h:
                raise SystemExit(f"{path}: computed with another f_old (hash {stored['f_old_hash'].iloc[0]} != {h}).")
            print(f"seed {s}: stored, skipped", flush=True)
            continue
        ts = time.perf_counter()
        df = dc.predicted_vs_observed(net["model"], net["data"], sites=net["sites"], horizons=horizons, seeds=(s,),
                                      family=cfg["family"], lr=cfg["lr"], batch_size=cfg["batch_size"],
                                      curvature_n=cfg["curvature_n"], output=net["output"],
                                      loss=net.get("loss", "cross_entropy"))
        rows = df[df["kind"] == "seed"].copy()
        rows["f_old_hash"] = h
        rows["seconds"] = time.perf_counter() - ts
        atomic_write(path, lambda tmp, rows=rows: rows.to_csv(tmp, index=False))
        seconds[s] = time.perf_counter() - ts
        print(f"seed {s}: {seconds[s]:.1f} s", flush=True)
    rows = pd.concat([pd.read_csv(out / "seeds" / f"seed_{s}.csv") for s in seeds], ignore_index=True)
    scores = [c for c in ("predicted_gain", "jumpboard_gain", "P_linear", "P_affine", f"P_{cfg['family']}", "AG_max",
                          "block_influence", "random") if c in rows.columns and rows[c].notna().any()]
    table = pd.concat([rows, pd.DataFrame(_aggregate(rows, 0.05, scores))], ignore_index=True)
    table.attrs["scores"] = scores
    atomic_write(out / "table.csv", lambda tmp: table.to_csv(tmp, index=False))
    calib = dc.calibration(rows, scores=scores)
    tune = dc.calibration(rows[rows["horizon"] > 0], scores=scores, target="tune_gain") if max(horizons) > 0 else None
    fig = dc.plot_calibration(table, calib)
    fig.suptitle(f"{network}: predicted_gain vs realised gain per horizon; rho per score", fontsize=9)
    fig.tight_layout()
    atomic_write(out / "calibration.png", lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    means = table[table["kind"] == "mean"]
    result = {
        "command": command, "network": network, "config": cfg, "f_old": man["f_old"], "f_old_hash": h,
        "data_form": man["data_form"], "sites": sorted(rows["site"].unique().tolist()), "scores": scores,
        "roles": {"scan": "the scores (dc.saturation), the jumpboard's V and beta_f, block_influence",
                  "train": "the minibatches of every arm's Adam steps (inserted block; existing layer tuned)",
                  "heldout": "the realised gains (mean per-sample loss drop against f_old)",
                  "seed": "the data draw of every role, the scan's features, the minibatches, the random score"},
        "calibration": [{k: _json_safe(v) for k, v in r.items()} for r in calib.to_dict("records")],
        "calibration_tune": None if tune is None else [{k: _json_safe(v) for k, v in r.items()} for r in tune.to_dict("records")],
        "site_means": [{k: _json_safe(v) for k, v in r.items()} for r in means.drop(columns=["seed"]).to_dict("records")],
        "seconds_per_seed": {int(k): float(v) for k, v in rows.groupby("seed")["seconds"].first().items()},
        "wall_s_this_invocation": time.perf_counter() - t0, "versions": man["versions"],
    }
    atomic_write_json(out / "calibration.json", result)
    write_readme(out)
    return result


def write_readme(out: Path) -> None:
    """``out/README.md`` rendered from the stored ``calibration.json`` (and ``first_order.json`` if stored)."""
    from plumbing.io import atomic_write_text

    fo = out / "first_order.json"
    text = readme(json.loads((out / "calibration.json").read_text()))
    if fo.exists():
        text += "\n" + render_first_order(json.loads(fo.read_text())) + "\n"
    atomic_write_text(out / "README.md", text)


def _fmt_p(p) -> str:
    return "n/a" if p is None else f"{p:.3g}"


def readme(r: dict) -> str:
    """The folder's README: the command, the network, and the rho table (rendered from ``calibration.json``)."""
    cfg = r["config"]
    lines = [f"# Predicted vs observed: {r['network']}", "",
             f"Command: `{r['command']}`", "",
             f"* `f_old`: {r['f_old']} (state hash `{r['f_old_hash']}`).",
             f"* data: {r['data_form']}; role sizes {cfg['n']}.",
             f"* sites {r['sites']}; block family `{cfg['family']}` (the jumpboard `dc.insert_block` inserts), "
             f"Adam lr {cfg['lr']}, minibatch {cfg['batch_size']}, horizons {cfg['horizons']}, seeds {cfg['seeds']}.",
             "* roles: " + "; ".join(f"**{k}** -- {v}" for k, v in r["roles"].items()) + ".",
             "* seconds per seed (wall, one thread; the machine may have been shared): "
             + ", ".join(f"seed {k}: {v:.0f}" for k, v in r.get("seconds_per_seed", {}).items()) + ".", "",
             "Spearman's rho over the sites between each score and the realised held-out gain (site means over seeds), "
             "with the exact one-sided permutation p-value (every ordering of the sites). p above 0.05: no evidence that "
             "the score predicts. The per-seed rho (each seed's own scores and gains; its mean with a t interval over "
             "seeds) says how stable a ranking is from one data draw to the next.", "",
             render_rows(r["calibration"]), "",
             "Files: `table.csv` (one row per seed x site x horizon, and the means), `calibration.json`, `calibration.png`, "
             "`seeds/` (per seed, resumable), `manifest.json`.", ""]
    return "\n".join(lines)


def render_rows(calib: list[dict]) -> str:
    """A markdown table of one study's calibration rows: horizon, score, rho, p, and the verdict in words."""
    out = ["| horizon | score | rho (site means) | one-sided p (exact) | reads | mean per-seed rho [95% t CI] "
           "| slope at h=0 [95% CI] |", "|---|---|---|---|---|---|---|"]
    for c in calib:
        rho = "n/a" if c["rho"] is None else f"{c['rho']:+.2f}"
        slope = "" if c.get("slope") is None else f"{c['slope']:.3g} [{c['slope_lo']:.3g}, {c['slope_hi']:.3g}]"
        per = ("n/a" if c.get("rho_seeds") is None else f"{c['rho_seeds']:+.2f}"
               + ("" if c.get("rho_seeds_lo") is None else f" [{c['rho_seeds_lo']:+.2f}, {c['rho_seeds_hi']:+.2f}]"))
        out.append(f"| {c['horizon']} | {c['score']} | {rho} | {_fmt_p(c['p_one_sided'])} | {verdict(c)} | {per} | {slope} |")
    return "\n".join(out)


def verdict(c: dict) -> str:
    """The words for one row: only a one-sided p at most 0.05 reads as "predicts"."""
    if c["rho"] is None or c["p_one_sided"] is None:
        return "undefined (" + (c.get("note") or "constant score") + ")"
    return "predicts the ranking" if c["p_one_sided"] <= 0.05 else "no evidence that the score predicts"


FIRST_ORDER_TAUS = (0.05, 0.25, 1.0)


def first_order(network: str, out: Path, seeds: list[int], command: str) -> dict:
    """``dc.first_order_check`` on the network (same ``f_old`` and data factory; taus ``FIRST_ORDER_TAUS`` of the
    jumpboard step): per site and tau the realised/predicted ratio with its t interval over seeds, stored in
    ``out/first_order.json`` and appended to ``out/README.md``."""
    import depthcert as dc
    from plumbing.io import atomic_write_json

    t0 = time.perf_counter()
    cfg = SIZES[network]
    net = NETWORKS[network](cfg["n"])
    h = _model_hash(net["model"])
    stored = json.loads((out / "calibration.json").read_text())
    if stored["f_old_hash"] != h:
        raise SystemExit(f"{out}: the stored study has another f_old (hash {stored['f_old_hash']} != {h}).")
    df = dc.first_order_check(net["model"], net["data"], sites=net["sites"], taus=FIRST_ORDER_TAUS, seeds=seeds,
                              loss=net.get("loss", "cross_entropy"), scan_kwargs={"curvature_n": cfg["curvature_n"], "output": net["output"]})
    checks = df[df["kind"] == "check"]
    keep = ["site", "tau", "ratio", "ratio_lo", "ratio_hi", "flagged", "n_seeds", "n_dropped"]
    res = {"command": command, "network": network, "f_old_hash": h, "taus": list(FIRST_ORDER_TAUS), "seeds": seeds,
           "what": "per site and tau: realised held-out gain of the jumpboard scaled by tau over Theorem 1's quadratic "
                   "prediction G_J (2 tau - tau^2), mean over seeds with its 95% t interval; flagged when it excludes 1",
           "checks": [{k: _json_safe(r[k]) for k in keep if k in r} for r in checks.to_dict("records")],
           "seed_rows": [{k: _json_safe(r[k]) for k in ("seed", "site", "tau", "predicted", "realised")}
                         for r in df[df["kind"] == "seed"].to_dict("records")],
           "seconds": time.perf_counter() - t0}
    atomic_write_json(out / "first_order.json", res)
    write_readme(out)
    return res


def render_first_order(res: dict) -> str:
    """The README section of ``first_order.json``."""
    lines = ["## First-order check", "", f"Command: `{res['command']}`", "", res["what"] + ".", "",
             "| site | tau | realised / predicted [95% CI] | flagged |", "|---|---|---|---|"]
    for c in res["checks"]:
        iv = "n/a" if c["ratio"] is None else (f"{c['ratio']:.3g} [{c['ratio_lo']:.3g}, {c['ratio_hi']:.3g}]"
                                               if c["ratio_lo"] is not None else f"{c['ratio']:.3g}")
        lines.append(f"| {c['site']} | {c['tau']} | {iv} | {c['flagged']} |")
    return "\n".join(lines)


POOLED_COMMAND = "OMP_NUM_THREADS=1 python benchmarks/study_predicted.py --pool docs/predicted"


def pool(root: Path, networks=tuple(NETWORKS)) -> dict:
    """``dc.calibration`` over the sites of every stored study in ``root/<network>/`` pooled (a ``network``
    column: permutations within each network, the statistic the mean of the networks' rhos); stored in
    ``root/pooled.json``. Only the scores every network has are pooled; each horizon pools the networks that
    measured it (at least two; each row's ``networks``), one ``dc.calibration`` call per set of networks."""
    import pandas as pd

    import depthcert as dc
    from plumbing.io import atomic_write_json

    stored = [n for n in networks if (root / n / "calibration.json").exists()]
    if len(stored) < 2:
        raise SystemExit(f"--pool {root}: {len(stored)} stored studies ({stored}), must be >= 2.")
    frames, scores, hsets = [], None, {}
    for n in stored:
        t = pd.read_csv(root / n / "table.csv")
        t = t[t["kind"] == "seed"].assign(network=n)
        s = [c for c in json.loads((root / n / "calibration.json").read_text())["scores"] if c in t.columns]
        scores = s if scores is None else [c for c in scores if c in s]
        hsets[n] = {int(h) for h in t["horizon"].unique().tolist()}
        frames.append(t)
        write_readme(root / n)
    rows = pd.concat(frames, ignore_index=True)
    groups: dict = {}
    for h in sorted(set().union(*hsets.values())):
        nets = tuple(n for n in stored if h in hsets[n])
        if len(nets) >= 2:
            groups.setdefault(nets, []).append(h)
    calib = []
    for nets, hs in groups.items():
        c = dc.calibration(rows[rows["horizon"].isin(hs) & rows["network"].isin(nets)], scores=scores)
        calib += [dict({k: _json_safe(v) for k, v in r.items()}, networks=list(nets)) for r in c.to_dict("records")]
    calib.sort(key=lambda c: c["horizon"])          # stable: the scores' order within a horizon is kept
    horizons = sorted(h for hs in groups.values() for h in hs)
    out = {"command": POOLED_COMMAND, "networks": stored, "scores": scores, "horizons": horizons,
           "networks_per_horizon": {str(h): list(nets) for nets, hs in groups.items() for h in hs},
           "how": "dc.calibration over (network, site) units: per network the site means over its seeds; the statistic is "
                  "the mean of the networks' Spearman rhos, its p-value from permutations of the sites within each network "
                  "(exact when the product of the networks' site-count factorials is at most 40320, else 9999 random ones, "
                  "seed 0); each horizon pools the networks that measured it (one call per set of networks)",
           "calibration": calib}
    atomic_write_json(root / "pooled.json", out)
    return out


def cross_table(root: Path) -> str:
    """The cross-network table (markdown), rendered from the stored ``root/<network>/calibration.json`` and
    ``root/pooled.json``: per horizon and score, each network's rho with its one-sided permutation p, and
    the pooled rho with its p and the verdict in words."""
    pooled = json.loads((root / "pooled.json").read_text())
    nets = pooled["networks"]
    cal = {n: {(c["horizon"], c["score"]): c for c in json.loads((root / n / "calibration.json").read_text())["calibration"]}
           for n in nets}

    def cell(c):
        if c is None or c["rho"] is None:
            return "n/a"
        return f"{c['rho']:+.2f} (p {_fmt_p(c['p_one_sided'])})"

    head = ["horizon", "score", *[f"{n}: rho (p)" for n in nets], "pooled: mean rho (p)", "pooled reads"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in pooled["calibration"]:
        k = (c["horizon"], c["score"])
        lines.append(f"| {c['horizon']} | {c['score']} | " + " | ".join(cell(cal[n].get(k)) for n in nets)
                     + f" | {cell(c)} | {verdict(c)} |")
    pooled_h = {c["horizon"] for c in pooled["calibration"]}
    for n in nets:          # a horizon only one network measured: its own row, not pooled
        for c in cal[n].values():
            if c["horizon"] not in pooled_h:
                lines.append(f"| {c['horizon']} | {c['score']} | " + " | ".join(cell(c) if m == n else "n/a" for m in nets)
                             + f" | n/a ({n} only) | {verdict(c)} ({n} only, not pooled) |")

    def iv(c, key):
        if c is None or c.get(key) is None:
            return "n/a"
        lo, hi = c.get(f"{key}_lo"), c.get(f"{key}_hi")
        return f"{c[key]:+.2f}" + ("" if lo is None else f" [{lo:+.2f}, {hi:+.2f}]")

    lines += ["", "Mean per-seed rho (each seed's own scores and gains) with its 95% t interval over seeds:", "",
              "| horizon | score | " + " | ".join(nets) + " |", "|" + "---|" * (len(nets) + 2)]
    for c in pooled["calibration"]:
        k = (c["horizon"], c["score"])
        lines.append(f"| {c['horizon']} | {c['score']} | " + " | ".join(iv(cal[n].get(k), "rho_seeds") for n in nets) + " |")
    lines += ["", "Calibration at horizon 0 (realised on predicted; 1 is calibrated): the OLS slope over the site means "
              "[95% t CI], and the mean per-seed slope [95% t CI over seeds]:", "",
              "| score | " + " | ".join(nets) + " |", "|" + "---|" * (len(nets) + 1)]
    first = min(c["horizon"] for c in pooled["calibration"])
    for score in [c["score"] for c in pooled["calibration"] if c["horizon"] == first]:
        cs = [cal[n].get((first, score)) for n in nets]
        if all(c is None or c.get("slope") is None for c in cs):
            continue
        lines.append(f"| {score} | " + " | ".join(f"{iv(c, 'slope')}; per seed {iv(c, 'slope_seeds')}" for c in cs) + " |")
    return "\n".join(lines)


def predicts_summary(root: Path) -> str:
    """Per network (and pooled): the scores whose ranking predicted the realised gains (one-sided exact
    permutation p <= 0.05) at each horizon, with their p-values, and the scores that did not -- rendered from
    the stored JSONs."""
    pooled = json.loads((root / "pooled.json").read_text())
    out = []
    studies = [(n, json.loads((root / n / "calibration.json").read_text())["calibration"]) for n in pooled["networks"]]
    for name, cal in studies + [("pooled", pooled["calibration"])]:
        parts = []
        for h in sorted({c["horizon"] for c in cal}):
            at = [c for c in cal if c["horizon"] == h]
            yes = [f"{c['score']} (p {_fmt_p(c['p_one_sided'])})" for c in at if c["p_one_sided"] is not None
                   and c["p_one_sided"] <= 0.05]
            no = [c["score"] for c in at if c not in [] and (c["p_one_sided"] is None or c["p_one_sided"] > 0.05)]
            parts.append(f"horizon {h}: " + (", ".join(yes) if yes else "none") + " predicted"
                         + (f"; no evidence for {', '.join(no)}" if no else ""))
        out.append(f"* **{name}** -- " + "; ".join(parts) + ".")
    return "\n".join(out)


BEGIN, END = "<!-- cross-network table: begin -->", "<!-- cross-network table: end -->"


def write_block(page: Path, block: str) -> None:
    """Replace the text between ``BEGIN`` and ``END`` in ``page`` (atomically) by ``block``; a page without
    the markers is left alone."""
    from plumbing.io import atomic_write_text

    if not page.exists():
        return
    text = page.read_text()
    if BEGIN not in text or END not in text:
        return
    head, rest = text.split(BEGIN, 1)
    atomic_write_text(page, f"{head}{BEGIN}\n{block}\n{END}{rest.split(END, 1)[1]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", help="pool the stored studies under this folder (writes pooled.json) and print the table")
    ap.add_argument("--network")
    ap.add_argument("--out")
    ap.add_argument("--seeds", default="6")
    ap.add_argument("--horizons", default="0,1,10,100")
    ap.add_argument("--first-order", action="store_true", help="run dc.first_order_check on the stored study's network")
    a = ap.parse_args(argv)
    if a.pool:
        pool(Path(a.pool))
        block = cross_table(Path(a.pool)) + "\n\n" + predicts_summary(Path(a.pool))
        write_block(Path(a.pool) / "README.md", block)
        print(block)
        return 0
    if a.network not in NETWORKS or not a.out:
        ap.error(f"--network == {a.network!r}, must be one of {sorted(NETWORKS)} (with --out)")
    try:
        n_seeds = int(a.seeds)
        horizons = sorted({int(v) for v in a.horizons.split(",")})
    except ValueError:
        ap.error(f"--seeds == {a.seeds!r} must be an int >= 1 and --horizons == {a.horizons!r} ints >= 0 separated by commas")
    if n_seeds < 1 or min(horizons) < 0:
        ap.error(f"--seeds == {a.seeds!r} must be an int >= 1 and --horizons == {a.horizons!r} ints >= 0")
    if a.first_order:
        cmd = (f"OMP_NUM_THREADS=1 python benchmarks/study_predicted.py --network {a.network} --out {a.out} --first-order "
               f"--seeds {n_seeds}")
        print(render_first_order(first_order(a.network, Path(a.out), list(range(n_seeds)), cmd)))
        return 0
    command = (f"OMP_NUM_THREADS=1 python benchmarks/study_predicted.py --network {a.network} --out {a.out} "
               f"--seeds {n_seeds} --horizons {','.join(map(str, horizons))}")
    r = run(a.network, Path(a.out), list(range(n_seeds)), horizons, command)
    print(render_rows(r["calibration"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
