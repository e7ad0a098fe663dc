"""
Is the scan right about where and how much? Predicted against observed gains
============================================================================

:func:`depthcert.saturation` predicts, per site, how much one more block would lower the loss
(``predicted_gain``) and ranks the sites by it. :func:`depthcert.predicted_vs_observed` checks that
against what then happens: per seed it scans the network on a ``scan`` sample, inserts the jumpboard
block at every site as :func:`depthcert.insert_block` would, and measures the held-out loss drop at
horizon 0 (as inserted) and after ``k`` Adam steps of the new block on a ``train`` sample. The
control arm tunes the existing layer at the site for the same steps. :func:`depthcert.calibration`
then asks, per horizon and score: does the score rank the sites as the realised gains do (Spearman's
rho with its exact permutation p-value over the sites), and at horizon 0 is it calibrated (slope of
realised on predicted)?

The network is a small MNIST-1D residual CNN (:class:`numerics.zoo_cnn1d.ResCNN1d`, 4 blocks)
trained briefly here; each seed draws fresh MNIST-1D samples for every role (the factory form).
Sizes are reduced so that it runs in well under a minute on one core: with 4 sites the smallest
exact one-sided p-value is 1/24, so a rho here can at best just reach the 0.05 level. The stored
studies on four networks, with their commands, are in ``docs/predicted/`` (``benchmarks/study_predicted.py``).
"""

# %%
# A trained network and a data factory
# ------------------------------------
import matplotlib.pyplot as plt
import torch

import depthcert as dc
from numerics import mnist1d
from numerics.zoo_cnn1d import ResCNN1d

net = ResCNN1d(1, 16, 4, 10, groups=4, seed=0)
x, y = mnist1d.sample(2000, 10**6)                     # f_old's training sample (not one of the roles below)
opt = torch.optim.Adam(net.parameters(), lr=3e-3)
gen = torch.Generator().manual_seed(0)
for _ in range(150):
    i = torch.randint(0, 2000, (64,), generator=gen)
    opt.zero_grad()
    torch.nn.functional.cross_entropy(net(x[i]), y[i]).backward()
    opt.step()
net.eval()

SIZES = {"scan": 256, "train": 512, "heldout": 1000}


def draw(seed, role):
    """An independent MNIST-1D sample per seed and role: the seeds redraw the data of every role."""
    return mnist1d.sample(SIZES[role], 1000 * seed + list(SIZES).index(role))


# %%
# Predicted and realised gains per site, horizon and seed
# --------------------------------------------------------
df = dc.predicted_vs_observed(net, draw, sites="blocks.*", horizons=(0, 1, 10, 50), seeds=(0, 1, 2), lr=1e-3,
                              curvature_n=64)
means = df[df["kind"] == "mean"]
print(means[["site", "horizon", "predicted_gain", "realised_gain", "realised_lo", "realised_hi", "tune_gain"]]
      .to_string(index=False, float_format=lambda v: f"{v:.4f}"))

# %%
# Does a score rank the sites as the realised gains do?
# -----------------------------------------------------
# One row per horizon and score: rho, its exact one-sided permutation p-value (``predicts`` is
# ``p <= 0.05``; above it, there is no evidence that the score predicts), and at horizon 0 the
# calibration slope of realised on predicted with its interval (1 is calibrated).
calib = dc.calibration(df)
print(calib[["horizon", "score", "rho", "p_one_sided", "predicts", "slope", "slope_lo", "slope_hi"]]
      .to_string(index=False, float_format=lambda v: f"{v:.3f}"))

# %%
# The plot: predicted against observed per horizon, and rho against horizon
# -------------------------------------------------------------------------
# Left panels: per horizon, the site means of ``predicted_gain`` against the realised held-out gain
# (t intervals over the seeds, the identity line dashed). Right panel: rho against the horizon for
# every score (filled markers: one-sided p at most 0.05).
fig = dc.plot_calibration(df, calib)
plt.show()
