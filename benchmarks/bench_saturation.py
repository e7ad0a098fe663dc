"""Speed of ``dc.saturation`` against one forward+backward of the same model, measured in the same run (issue 26).

Run ``OMP_NUM_THREADS=1 python benchmarks/bench_saturation.py --threads 1`` (``--quick`` for tiny
sizes, ``--no-full`` without the whole calls). Networks: a 2-D post-norm ResNet (NCHW, 8x8 = 64
positions, stem conv, 3 blocks ``x = GroupNorm(x + conv(relu(conv(x))))``, 24 channels, global
average pool, linear head, as on scikit-learn's digits) at n = 4096 and n = 300; a post-LN
transformer (Hugging Face ``BertModel`` from a small ``BertConfig``, sequence length 128, a linear
head on the first token); the GPT-2-style :class:`numerics.zoo.CharGPT`; the MLP
:class:`numerics.models.PostNormResMLP`. Float32, one process.

* ``plain_fwd_bwd_s`` -- ``loss.backward()`` of the plain model (every parameter gradient) over
  the ``n`` samples, in the scan's batches.
* ``scan_s`` -- the saturation scan as ``dc.saturation`` runs it on its probe, here over the same
  ``n`` samples: per batch one forward with zero tensors at every site, one backward to the sites,
  each site's features and streaming statistics (cross-gradients, ``Sigma_phi``, ``||X_i||``, the
  bets, the direction solves), then each site's projection scores and betting test. Target:
  ``scan_over_plain <= 1.3`` (medians of interleaved calls).
* ``full_s`` -- one whole ``dc.saturation(model, (x, y), sites=...)`` call on the ``n`` samples
  (probe ``n - k``, curvature sample ``k = min(1024, n // 4)``), and its parts: ``probe_s`` (the
  scan of the probe), ``beta_s`` (curvature along ``G`` and ``G Sigma^+`` at every site on the step
  sample: one backward over it gives every site's slopes, then ``beta`` by forwards,
  ``numerics.estimators.curvature_along(method="descent")``), ``gain_s`` (the suggested insertion: a
  jumpboard step per family on the step sample and its gains on the gain sample), ``fixed_s`` (the
  rest: site resolution, blocks, tests). ``second_order_passes``, ``first_order_passes`` and
  ``forward_passes`` count the double-backward, backward and forward passes along a direction over
  the step sample (the site-wide slope pass and the gain sample's forwards are not counted),
  ``curvature_in_plain_passes`` the curvature parts in units of one forward+backward over the ``k``
  curvature samples. These parts do not grow with ``n`` beyond ``k``; they are excluded from
  ``scan_over_plain`` and included in ``full_over_plain`` (no target: see docs/ARCHITECTURE.md).

``--real-size`` (issue 38): GPT-2 small and ResNet-50 (:mod:`benchmarks._real_size`), each measurement
in its own process (wall time and peak resident memory): ``plain`` (one forward+backward over the
``n`` samples: the baseline), ``scan`` (the scan alone over them), ``full`` (the whole default
``dc.saturation`` call), ``auto`` (``curvature="auto"``), ``verdict_only`` (``curvature="none",
suggest=False``); ratios to the baseline, PASS/FAIL against the targets (:data:`REAL_SIZE_TARGETS`).
``--scaling``: the scan's time against the probe size, the number of sites and the width (a
12-block post-norm residual MLP), with the fitted log-log exponents. ``--out DIR`` stores the
printed table (``.txt``) and the numbers (``.json``).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from pathlib import Path

import scipy.stats  # noqa: F401  (dc.saturation's t interval imports it once: no measured call pays for that)
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import depthcert as dc  # noqa: E402
from depthcert.api import _saturation  # noqa: E402
from depthcert.api._data import as_stream  # noqa: E402
from depthcert.api._loss import as_loss  # noqa: E402
from depthcert.api._scan import accumulate, site_blocks  # noqa: E402
from numerics._numerics import per_sample_loss  # noqa: E402
from numerics.estimators import adaptive_test, site_projection_scores  # noqa: E402
from numerics.estimators import _site_scan  # noqa: E402
from numerics.estimators._site_scan import accumulate_site_stats  # noqa: E402
from numerics.families import ProtocolBlock  # noqa: E402
from numerics.models import PostNormResMLP  # noqa: E402
from numerics.sites import SiteProbe, resolve_sites  # noqa: E402
from tests.zoo.nets import ResNet2d  # noqa: E402  (the 2-D post-norm ResNet of the test zoo, GroupNorm)
from numerics.zoo import CharGPT  # noqa: E402

F32 = torch.float32
FAMILIES = ["linear", "affine", "readout"]
TARGETS = {"scan_over_plain": ("<=", 1.3)}
#: targets of one case's quantity: the whole call on the small probe (the fixed cost included)
CASE_TARGETS = {("resnet2d_n300", "full_over_plain"): ("<=", 3.0)}


class BertClassifier(nn.Module):
    """Hugging Face ``BertModel`` (post-LN, built from a config: no download), a linear head on token 0."""

    def __init__(self, vocab: int, hidden: int, layers: int, heads: int, seq: int, classes: int = 4):
        super().__init__()
        import transformers

        cfg = transformers.BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=heads, intermediate_size=4 * hidden,
                                      max_position_embeddings=seq)
        self.bert = transformers.BertModel(cfg, add_pooling_layer=False)
        self.head = nn.Linear(hidden, classes)

    def forward(self, ids):
        return self.head(self.bert(input_ids=ids).last_hidden_state[:, 0])


def _interleaved(fns: dict, repeats: int, clock=time.perf_counter) -> dict:
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = clock()
            fn()
            times[k].append(clock() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def _blocks(net, x, width=16):
    sites = resolve_sites(net, None, x[:2])
    with torch.no_grad(), SiteProbe(net, sites) as probe:
        net(x[:2])
        shapes = {s: tuple(probe.states[s].shape[1:]) for s in sites}
    return {s: ProtocolBlock(shapes[s], FAMILIES, width, k, F32) for k, s in enumerate(sites)}


def bench_scan(net, x, y, repeats: int, batch: int, n_chunks: int = 16) -> dict:
    """The numerics-level scan (:func:`accumulate_site_stats`, every default site) vs plain forward +
    backward over the same batches (issue 10's measurement)."""
    blocks = _blocks(net, x)
    starts = range(0, x.shape[0], batch)

    def plain():
        for i in starts:
            net.zero_grad(set_to_none=True)
            per_sample_loss(net(x[i:i + batch]), y[i:i + batch], "cross_entropy").sum().backward()

    def scan():
        accumulate_site_stats(net, x, y, blocks, "cross_entropy", batch_size=batch, n_chunks=n_chunks)

    t = _interleaved({"plain": plain, "scan": scan}, repeats)
    return {"sites": len(blocks), "probe_n": x.shape[0], "plain_fwd_bwd_s": t["plain"], "scan_s": t["scan"],
            "scan_over_plain": t["scan"] / t["plain"]}


@contextlib.contextmanager
def _timed(parts: dict, counts: dict):
    """Time ``dc.saturation``'s parts (module attributes wrapped for the duration) and count passes."""
    def wrap(owner, name, key):
        fn = getattr(owner, name)

        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                parts[key] = parts.get(key, 0.0) + time.perf_counter() - t
        setattr(owner, name, timed)
        return owner, name, fn

    saved = [wrap(_saturation, "accumulate", "probe_s"), wrap(_saturation, "_curvature", "beta_s"),
             wrap(_saturation, "step_gradients", "beta_s"),
             wrap(_saturation, "insertion_record", "gain_s")]
    if hasattr(_site_scan, "_derivatives"):
        fn = _site_scan._derivatives

        def counted(model, site, block, x, *a):
            key = {2: "rows", 1: "rows_backward"}.get(a[-1], "rows_forward")
            counts[key] = counts.get(key, 0) + x.shape[0]
            return fn(model, site, block, x, *a)
        saved.append((_site_scan, "_derivatives", fn))
        _site_scan._derivatives = counted
    try:
        yield
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)


