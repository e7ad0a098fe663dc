"""``SaturationCallback`` for PyTorch Lightning (``pip install 'depthcert[lightning]'``).

Every ``every_n_steps`` training steps (and/or at the end of each validation epoch,
``on_validation=True``) it scans the ``LightningModule`` on the user's held-out ``probe``
(:func:`depthcert.saturation`; ``sites`` are paths in the module, e.g. ``"net.blocks.*"``), logs the
verdict, ``AG_max``, each site's scores and its own cost to every logger of the trainer
(``logger.log_metrics``: TensorBoard, CSV, W&B, ...), and keeps ``SaturationCallback.table``.
``grow=True``: a function-preserving block at the best site (in place; a real layer in a Hugging
Face decoder), its parameters a new param group of the first optimiser (state starting at zero);
``stop_when_saturated=True``: ``trainer.should_stop`` on a ``saturated`` verdict. The grown
module's insertions are stored in checkpoints (``checkpoint["depthcert"]``): rebuild the module
with :func:`depthcert.load_grown` (hook blocks) before loading its ``state_dict``. See
``depthcert.integrations._core`` for the metrics, the table and the role check.
"""
from __future__ import annotations

from depthcert.integrations._core import SaturationMonitor, missing_extra

try:
    import lightning.pytorch as pl
    _Base = pl.Callback
except ImportError:   # pragma: no cover - optional extra: the module imports, the callback cannot be made
    _Base = missing_extra("depthcert.integrations.lightning.SaturationCallback", "Lightning", "lightning")

__all__ = ["SaturationCallback"]


class SaturationCallback(_Base):
    """Scan (and optionally grow) a LightningModule during ``trainer.fit``.

    Parameters
    ----------
    probe : data
        Held out from the training data (checked at the first scan, unless ``check_disjoint=False``).
    sites : str or list, default "blocks.*"
        Insertion sites, as paths in the LightningModule.
    every_n_steps : int or None, default 1000
        Scan after every ``every_n_steps``-th optimiser step (None: only with ``on_validation``).
    on_validation : bool, default False
        Also scan at the end of every validation epoch.
    grow, max_blocks, layer_init, stop_when_saturated, loss, output, level, eps, check_disjoint, batch_x, seed, csv_path, **scan_kw
        As ``depthcert.integrations._core.SaturationMonitor``.

    Examples
    --------
    >>> import torch
    >>> cb = SaturationCallback(probe=(torch.randn(64, 4), torch.zeros(64, dtype=torch.long)), sites="net.1",
    ...                         every_n_steps=50, grow=True)
    >>> cb.table.empty, cb.monitor.every_n_steps
    (True, 50)
    """

    def __init__(self, probe, sites="blocks.*", *, every_n_steps: int | None = 1000, on_validation: bool = False, **kw):
        super().__init__()
        self.monitor = SaturationMonitor(probe, sites, every_n_steps=every_n_steps, **kw)
        self.on_validation = on_validation
        self._checked, self._last = False, None

    @property
    def table(self):
        """One row per scan (``pandas.DataFrame``)."""
        return self.monitor.table

    def _run(self, trainer, pl_module) -> None:
        if not self._checked:
            self.monitor.check_roles(pl_module, trainer.train_dataloader)
            self._checked = True
        opt = trainer.optimizers[0] if trainer.optimizers else None
        scheds = [c.scheduler for c in trainer.lr_scheduler_configs]
        metrics = self.monitor(pl_module, trainer.global_step, opt, scheds)
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)
        if self.monitor.stop_when_saturated and self.monitor.saturated:
            trainer.should_stop = True

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.monitor.step_done()
        if self.monitor.due(trainer.global_step) and self._last != trainer.global_step:   # once per optimiser step
            self._last = trainer.global_step
            self._run(trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module) -> None:
        if self.on_validation and not trainer.sanity_checking:
            self._run(trainer, pl_module)

    def on_save_checkpoint(self, trainer, pl_module, checkpoint) -> None:
        """The checkpoint's ``"depthcert"`` entry: the blocks inserted so far and the scans' table."""
        from depthcert.api._attach import insertions

        checkpoint["depthcert"] = {"insertions": insertions(pl_module), "table": self.monitor.rows}
