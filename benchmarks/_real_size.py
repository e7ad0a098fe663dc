"""Real-size networks for ``bench_saturation.py --real-size`` and ``gpu_real_size.py`` (issue 38).

* ``gpt2_small`` -- ``transformers.GPT2LMHeadModel(GPT2Config())``: GPT-2 small's config (12 layers,
  768 wide, 12 heads, vocabulary 50257, 124.4M parameters), random weights (seeded, nothing
  downloaded), sequences of 256 random tokens, next-token cross-entropy (per sequence: the mean over
  its tokens), sites ``transformer.h.*`` (the 12 blocks, ``NLD``).
* ``resnet50`` -- :class:`ResNet50`: torchvision's ``resnet50`` rebuilt from ``torch.nn`` (bottleneck
  blocks ``[3, 4, 6, 3]``, stride on the 3x3 conv, 25,557,032 parameters as torchvision's), because
  the registry's torchvision build does not import with this torch on this CPU machine; BatchNorm in
  eval mode (random weights, running statistics 0 / 1), 224x224 random images, 1000 classes; sites:
  the 12 bottlenecks that keep their shape (every block but the first of each stage, ``NCHW``).

Each measurement (:func:`measure`) runs in its own process (:func:`child`): the model and the
samples are built, ``gc`` and ``malloc_trim`` return what the build freed, the kernel's peak
resident set is reset (``/proc/self/clear_refs`` = 5), then the one measured call runs, and its
wall time, its CPU time (``time.process_time``: on a machine shared with other jobs the
measure of the work done; the ratios use it) and the peak resident set (``VmHWM``) are read. **Choice**: a process per measurement,
so that no measurement inherits another's allocations.
"""
from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: **Choice**: probe sizes that keep ``--real-size`` under 10 minutes on one shared CPU core.
CASES = {
    "gpt2_small": dict(n=8, batch_size=4, n_chunks=2, sites="transformer.h.*", layout="NLD", output="logits"),
    "resnet50": dict(n=16, batch_size=8, n_chunks=4, layout="NCHW", output=None,
                     sites=[f"layer{i}.{j}" for i, k in zip(range(1, 5), (3, 4, 6, 3)) for j in range(1, k)]),
}
#: the measured calls: the baseline, the scan alone, and ``dc.saturation`` with these keywords
KINDS = {"plain": None, "scan": None, "full": {}, "auto": {"curvature": "auto"},
         "verdict_only": {"curvature": "none", "suggest": False}}
RESNET50_PARAMETERS = 25_557_032   # torchvision.models.resnet50().parameters(), its documented count