def _full(net, x, y, sites, layout, batch, n_chunks, plain_s, repeats: int = 3) -> dict:
    """The whole call (its median of ``repeats`` calls, with that call's parts)."""
    calls = []
    for _ in range(repeats):
        parts, counts = {}, {}
        with _timed(parts, counts):
            t = time.perf_counter()
            rep = dc.saturation(net, (x, y), sites=sites, layout=layout, batch_size=batch, n_chunks=n_chunks)
            calls.append((time.perf_counter() - t, parts, counts, rep))
    full, parts, counts, rep = sorted(calls, key=lambda c: c[0])[len(calls) // 2]
    k, n = rep.n_curvature + (rep.insertion or {}).get("n_gain", 0), x.shape[0]
    curv = parts.get("beta_s", 0.0) + parts.get("gain_s", 0.0)
    return {"full_s": full, "full_over_plain": full / plain_s, **parts,
            "fixed_s": full - sum(parts.values()), "curvature_n": k,
            "second_order_passes": counts.get("rows", 0) / max(rep.n_curvature, 1),
            "first_order_passes": counts.get("rows_backward", 0) / max(rep.n_curvature, 1),
            "forward_passes": counts.get("rows_forward", 0) / max(rep.n_curvature, 1),
            "curvature_in_plain_passes": curv / (plain_s * k / n)}


def bench_api(net, x, y, sites, repeats: int, batch: int, n_chunks: int = 16, full: bool = True, layout=None,
              clock=time.perf_counter) -> dict:
    """``dc.saturation``'s scan over ``n`` samples vs plain forward+backward over them (module docstring)."""
    net.eval()
    loss = as_loss("cross_entropy")
    stream = as_stream((x, y), "data", net, batch)
    blocks = site_blocks(net, sites, layout, x[:2], FAMILIES, 16, 0)

    def plain():
        for xb, yb in stream:
            net.zero_grad(set_to_none=True)
            loss(net(xb), yb).sum().backward()

    def scan():
        accs = accumulate(net, stream, blocks, loss, n_chunks=n_chunks)
        for s, acc in accs.items():
            site_projection_scores(acc.G, acc.Sigma, blocks[s].slices)
            adaptive_test(acc, 0.05 / len(accs))

    t = _interleaved({"plain": plain, "scan": scan}, repeats, clock)
    b0 = next(iter(blocks.values()))
    out = {"sites": len(blocks), "n": x.shape[0], "d": b0.d, "P": b0.positions, "r": b0.r,
           "plain_fwd_bwd_s": t["plain"], "scan_s": t["scan"], "scan_over_plain": t["scan"] / t["plain"]}
    if full:
        out.update(_full(net, x, y, sites, layout, batch, n_chunks, t["plain"], 3 if repeats > 2 else 1))
    return out


def _cases(quick: bool):
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    if quick:
        sizes = dict(c=8, n2d=(128, 64), bert=(30, 16, 1, 2, 16, 48), gpt=(20, 16, 1, 2, 8, 48), mlp=(16, 32, 2, 64))
    else:
        sizes = dict(c=24, n2d=(4096, 300), bert=(100, 64, 2, 4, 128, 512), gpt=(98, 128, 4, 4, 64, 512),
                     mlp=(64, 256, 8, 4096))
    res = ResNet2d("gn", sizes["c"]).eval()
    vocab, hidden, layers, heads, seq, n_bert = sizes["bert"]
    bert = BertClassifier(vocab, hidden, layers, heads, seq).eval()
    gv, gd, gl, gh, gt, n_gpt = sizes["gpt"]
    gpt = CharGPT(gv, gd, gl, heads=gh, seq_len=gt).eval()
    d_in, w, depth, n_mlp = sizes["mlp"]
    mlp = PostNormResMLP(d_in, w, depth, 10, hidden=4 * w, dtype=F32).eval()
    cases = {}
    for n in sizes["n2d"]:
        cases[f"resnet2d_n{n}"] = (res, torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 10, (n,), generator=g),
                                   "blocks.*", None)
    cases["bert_seq" + str(seq)] = (bert, torch.randint(0, vocab, (n_bert, seq), generator=g),
                                    torch.randint(0, 4, (n_bert,), generator=g), "bert.encoder.layer.*", "NLD")
    ids = torch.randint(0, gv, (n_gpt, gt + 1), generator=g)
    cases[f"gpt_d{gd}_l{gl}"] = (gpt, ids[:, :-1], ids[:, 1:], None, "NLD")
    cases[f"mlp_w{w}_d{depth}"] = (mlp, torch.randn(n_mlp, d_in, generator=g), torch.randint(0, 10, (n_mlp,), generator=g),
                                   None, None)
    return cases


