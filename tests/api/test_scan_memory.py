"""The scan's peak memory does not grow with the probe size (issue 38: streamed statistics).

Each scan runs in its own process: the network, the data and the blocks are built, the kernel's peak
resident set is reset (``/proc/self/clear_refs`` = 5), then ``accumulate`` runs over 1 or 4 batches
and the peak above the resident set before the call is read (``VmHWM``). Before issue 38 the previous
batch's loss and graph outputs lived on into the next forward, so 4 batches peaked about one batch's
activations above 1 batch; that variant (``keep``) is run too and must be flagged. **Choice**: glibc's
mmap threshold is fixed (``MALLOC_MMAP_THRESHOLD_``), so that a freed tensor leaves the resident set
(with its default dynamic threshold, freed blocks stay resident and the peak drifts up batch by batch
even for a plain forward+backward).
"""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD = r"""
import ctypes, gc, sys
from pathlib import Path
import torch
from torch import nn
from depthcert.api._data import as_stream
from depthcert.api._loss import as_loss, check_per_sample
from depthcert.api._scan import accumulate, site_blocks
from numerics.families import to_tokens
from numerics.sites import SiteProbe
torch.set_num_threads(1)
batches, mode = int(sys.argv[1]), sys.argv[2]
B, W = 2048, 512
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(W, W), *[nn.Sequential(nn.Linear(W, W), nn.Tanh()) for _ in range(4)], nn.Linear(W, 10)).eval()
x, y = torch.randn(4 * B, W)[: batches * B], torch.randint(0, 10, (4 * B,))[: batches * B]
loss = as_loss("cross_entropy")
blocks = site_blocks(net, ["1", "2", "3", "4"], None, x[:2], ["linear", "affine", "readout"], 16, 0)
stream = as_stream((x, y), "data", net, B)
def status(key):
    return next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(key + ":"))
def kept():   # the loop as it was before issue 38: this batch's values and gradients live into the next forward
    with SiteProbe(net, list(blocks)) as probe:
        for xb, yb in stream:
            probe.reset()
            values = check_per_sample(loss(net(xb), yb), xb.shape[0], loss)
            ms = probe.grads(values.sum())
            for s in blocks:
                blocks[s].phi(probe.states[s]); to_tokens(ms[s], blocks[s].layout)
gc.collect(); ctypes.CDLL("libc.so.6").malloc_trim(0)
Path("/proc/self/clear_refs").write_text("5")
base = status("VmRSS")
def plain():
    for xb, yb in stream:
        net.zero_grad(set_to_none=True)
        loss(net(xb), yb).sum().backward()
{"keep": kept, "plain": plain}.get(mode, lambda: accumulate(net, stream, blocks, loss, n_chunks=2))()
print((status("VmHWM") - base) / 1024)
"""


def _peak_mb(batches: int, mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", CHILD, str(batches), mode], capture_output=True, text=True, timeout=300,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
                              "MALLOC_MMAP_THRESHOLD_": "131072"})
    assert out.returncode == 0, out.stderr[-2000:]
    return float(out.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's peak-RSS reset")
def test_four_batches_peak_no_higher_than_one():
    one, four = _peak_mb(1, "scan"), _peak_mb(4, "scan")
    assert one > 20                                   # one batch's activations are visible at all
    assert four <= 1.1 * one + 8, (one, four)         # streamed: the peak is one batch's, whatever n
    kept_one, kept_four = _peak_mb(1, "keep"), _peak_mb(4, "keep")
    assert kept_four > 1.1 * kept_one + 8, (kept_one, kept_four)    # the old loop is caught by the same check
