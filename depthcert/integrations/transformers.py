"""``SaturationCallback`` for the Hugging Face ``Trainer`` (a ``TrainerCallback``; ``pip install 'depthcert[hf]'``).

Every ``every_n_steps`` optimiser steps (and/or after each evaluation, ``on_evaluate=True``) it
scans the model on the user's held-out ``probe`` (:func:`depthcert.saturation`; for a causal
language model ``output="logits"``, ``sites="model.layers.*"`` and ``probe = (x, y)`` with ``y``
the next tokens), logs the verdict, ``AG_max``, each site's scores and its own cost, and keeps
``SaturationCallback.table``. Logging: with ``SaturationCallback.attach`` (``cb.attach(trainer)``)
the metrics go through ``trainer.log`` -- ``state.log_history`` and every reporting integration
(TensorBoard, W&B, ...); without it they are appended to ``state.log_history`` only (the
callback API hands no trainer). ``grow=True``: a real decoder layer (zero output projections)
at the best site of a Hugging Face decoder -- the model stays its own class, so
``trainer.save_model()`` / ``save_pretrained`` write an ordinary checkpoint -- or a hook block
elsewhere; its parameters a new param group of the optimiser (state starting at zero).
``stop_when_saturated=True``: ``control.should_training_stop`` on a ``saturated`` verdict. See
``depthcert.integrations._core`` for the metrics, the table and the role check.
"""
from __future__ import annotations

from depthcert.integrations._core import SaturationMonitor, missing_extra

try:
    from transformers import TrainerCallback
    _Base = TrainerCallback
except ImportError:   # pragma: no cover - optional extra: the module imports, the callback cannot be made
    _Base = missing_extra("depthcert.integrations.transformers.SaturationCallback", "transformers", "hf")

__all__ = ["SaturationCallback"]


class SaturationCallback(_Base):
    """Scan (and optionally grow) the model of a ``transformers.Trainer`` during ``trainer.train()``.

    Parameters
    ----------
    probe : data
        Held out from the training data (checked at the first scan against the train dataloader's
        ``input_ids``, unless ``check_disjoint=False``).
    sites : str or list, default "model.layers.*"
        Insertion sites, as paths in the model.
    every_n_steps : int or None, default 1000
        Scan after every ``every_n_steps``-th optimiser step (None: only with ``on_evaluate``).
    on_evaluate : bool, default False
        Also scan after every evaluation.
    output : default "logits"
        The logits in the model's output (a ``ModelOutput``).
    grow, max_blocks, layer_init, stop_when_saturated, loss, level, eps, check_disjoint, batch_x, seed, csv_path, **scan_kw
        As ``depthcert.integrations._core.SaturationMonitor``.

    Examples
    --------
    >>> import torch
    >>> cb = SaturationCallback(probe=(torch.zeros(64, 8, dtype=torch.long), torch.zeros(64, 8, dtype=torch.long)),
    ...                         every_n_steps=100, grow=True)
    >>> cb.table.empty, cb.monitor.sites, cb.monitor.output
    (True, 'model.layers.*', 'logits')
    """

    def __init__(self, probe, sites="model.layers.*", *, every_n_steps: int | None = 1000, on_evaluate: bool = False,
                 output="logits", **kw):
        super().__init__()
        self.monitor = SaturationMonitor(probe, sites, every_n_steps=every_n_steps, output=output, **kw)
        self.on_evaluate_scan = on_evaluate
        self.trainer = None
        self._checked = False

    @property
    def table(self):
        """One row per scan (``pandas.DataFrame``)."""
        return self.monitor.table

    def attach(self, trainer) -> "SaturationCallback":
        """Add this callback to ``trainer`` and log through ``trainer.log`` (every reporting integration)."""
        self.trainer = trainer
        trainer.add_callback(self)
        return self

    def _run(self, state, control, model, optimizer=None, lr_scheduler=None, train_dataloader=None):
        if not self._checked:
            self.monitor.check_roles(model, train_dataloader)
            self._checked = True
        metrics = self.monitor(model, state.global_step, optimizer, [lr_scheduler] if lr_scheduler is not None else [])
        if self.trainer is not None:
            self.trainer.log(metrics)
        else:
            state.log_history.append({**metrics, "step": state.global_step})
        if self.monitor.stop_when_saturated and self.monitor.saturated:
            control.should_training_stop = True
        return control

    def on_step_end(self, args, state, control, model=None, optimizer=None, lr_scheduler=None, train_dataloader=None,
                    **kwargs):
        self.monitor.step_done()
        if self.monitor.due(state.global_step):
            return self._run(state, control, model, optimizer, lr_scheduler, train_dataloader)
        return control

    def on_evaluate(self, args, state, control, model=None, optimizer=None, lr_scheduler=None, train_dataloader=None,
                    **kwargs):
        if self.on_evaluate_scan:
            return self._run(state, control, model, optimizer, lr_scheduler, train_dataloader)
        return control