def run_all(quick: bool = False, full: bool = True, only=None, report=None) -> dict:
    """``{case: bench_api(...)}`` for every network (module docstring); ``only``: a subset of case
    names; ``report(name, values)`` is called as each case finishes."""
    reps, n_chunks = (2, 3) if quick else (5, 16)
    out = {}
    for name, (net, x, y, sites, layout) in _cases(quick).items():
        if only and name not in only:
            continue
        batch = 64 if name.startswith(("bert", "gpt")) else 256
        out[name] = bench_api(net, x, y, sites, reps, batch, n_chunks, full, layout)
        if report is not None:
            report(name, out[name])
    return out


HEADER = f"{'benchmark':16s} {'quantity':26s} {'value':>12s}  target"


def format_table(results: dict, header: bool = True) -> str:
    lines = [HEADER] if header else []
    for bench, values in results.items():
        for key, value in values.items():
            mark = ""
            target = CASE_TARGETS.get((bench, key), TARGETS.get(key))
            if target is not None:
                op, lim = target
                mark = f"{op} {lim:g}  {'PASS' if (value <= lim if op == '<=' else value >= lim) else 'MISS'}"
            lines.append(f"{bench:16s} {key:26s} {value:12.4g}  {mark}")
    return "\n".join(lines)


#: targets of ``--real-size`` (issue 38): the scan, the whole call with 12 sites, the scan's extra peak memory
REAL_SIZE_TARGETS = {"scan_over_plain": 1.3, "full_over_plain": 2.0, "auto_over_plain": 2.0, "scan_extra_mem_over_plain": 0.5}
MB = 1 << 20


