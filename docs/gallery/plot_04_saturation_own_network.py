"""
Is your network deep enough? A saturation scan
==============================================

Paper B asks whether a residual network is already deep enough: if inserting a block at some
site cannot improve the loss to first order, the network is *saturated* there. The scan
:func:`depthcert.saturation` works on any ``nn.Module``: one backward pass gives every
per-sample activation gradient at every site, from which it estimates each site's first-order
gain (the plug-in Theorem 1 gain ``||G||^2 / (2 beta)`` of a ``readout`` block) with a
sequential test and confidence bounds. The verdict is

* ``"improvable"`` -- some site's test rejects "no first-order signal" and its certified lower
  bound on the gain is above 0 (the level is split over the sites);
* ``"saturated"`` -- every site's upper confidence bound is below ``eps`` (default ``1e-3``);
* ``"undetermined"`` -- neither, with ``n_needed``, the probe size that would decide at the
  measured effect.

The network here is written in this example (nothing from depthcert's model zoo): a residual
MLP with post-normalised ``LayerNorm`` blocks, trained briefly on MNIST-1D (i.i.d. samples from
:func:`numerics.mnist1d.sample`, offline). ``examples/own_network.py`` is the longer tour
(a 1-D residual CNN, growth and a certificate attempt).
"""

# %%
# A network of our own
# --------------------
import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn

import depthcert as dc
from numerics import mnist1d


