"""
Is it deep enough yet? A saturation callback inside PyTorch Lightning
=====================================================================

:class:`depthcert.integrations.lightning.SaturationCallback` asks Paper B's question inside
``trainer.fit``: every ``every_n_steps`` optimiser steps it scans the ``LightningModule`` on a
held-out probe (:func:`depthcert.saturation`), logs the verdict, ``AG_max`` and each site's
scores to the trainer's loggers (here Lightning's ``CSVLogger``) and keeps a pandas table. With
``grow=True`` it inserts a function-preserving block at the best site once, adds its parameters
to the optimiser as a new param group (their Adam state starting at zero) and training goes on.

The network is written in this example: a small residual MLP trained on MNIST-1D (i.i.d.
samples from :func:`numerics.mnist1d.sample`, offline). The training sample and the probe are
independent draws (seeds 1 and 2); the callback checks at its first scan that they share no
input row. Sizes are tiny so that it runs in seconds on one core (``pip install 'depthcert[lightning]'``).
"""

# %%
# A LightningModule of our own, and the callback
# ----------------------------------------------
import tempfile

import lightning.pytorch as pl
import matplotlib.pyplot as plt
import pandas as pd
import torch
from torch import nn

from depthcert.integrations.lightning import SaturationCallback
from numerics import mnist1d


class Block(nn.Module):
    """Pre-norm residual block: ``x -> x + W2 tanh(W1 LayerNorm(x))``."""

    def __init__(self, d):
        super().__init__()
        self.f = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.Tanh(), nn.Linear(d, d))

    def forward(self, x):
        return x + self.f(x)


class Net(pl.LightningModule):
    def __init__(self, d=32):
        super().__init__()
        torch.manual_seed(0)
        self.stem = nn.Linear(40, d)
        self.blocks = nn.ModuleList([Block(d), Block(d)])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        h = self.stem(x.flatten(1))   # MNIST-1D inputs are (n, 1, 40)
        for block in self.blocks:
            h = block(h)
        return self.head(h)

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


train = mnist1d.sample(1024, seed=1)   # training sample
probe = mnist1d.sample(384, seed=2)    # the scan's probe: an independent draw
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(*train), batch_size=64, shuffle=True,
                                     generator=torch.Generator().manual_seed(0))
cb = SaturationCallback(probe, sites="blocks.*", every_n_steps=25, grow=True, max_blocks=1, curvature_n=32)
logs = tempfile.mkdtemp()
trainer = pl.Trainer(max_steps=100, logger=pl.loggers.CSVLogger(logs, name="csv"), enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, accelerator="cpu", log_every_n_steps=8,
                     callbacks=[cb])
module = Net()
trainer.fit(module, loader)

# %%
# The callback's table
# --------------------
# One row per scan: the verdict, ``AG_max`` (the largest per-site first-order gain), the block
# inserted (if any) and the scan's cost as a fraction of the training time since the last scan.
columns = ["step", "verdict", "AG_max", "best_site", "inserted", "cost_fraction"]
print(cb.table[[c for c in columns if c in cb.table.columns]].to_string(index=False))
print("new parameters in the optimiser:", sorted(cb.monitor.new_parameters))

# %%
# A logged score over the steps
# -----------------------------
# ``AG_max`` as the CSV logger stored it (``depthcert/AG_max``), with the step of the insertion.
metrics = pd.read_csv(f"{trainer.logger.log_dir}/metrics.csv")
logged = metrics.dropna(subset=["depthcert/AG_max"])
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(logged["step"], logged["depthcert/AG_max"], "o-", label="AG_max (CSV logger)")
for step in cb.table.loc[cb.table["inserted"].notna(), "step"]:
    ax.axvline(step, color="grey", ls="--", label=f"block inserted (step {step})")
ax.set_yscale("log")
ax.set_xlabel("optimiser step")
ax.set_ylabel("AG_max")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
