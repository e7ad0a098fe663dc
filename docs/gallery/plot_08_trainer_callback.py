"""
Is it deep enough yet? A saturation callback inside the Hugging Face Trainer
============================================================================

:class:`depthcert.integrations.transformers.SaturationCallback` is a ``TrainerCallback``: every
``every_n_steps`` optimiser steps of ``trainer.train()`` it scans the model on a held-out probe
(:func:`depthcert.saturation` at ``model.layers.*``, on the ``logits`` of the model's output),
logs the verdict, ``AG_max`` and each site's scores through ``trainer.log`` (so into
``trainer.state.log_history`` and every ``report_to`` integration) and keeps a pandas table.
With ``grow=True`` it inserts one *real* decoder layer at the best site (a copy of its neighbour
with ``o_proj`` and ``down_proj`` zero, LLaMA-Pro's initialisation: the function is unchanged),
adds the new layer's parameters to the optimiser and training goes on; the grown model saves
with ``trainer.save_model`` and loads with ``from_pretrained``.

The model is a tiny ``LlamaForCausalLM`` made from a config (random weights, 2 layers, hidden
32) learning next-character prediction on the Python standard library's own source
(:class:`numerics.corpus.CharCorpus`, offline). Training windows come from the corpus' train
files, the probe from its held-out files (no file in both). Sizes are tiny so that it runs in
seconds on one core (``pip install 'depthcert[hf]'``).
"""

# %%
# A tiny Llama, the Trainer and the callback
# ------------------------------------------
import tempfile

import matplotlib.pyplot as plt
import torch
import transformers
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

from depthcert.integrations.transformers import SaturationCallback
from numerics.corpus import CharCorpus

transformers.logging.set_verbosity_error()
corpus = CharCorpus(200_000)
torch.manual_seed(0)
config = transformers.LlamaConfig(vocab_size=CharCorpus.vocab_size, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                                  max_position_embeddings=128, bos_token_id=0, eos_token_id=1, pad_token_id=1)
config._attn_implementation = "eager"
model = transformers.LlamaForCausalLM(config)


class Windows(torch.utils.data.Dataset):
    """Causal-LM rows for the Trainer: ``labels = input_ids`` (the model shifts them)."""

    def __init__(self, x):
        self.x = x

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"input_ids": self.x[i], "labels": self.x[i]}


probe = corpus.windows("held", 96, 24, seed=5)          # the scan's probe: held-out files, next-character targets
train_x, _ = corpus.windows("train", 512, 24, seed=11)   # training windows: the train files
# different files can still hold the same 24 characters (a run of spaces, a licence line): the callback
# refuses a probe that shares an input row with the training data, so such windows are dropped from training
train_x = train_x[~(train_x[:, None, :] == probe[0][None]).all(-1).any(1)]
print(f"{len(train_x)} training windows, {len(probe[0])} probe windows")
out = tempfile.mkdtemp()
args = TrainingArguments(output_dir=f"{out}/run", max_steps=60, per_device_train_batch_size=16, learning_rate=3e-3,
                         logging_steps=10, report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True,
                         dataloader_num_workers=0, seed=0)
trainer = Trainer(model=model, args=args, train_dataset=Windows(train_x))
cb = SaturationCallback(probe, every_n_steps=15, grow=True, max_blocks=1, curvature_n=16, batch_size=48).attach(trainer)
trainer.train()

# %%
# The callback's table
# --------------------
# One row per scan: the verdict, ``AG_max``, the layer inserted (if any) and the scan's cost as a
# fraction of the training time since the last scan.
columns = ["step", "verdict", "AG_max", "best_site", "inserted", "cost_fraction"]
print(cb.table[[c for c in columns if c in cb.table.columns]].to_string(index=False))
print("layers now:", model.config.num_hidden_layers, "| layer_idx:", [m.self_attn.layer_idx for m in model.model.layers])

# %%
# A logged score over the steps, and the grown model reloaded
# -----------------------------------------------------------
# ``AG_max`` as ``trainer.log`` recorded it (``depthcert/AG_max`` in ``log_history``) next to the
# training loss, with the step of the insertion. The grown model is an ordinary checkpoint.
history = trainer.state.log_history
scans = [(h["step"], h["depthcert/AG_max"]) for h in history if "depthcert/AG_max" in h]
losses = [(h["step"], h["loss"]) for h in history if "loss" in h]
fig, ax = plt.subplots(figsize=(6, 3))
ax.plot(*zip(*scans), "o-", label="AG_max (trainer.log)")
ax.plot(*zip(*losses), "s:", label="training loss")
for step in cb.table.loc[cb.table["inserted"].notna(), "step"]:
    ax.axvline(step, color="grey", ls="--", label=f"layer inserted (step {step})")
ax.set_yscale("log")
ax.set_xlabel("optimiser step")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

trainer.save_model(f"{out}/grown")
back = AutoModelForCausalLM.from_pretrained(f"{out}/grown").eval()
print("reloaded:", type(back).__name__, "with", back.config.num_hidden_layers, "layers")