def real_size_summary(rows: dict) -> dict:
    """Ratios and memory of one case from its measurements ``{kind: measure(...)}``.

    Memory: ``plain_peak_mb`` -- the model's own forward+backward peak: the peak resident set of the
    baseline's process above its resident set after the imports (weights, gradients, activations);
    ``<kind>_op_mb`` -- the peak above the resident set just before the measured call (model and samples
    built); ``scan_extra_mem_mb = scan_op_mb - plain_op_mb`` (negative: the scan needs less than a
    forward+backward), over ``plain_peak_mb``.
    """
    plain = rows["plain"]
    out = {"n": plain["n"], **({"batch_size": plain["batch_size"]} if "batch_size" in plain else {}),
           "parameters": plain["parameters"], "plain_fwd_bwd_s": plain["cpu_s"],
           "plain_fwd_bwd_wall_s": plain["wall_s"],
           "plain_peak_mb": (plain["rss_peak_b"] - plain["rss_imports_b"]) / MB}
    for kind, r in rows.items():
        out[f"{kind}_op_mb"] = (r["rss_peak_b"] - r["rss_base_b"]) / MB
        if kind != "plain":
            out[f"{kind}_s"] = r["cpu_s"]
            out[f"{kind}_over_plain"] = r["cpu_s"] / plain["cpu_s"]
            out[f"{kind}_wall_over_plain"] = r["wall_s"] / plain["wall_s"]
            out[f"{kind}_extra_mem_mb"] = out[f"{kind}_op_mb"] - out["plain_op_mb"]
            out[f"{kind}_extra_mem_over_plain"] = out[f"{kind}_extra_mem_mb"] / out["plain_peak_mb"]
        if "costs" in r:
            out.update({f"{kind}_{k}": v for k, v in r["costs"].items()})
            out[f"{kind}_verdict"], out[f"{kind}_curvature_sites"] = r["verdict"], r["curvature_sites"]
            out["sites"], out["n_probe"], out["n_curvature"] = r["sites"], r["n_probe"], r["n_curvature"]
    out["passes"] = {k: out[k] <= lim for k, lim in REAL_SIZE_TARGETS.items() if k in out}
    return out


def run_real_size(threads: int = 1, cases=None, report=print, kinds=None, n: int | None = None,
                  batch_size: int | None = None) -> dict:
    """Every real-size case, every kind (or ``kinds``, with ``plain`` always first), each in its own process
    (module docstring); ``n``: the probe size of every case, ``batch_size`` the batches of every call (None: each
    case's own, ``_real_size.CASES``)."""
    from benchmarks import _real_size

    results = {}
    for case in cases or _real_size.CASES:
        rows = {}
        for kind in ["plain"] + [k for k in _real_size.KINDS if k != "plain" and (not kinds or k in kinds)]:
            rows[kind] = _real_size.run_child(case, kind, threads, n, batch_size=batch_size)
            report(f"  {case} {kind}: cpu {rows[kind]['cpu_s']:.1f} s, wall {rows[kind]['wall_s']:.1f} s, peak {rows[kind]['rss_peak_b'] / MB:.0f} MB")
        results[case] = {"summary": real_size_summary(rows), "measurements": rows, "model": rows["plain"]["model"]}
    return results