class Bottleneck(nn.Module):
    """torchvision's ``Bottleneck`` (expansion 4, stride on the 3x3 conv)."""

    def __init__(self, cin: int, width: int, stride: int = 1):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    """torchvision's ``resnet50`` architecture from ``torch.nn`` (module names as torchvision's)."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64)
        self.relu, self.maxpool = nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1)
        cin = 64
        for i, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=1):
            layer = []
            for j in range(blocks):
                layer.append(Bottleneck(cin, width, stride if j == 0 else 1))
                cin = 4 * width
            setattr(self, f"layer{i}", nn.Sequential(*layer))
        self.avgpool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build(case: str, n: int | None = None, seed: int = 0):
    """``(model in eval mode, x, y, note)`` of a real-size case, random weights and samples (seeded)."""
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed + 1)
    n = CASES[case]["n"] if n is None else n
    if case == "gpt2_small":
        import transformers

        model = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
        ids = torch.randint(0, model.config.vocab_size, (n, 257), generator=g)
        return model, ids[:, :-1].contiguous(), ids[:, 1:].contiguous(), "transformers.GPT2LMHeadModel(GPT2Config())"
    if case == "resnet50":
        try:
            import torchvision  # noqa: F401
            note = "torchvision imports here, but the nn rebuild is used for the same numbers on every machine"
        except Exception as err:   # noqa: BLE001 -- the reason is printed
            note = f"torchvision does not import here ({type(err).__name__}: {err})"
        model = ResNet50().eval()
        x = torch.randn(n, 3, 224, 224, generator=g)
        return model, x, torch.randint(0, 1000, (n,), generator=g), f"ResNet-50 rebuilt from torch.nn; {note}"
    raise ValueError(f"case == {case!r}, must be one of {list(CASES)}.")


def _status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _release() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def calls(case: str, model, x, y, device="cpu", batch_size: int | None = None):
    """``{kind: zero-argument callable}``: the measured calls of :data:`KINDS` on ``(x, y)``, in batches of
    ``batch_size`` (None: the case's own, :data:`CASES`) for the baseline, the scan and the whole calls alike."""
    import depthcert as dc
    from depthcert.api._data import as_stream
    from depthcert.api._loss import as_loss
    from depthcert.api._scan import accumulate, site_blocks
    from numerics.estimators import adaptive_test, site_projection_scores

    cfg = CASES[case]
    loss = as_loss("cross_entropy", cfg["output"])
    bs, nc = batch_size or cfg["batch_size"], cfg["n_chunks"]

    def plain():
        for xb, yb in as_stream((x, y), "data", model, bs):
            model.zero_grad(set_to_none=True)
            loss(model(xb), yb).sum().backward()
        model.zero_grad(set_to_none=True)

    def scan():
        stream = as_stream((x, y), "data", model, bs)
        blocks = site_blocks(model, cfg["sites"], cfg["layout"], x[:2], ["linear", "affine", "readout"], 16, 0)
        accs = accumulate(model, stream, blocks, loss, n_chunks=nc)
        for s, acc in accs.items():
            site_projection_scores(acc.G, acc.Sigma, blocks[s].slices)
            adaptive_test(acc, 0.05 / len(accs))
        return accs

    def whole(**kw):
        return lambda: dc.saturation(model, (x, y), sites=cfg["sites"], layout=cfg["layout"], batch_size=bs,
                                     n_chunks=nc, output=cfg["output"], **kw)

    out = {"plain": plain, "scan": scan}
    out.update({k: whole(**kw) for k, kw in KINDS.items() if kw is not None})
    return out


def measure(case: str, kind: str, threads: int = 1, n: int | None = None, batch_size: int | None = None) -> dict:
    """One measurement in this process (module docstring): wall time and peak resident memory."""
    torch.set_num_threads(threads)
    import depthcert  # noqa: F401  (imported before the baseline RSS, as the model)
    import scipy.stats  # noqa: F401  (dc.saturation's t interval: imported before the measured call)

    _release()
    rss_imports = _status("VmRSS")
    model, x, y, note = build(case, n)
    fn = calls(case, model, x, y, batch_size=batch_size)[kind]
    _release()
    reset = _reset_peak()
    base = _status("VmRSS")
    t, c = time.perf_counter(), time.process_time()
    result = fn()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    peak = _status("VmHWM")
    out = {"case": case, "kind": kind, "n": int(x.shape[0]), "batch_size": int(batch_size or CASES[case]["batch_size"]),
           "wall_s": wall, "cpu_s": cpu, "rss_imports_b": rss_imports,
           "rss_base_b": base, "rss_peak_b": peak, "peak_reset": reset, "threads": torch.get_num_threads(),
           "parameters": sum(p.numel() for p in model.parameters()), "model": note}
    if kind in KINDS and KINDS[kind] is not None:
        out.update(verdict=result.verdict, best_site=result.best_site, costs=result.costs,
                   curvature_sites=len(result.curvature_sites or []), sites=len(result.sites),
                   n_probe=result.n, n_curvature=result.n_curvature,
                   suggestion=result.suggestion_reason.split(":")[0])
    return out


def child(argv: list[str]) -> int:
    """``python benchmarks/_real_size.py CASE KIND THREADS [N [BATCH]]``: one measurement, one JSON line (``N`` or
    ``BATCH`` ``0``: the case's own)."""
    case, kind, threads = argv[0], argv[1], int(argv[2])
    n, bs = (int(argv[k]) if len(argv) > k and int(argv[k]) > 0 else None for k in (3, 4))
    print("RESULT " + json.dumps(measure(case, kind, threads, n, bs)), flush=True)
    return 0


def run_child(case: str, kind: str, threads: int = 1, n: int | None = None, timeout: float = 1800,
              batch_size: int | None = None) -> dict:
    """:func:`measure` in a fresh process (its JSON line parsed); raises with its stderr on failure."""
    import subprocess

    cmd = [sys.executable, str(Path(__file__).resolve()), case, kind, str(threads), str(n or 0), str(batch_size or 0)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{case}/{kind} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1][len("RESULT "):])


if __name__ == "__main__":
    raise SystemExit(child(sys.argv[1:]))
