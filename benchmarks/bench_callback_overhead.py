"""Overhead of the training-loop callbacks (``depthcert.integrations``) as a ratio to training time (issue 37).

A tiny ``LlamaForCausalLM`` (``d = 64``, 4 layers, 2 heads, float32, eager attention) trained with
Adam on next-character prediction over the stdlib corpus (``numerics.corpus``; batches of 16
windows of 64 characters). One run, one machine: first ``steps`` plain training steps (the
baseline: median step seconds), then the same loop with the callbacks' monitor
(:class:`depthcert.integrations._core.SaturationMonitor`, what both callbacks call) scanning every
``interval`` steps on a held-out probe (512 windows of the ``held`` split, sites
``model.layers.*``, the scan's defaults). Printed and stored: the median seconds of one scan, the
median training step, ``ratio_default`` = one scan over ``1000`` training steps (the callbacks'
default ``every_n_steps``; measured per call, extrapolated to that interval) and the measured
``cost_fraction`` at ``interval`` (the callback's own number). Run
``python benchmarks/bench_callback_overhead.py [--quick] [--out FILE.json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from depthcert.integrations._core import SaturationMonitor  # noqa: E402
from numerics.corpus import CharCorpus  # noqa: E402

DEFAULT_INTERVAL = 1000   # the callbacks' default every_n_steps


def _model():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=CharCorpus.vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=128, attn_implementation="eager")
    return LlamaForCausalLM(cfg)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    steps, interval, probe_n = (20, 10, 256) if a.quick else (200, 50, 512)
    corpus = CharCorpus(500_000)
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(k):
        x, y = corpus.windows("train", 16, 64, seed=k)
        t = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(input_ids=x, use_cache=False).logits.flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        return time.perf_counter() - t

    model.train()
    base = [step(k) for k in range(steps)]
    probe = corpus.windows("held", probe_n, 64, seed=10_000)   # held-out split: never a training window's file
    mon = SaturationMonitor(probe, "model.layers.*", every_n_steps=interval, output="logits", check_disjoint=False)
    with_cb = []
    for k in range(steps, 2 * steps):
        with_cb.append(step(k))
        mon.step_done()
        if mon.due(k + 1 - steps):
            mon(model, k + 1 - steps)
    t = mon.table
    step_s, scan_s = statistics.median(base), statistics.median(t["cost_s"])
    res = {"command": "python benchmarks/bench_callback_overhead.py" + (" --quick" if a.quick else ""),
           "machine": {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
                       "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")},
           "steps": steps, "interval": interval, "probe_n": probe_n, "scans": len(t), "step_s_median": step_s,
           "scan_s_median": scan_s, "scan_in_steps": scan_s / step_s, "default_interval": DEFAULT_INTERVAL,
           "ratio_default": scan_s / (DEFAULT_INTERVAL * step_s),
           "cost_fraction_at_interval_median": float(statistics.median(t["cost_fraction"].dropna()))}
    print(json.dumps(res, indent=1))
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1) + "\n")
    return res


if __name__ == "__main__":
    main()