def format_real_size(results: dict) -> str:
    lines = [f"{'case':12s} {'quantity':34s} {'value':>12s}  target"]
    for case, res in results.items():
        summ = res["summary"]
        lines.append(f"{case:12s} {'model':34s} {res['model']}")
        for key, value in summ.items():
            if key == "passes" or isinstance(value, (str, dict)):
                continue
            mark = ""
            if key in REAL_SIZE_TARGETS:
                mark = f"<= {REAL_SIZE_TARGETS[key]:g}  {'PASS' if summ['passes'][key] else 'FAIL'}"
            lines.append(f"{case:12s} {key:34s} {value:12.4g}  {mark}")
        if "full_verdict" in summ:
            lines.append(f"{case:12s} {'verdicts (full / auto / verdict_only)':34s} "
                         f"{summ.get('full_verdict')} / {summ.get('auto_verdict')} / {summ.get('verdict_only_verdict')}")
    return "\n".join(lines)


SCALING = {"n": (256, 512, 1024, 2048, 4096), "sites": (1, 2, 4, 8, 12), "width": (32, 64, 128, 256)}
SCALING_BASE = {"n": 1024, "sites": 12, "width": 64}


def _fit_exponent(xs, ys) -> float:
    import numpy as np

    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def _fit_affine(xs, ys) -> tuple[float, float]:
    """``(a, b)`` of the least-squares line ``y = a + b x`` (a fixed cost and a cost per unit)."""
    import numpy as np

    b, a = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(a), float(b)


def run_scaling(repeats: int = 3, report=print, axes=SCALING, base=SCALING_BASE) -> dict:
    """The scan's CPU time (``bench_api``'s ``scan``, ``time.process_time``: one thread on a machine that may be
    shared; medians interleaved with the baseline) along each axis of
    ``axes`` from ``base``: probe size ``n``, number of sites (the first ``k`` of the 12 blocks of a
    :class:`numerics.models.PostNormResMLP`, d_in 32, 10 classes) and width; each axis's fitted log-log
    exponent of the scan's time and of the baseline's."""
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    out = {}
    for axis, values in axes.items():
        rows = []
        for v in values:
            p = {**base, axis: v}
            net = PostNormResMLP(32, p["width"], 12, 10, hidden=4 * p["width"], dtype=F32).eval()
            x, y = torch.randn(p["n"], 32, generator=g), torch.randint(0, 10, (p["n"],), generator=g)
            sites = resolve_sites(net, None, x[:2])[:p["sites"]]
            r = bench_api(net, x, y, sites, repeats, 256, 16, full=False, clock=time.process_time)
            rows.append({axis: v, "scan_s": r["scan_s"], "plain_fwd_bwd_s": r["plain_fwd_bwd_s"],
                         "scan_over_plain": r["scan_over_plain"], "sites": r["sites"], "d": r["d"]})
            report(f"  {axis} = {v}: scan {r['scan_s']:.4f} s, plain {r['plain_fwd_bwd_s']:.4f} s")
        out[axis] = {"rows": rows, "base": {k: w for k, w in base.items() if k != axis},
                     "scan_exponent": _fit_exponent(values, [r["scan_s"] for r in rows]),
                     "plain_exponent": _fit_exponent(values, [r["plain_fwd_bwd_s"] for r in rows]),
                     "scan_affine": _fit_affine(values, [r["scan_s"] for r in rows]),
                     "plain_affine": _fit_affine(values, [r["plain_fwd_bwd_s"] for r in rows])}
    return out


def format_scaling(results: dict) -> str:
    lines = []
    for axis, res in results.items():
        lines.append(f"{axis} (others: {res['base']}): fitted exponent of the scan's time {res['scan_exponent']:.3f}, "
                     f"of one forward+backward {res['plain_exponent']:.3f}")
        if "scan_affine" in res:
            (a, b), (c, d) = res["scan_affine"], res["plain_affine"]
            lines.append(f"  least-squares lines: scan {a:.4g} s + {b:.4g} s per {axis}; forward+backward {c:.4g} s + {d:.4g} s "
                         f"per {axis}")
        lines.append(f"  {axis:>6s} {'scan_s':>10s} {'plain_s':>10s} {'scan/plain':>10s}")
        lines += [f"  {r[axis]:6d} {r['scan_s']:10.4f} {r['plain_fwd_bwd_s']:10.4f} {r['scan_over_plain']:10.3f}"
                  for r in res["rows"]]
    return "\n".join(lines)