class Block(nn.Module):
    """Post-norm residual block: ``x -> LayerNorm(x + W2 relu(W1 x))``."""

    def __init__(self, d, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(x + self.fc2(torch.relu(self.fc1(x))))


class ResMLP(nn.Module):
    def __init__(self, d_in=40, d=32, depth=3, classes=10):
        super().__init__()
        self.embed = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList(Block(d, 2 * d) for _ in range(depth))
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        h = self.embed(x.flatten(1))      # MNIST-1D signals are (N, 1, 40)
        for block in self.blocks:
            h = block(h)
        return self.head(h)


# one i.i.d. sample per role, each from its own seed: training, the scan's probe, a fresh test sample
train = mnist1d.sample(4000, 1, dtype=torch.float64)
probe = mnist1d.sample(4096, 2, dtype=torch.float64)
test = mnist1d.sample(4000, 3, dtype=torch.float64)

torch.manual_seed(0)
net = ResMLP().double()
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
batches = torch.Generator().manual_seed(0)
for step in range(300):
    idx = torch.randint(0, len(train[1]), (128,), generator=batches)
    loss = nn.functional.cross_entropy(net(train[0][idx]), train[1][idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
net.eval()


def test_loss(model):
    with torch.no_grad():
        return nn.functional.cross_entropy(model(test[0]), test[1]).item()


with torch.no_grad():
    accuracy = (net(test[0]).argmax(1) == test[1]).double().mean().item()
print(f"after 300 Adam steps: test accuracy {accuracy:.1%}, test loss {test_loss(net):.4f}")

# %%
# The scan
# --------
# The sites are the outputs of the three blocks (``"blocks.*"``). Each state is ``(N, 32)``,
# read as layout ``ND`` with ``d = 32``; by default the first 1024 probe samples are set aside
# for the curvature ``beta`` (and the realised gain below), disjoint from the samples that
# estimate ``G``.
rep = dc.saturation(net, probe, loss="cross_entropy", sites="blocks.*")
print(rep)
print("verdict:", rep.verdict, "| best site:", rep.best_site, "| predicted gain:", f"{rep.predicted_gain:.4f}")
print("curvature sample:", rep.curvature_source)
table = rep.table()
print(table[["site", "layout", "d", "n", "G_sq", "beta", "predicted_gain", "certified_gain", "gain_ucb", "reject"]]
      .to_string(index=False))

# %%
# Every site rejects "no signal", so the verdict is "improvable": a block would help to first
# order. ``certified_gain`` is a lower confidence bound (small: it has to hold at level
# ``0.05/3`` per site), ``gain_ucb`` an upper one; the plug-in ``predicted_gain`` lies between.
#
# The probe size matters
# ----------------------
# The same network scanned with small probes: the test cannot decide, and the report says how
# large a probe would (``n_needed`` is estimated from the measured effect, so it is itself
# noisy).
for n in (128, 512):
    small = dc.saturation(net, (probe[0][:n], probe[1][:n]), loss="cross_entropy", sites="blocks.*")
    print(f"probe of {n}: {small}")

# %%
# Acting on the verdict
# ---------------------
# :func:`depthcert.insert_block` returns a copy with a ``readout`` block after the best site:
# ``init="zero"`` preserves the function exactly, ``init="jumpboard"`` takes Theorem 1's step
# from the scan. :meth:`~depthcert.SaturationReport.gain_interval` is a Student-t interval for
# that insertion's gain, measured on the half of the curvature sample that did not choose the
# step; the fresh test sample (never seen by the scan) gives the realised gain. A jumpboard whose
# interval does not lie above zero is refused (``rep.suggestion`` is None, ``rep.suggestion_reason``
# says why) unless ``force=True``: forced here, to compare the interval with the realised gain.
print(rep.suggestion_reason)
zero = dc.insert_block(net, rep.best_site, family="readout", init="zero", scan=rep)
jump = dc.insert_block(net, rep.best_site, family="readout", init="jumpboard", scan=rep, force=True)
lo, hi = rep.gain_interval()
lo_n, hi_n = rep.gain_interval(n_eval=len(test[1]))
realised = test_loss(net) - test_loss(jump)
print(f"zero-init block: test loss {test_loss(zero):.6f} (unchanged: {test_loss(zero) == test_loss(net)})")
print(f"gain interval (population, level {rep.level}): [{lo:.4f}, {hi:.4f}]; "
      f"for the mean over {len(test[1])} fresh samples: [{lo_n:.4f}, {hi_n:.4f}]")
print(f"realised on the test sample: {test_loss(net):.4f} -> {test_loss(jump):.4f} (gain {realised:.4f})")

# %%
# The figure: each site's gain estimates and bounds (log scale, against ``eps``), and the
# jumpboard insertion's interval next to its realised gain.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [3, 2]})
x = np.arange(len(table))
for column, marker in (("predicted_gain", "o"), ("certified_gain", "^"), ("gain_ucb", "v")):
    values = table[column].to_numpy(dtype=float)
    ax1.plot(x, np.where(values > 0, values, np.nan), marker, ms=8, label=column)
ax1.axhline(rep.eps, color="grey", ls="--", label=f"eps = {rep.eps:g}")
ax1.set_xticks(x, table["site"])
ax1.set(yscale="log", ylabel="first-order gain (loss units)", title=f"{rep.verdict} (n = {rep.n}, level {rep.level:g})")
ax1.legend(fontsize=8)
ax2.errorbar([0], [(lo + hi) / 2], yerr=[[(hi - lo) / 2]], fmt="none", capsize=8, color="C0",
             label="gain_interval() (population)")
ax2.errorbar([1], [(lo_n + hi_n) / 2], yerr=[[(hi_n - lo_n) / 2]], fmt="none", capsize=8, color="C1",
             label=f"gain_interval(n_eval={len(test[1])})")
ax2.plot([1], [realised], "k*", ms=12, label="realised on the test sample")
ax2.axhline(0, color="k", lw=0.8)
ax2.set_xticks([0, 1], ["population", "test sample"])
ax2.set(xlim=(-0.6, 1.6), ylim=(min(0.0, lo_n) - 0.002, 1.6 * hi_n), ylabel="loss drop",
        title=f"jumpboard block at {rep.best_site}")
ax2.legend(fontsize=8, loc="upper center")
fig.tight_layout()

# %%
# This is one network, one training run and one probe: the interval holds at its level over
# draws of the curvature sample, and one realised gain inside it is one draw. The first-order
# gain is what *one* block adds at once; whether growing the network pays after retraining is
# what :func:`depthcert.grow` measures (``examples/own_network.py``), and Paper A's certificate
# for the insertion is :func:`depthcert.certify_insertion`.