def _store(out_dir, stem: str, text: str, data: dict, command: str) -> None:
    import json

    from plumbing.io import atomic_write_text

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{stem}.txt", text + "\n")
    atomic_write_text(out / f"{stem}.json", json.dumps({"command": command, **data}, indent=1, default=str))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--real-size", action="store_true", help="GPT-2 small and ResNet-50, ratios and peak memory")
    parser.add_argument("--scaling", action="store_true", help="the scan's time against n, sites and width")
    parser.add_argument("--out", help="store the table (.txt) and numbers (.json) in this folder")
    parser.add_argument("--kinds", nargs="*", choices=["scan", "full", "auto", "verdict_only"],
                        help="--real-size: only these calls (besides the baseline)")
    parser.add_argument("--stem", help="file name of the stored table and numbers (default: real_size / scaling)")
    parser.add_argument("--no-full", action="store_true", help="skip the whole dc.saturation calls")
    parser.add_argument("--only", nargs="*", help="case names (default: all; with --real-size: gpt2_small, resnet50)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n", type=int, help="--real-size: the probe size (default: each case's own, gpt2_small 8, resnet50 16)")
    parser.add_argument("--batch-size", type=int, help="--real-size: the batch of the baseline, the scan and the whole calls "
                        "(default: each case's own, gpt2_small 4, resnet50 8)")
    args = parser.parse_args(argv)
    given = [f for f, v in (("--n", args.n), ("--batch-size", args.batch_size)) if v is not None]
    if given and not args.real_size:
        parser.error(f"{' and '.join(given)} apply only with --real-size (given without it)")
    if args.batch_size is not None and args.batch_size < 1:
        parser.error(f"--batch-size == {args.batch_size}, must be >= 1")
    if args.threads < 1:
        parser.error(f"--threads == {args.threads}, must be >= 1")
    if args.n is not None and args.n < 8:
        parser.error(f"--n == {args.n}, must be >= 8 (a quarter of the probe, >= 2 samples, is the curvature sample)")
    torch.set_num_threads(args.threads)
    command = "OMP_NUM_THREADS=%d python benchmarks/bench_saturation.py %s" % (args.threads, " ".join(argv or sys.argv[1:]))
    head = f"torch {torch.__version__}, threads {torch.get_num_threads()}, float32"
    if args.real_size or args.scaling:
        import platform

        head += f", {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
        if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
            head += f", MALLOC_MMAP_THRESHOLD_={os.environ['MALLOC_MMAP_THRESHOLD_']}"
            command = f"MALLOC_MMAP_THRESHOLD_={os.environ['MALLOC_MMAP_THRESHOLD_']} " + command
    if args.real_size:
        from benchmarks._real_size import CASES
        bad = [c for c in args.only or [] if c not in CASES]
        if bad:
            parser.error(f"--only == {bad}, must be among {list(CASES)} with --real-size")
        print(head + "; one process per measurement (wall time, peak resident memory)", flush=True)
        res = run_real_size(args.threads, cases=args.only, report=lambda line: print(line, flush=True), kinds=args.kinds, n=args.n,
                            batch_size=args.batch_size)
        text = format_real_size(res)
        print(text, flush=True)
        if args.out:
            _store(args.out, args.stem or "real_size", head + "\n" + text, {"results": res, "targets": REAL_SIZE_TARGETS}, command)
        return 0
    if args.scaling:
        print(head + "; medians of interleaved calls", flush=True)
        res = run_scaling(2 if args.quick else 3, report=lambda line: print(line, flush=True),
                          axes={k: v[:2] for k, v in SCALING.items()} if args.quick else SCALING,
                          base={"n": 256, "sites": 2, "width": 32} if args.quick else SCALING_BASE)
        text = format_scaling(res)
        print(text, flush=True)
        if args.out:
            _store(args.out, args.stem or "scaling", head + "\n" + text, {"results": res}, command)
        return 0
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, float32, medians (same run)")
    print(HEADER, flush=True)
    run_all(args.quick, not args.no_full, args.only,
            report=lambda name, values: print(format_table({name: values}, header=False), flush=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
