"""What both training-loop callbacks share: scan on a held-out probe, log, keep a table, grow in place (THEORY §8).

Nothing here imports Lightning or transformers. :class:`SaturationMonitor` is called by a loop's
callback with the model, the step and the optimiser:

* **scan** -- :func:`depthcert.saturation` on the user's ``probe`` (the model in eval mode for
  the scan, gradients on even inside a loop's ``no_grad`` / ``inference_mode``; its train/eval
  mode restored after);
* **metrics** -- ``depthcert/saturated``, ``depthcert/improvable`` (0 or 1: loggers take numbers;
  the verdict's word is in the table and the log message), ``depthcert/AG_max``,
  ``depthcert/gain_ucb``, ``depthcert/blocks_added``, ``depthcert/cost_fraction`` and per site
  ``depthcert/<score>/<site>`` for ``AG_max``, ``predicted_gain``, ``gain_ucb``;
* **table** -- one row per scan (a ``pandas.DataFrame``: ``step, verdict, best_site, AG_max,
  gain_ucb, cost_s, train_s, cost_fraction, cost_in_steps, inserted``, and ``AG_max:<site>``); with
  ``csv_path`` it is also written there as CSV after every scan (atomically: a crash keeps the last table);
* **grow** -- in place, so that the optimiser's references stay valid: a Hugging Face decoder
  (anywhere in the model) at a decoder-layer site gets a real layer
  (:func:`numerics.interop.hf_layers.insert_decoder_layer`), any other site a zero-init readout
  block on a forward hook (:func:`depthcert.api._attach.attach_unit`); both start as the identity.
  The new parameters go to the optimiser as a **new param group** (the first group's
  hyper-parameters, its current ``lr``); the optimiser's state for them starts at zero (it is
  created lazily at their first step: Paper B's zero-state protocol). A scheduler with per-group
  ``base_lrs`` / ``lr_lambdas`` gets the first group's for the new one.
* **cost** -- ``cost_fraction``: the callback's seconds (scan and growth) over the training seconds
  since its previous call (the loop's own time, the callback's excluded); ``cost_in_steps``: the
  same seconds over the mean training step.

**Choice** (probe role): the probe must not share an input row with the training data; the first
scan checks it (every training batch's inputs, exactly, as bytes) and refuses an overlap
(``ValueError``); ``check_disjoint=False`` leaves it to the user.
"""
from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path
from typing import Callable, Iterable

import torch
from torch import nn

__all__ = ["SaturationMonitor", "grow_in_place"]

log = logging.getLogger("depthcert.integrations")

#: per-site scores logged as ``depthcert/<score>/<site>``.
SITE_SCORES = ("AG_max", "predicted_gain", "gain_ucb")


def _row_bytes(x: torch.Tensor) -> list[bytes]:
    x = x.detach().cpu()
    x = x.to(torch.float64) if x.is_floating_point() else x.to(torch.int64)
    return [r.numpy().tobytes() for r in x.reshape(x.shape[0], -1)]


def default_batch_x(batch):
    """The inputs of a training batch: ``batch[0]`` of a tuple/list, ``input_ids`` / ``x`` of a dict, a tensor itself."""
    if isinstance(batch, torch.Tensor):
        return batch
    if isinstance(batch, (tuple, list)) and batch and isinstance(batch[0], torch.Tensor):
        return batch[0]
    if isinstance(batch, dict):
        for key in ("input_ids", "x", "inputs"):
            if isinstance(batch.get(key), torch.Tensor):
                return batch[key]
    raise ValueError(f"a training batch is a {type(batch).__name__}, must be a tensor, a tuple (x, ...) or a dict with "
                     "'input_ids' or 'x' to check the probe's disjointness (give batch_x=callable, or "
                     "check_disjoint=False to take that on yourself).")


def _hf_host(model: nn.Module, site: str):
    """``(prefix, hf_model, layer index)`` when ``site`` is a decoder layer of a supported Hugging Face decoder inside ``model``."""
    from numerics.interop.hf_layers import is_layer_site, supported

    for prefix, mod in model.named_modules():
        if not supported(mod) or not (prefix == "" or site.startswith(prefix + ".")):
            continue
        rest = site[len(prefix) + 1:] if prefix else site
        if is_layer_site(mod, rest):
            return prefix, mod, int(rest.rpartition(".")[2])
    return None


def grow_in_place(model: nn.Module, site: str, rep, layer_init: str = "copy_zero") -> tuple[str, dict[str, nn.Parameter]]:
    """Insert an identity-at-start block at ``site`` of ``model`` in place; ``(kind, {name: new parameter})``.

    ``kind``: ``"layer:<layer_init>"`` (a real Hugging Face decoder layer) or ``"hook:zero"`` (a
    zero-init readout block of the scan ``rep`` on a forward hook)."""
    host = _hf_host(model, site)
    if host is not None:
        from numerics.interop.hf_layers import insert_decoder_layer, layer_list_path

        prefix, hf, k = host
        insert_decoder_layer(hf, k, layer_init)
        path = f"{prefix}.{layer_list_path(hf)}.{k + 1}" if prefix else f"{layer_list_path(hf)}.{k + 1}"
        return f"layer:{layer_init}", {f"{path}.{n}": p for n, p in model.get_submodule(path).named_parameters()}
    from depthcert.api._attach import _units, attach_unit
    from depthcert.api._insert import family_block

    block, _ = family_block(model, site, "readout", "zero", rep)
    unit = attach_unit(model, site, block)
    path = next(name for name, u in _units(model) if u is unit)
    return "hook:zero", {f"{path}.{n}": p for n, p in unit.named_parameters()}


def add_param_group(optimizer: torch.optim.Optimizer, params, schedulers: Iterable = ()) -> dict:
    """The new ``params`` as one more param group of ``optimizer`` (the first group's hyper-parameters, its
    current ``lr``; no state: it starts at zero); each scheduler with per-group lists gets the first group's entry."""
    first = optimizer.param_groups[0]
    group = {k: v for k, v in first.items() if k != "params"}
    group["params"] = [p for p in params if p.requires_grad]
    optimizer.add_param_group(group)
    for sched in schedulers:
        sched = getattr(sched, "scheduler", sched)   # accelerate's AcceleratedScheduler wraps the torch scheduler
        for attr in ("base_lrs", "lr_lambdas", "_last_lr"):
            seq = getattr(sched, attr, None)
            if isinstance(seq, list) and len(seq) == len(optimizer.param_groups) - 1:
                seq.append(seq[0] if attr != "base_lrs" else first.get("initial_lr", first["lr"]))
    return optimizer.param_groups[-1]


@contextlib.contextmanager
def _scan_mode(model: nn.Module):
    was = model.training
    model.eval()
    try:
        with torch.inference_mode(False), torch.enable_grad():
            yield
    finally:
        model.train(was)


def missing_extra(what: str, package: str, extra: str) -> type:
    """The base class a callback gets when its optional loop library is not installed: importing the module works,
    making the callback raises an ImportError naming the extra to install."""
    class Missing:
        def __init__(self, *args, **kwargs):
            raise ImportError(f"{what} needs {package}: pip install 'depthcert[{extra}]'")
    return Missing


class SaturationMonitor:
    """The loop-independent part of both callbacks (see the module docstring); ``scan_kw`` goes to :func:`depthcert.saturation`."""

    def __init__(self, probe, sites="blocks.*", *, every_n_steps: int | None = 1000, loss="cross_entropy", output=None,
                 level: float = 0.05, eps: float | None = None, grow: bool = False, max_blocks: int = 1,
                 layer_init: str = "copy_zero", stop_when_saturated: bool = False, check_disjoint: bool = True,
                 batch_x: Callable | None = None, seed: int = 0, csv_path=None, **scan_kw):
        if every_n_steps is not None and not (isinstance(every_n_steps, int) and every_n_steps >= 1):
            raise ValueError(f"every_n_steps == {every_n_steps!r}, must be None or an int >= 1.")
        if not (isinstance(max_blocks, int) and max_blocks >= 0):
            raise ValueError(f"max_blocks == {max_blocks!r}, must be an int >= 0.")
        if layer_init not in ("copy_zero", "zero"):
            raise ValueError(f"layer_init == {layer_init!r}, must be one of ['copy_zero', 'zero'].")
        self.probe, self.sites, self.every_n_steps, self.loss, self.output = probe, sites, every_n_steps, loss, output
        self.level, self.eps, self.grow, self.max_blocks, self.layer_init = level, eps, grow, max_blocks, layer_init
        self.stop_when_saturated, self.check_disjoint, self.seed, self.scan_kw = stop_when_saturated, check_disjoint, seed, scan_kw
        self.batch_x = batch_x or default_batch_x
        self.csv_path = None if csv_path is None else Path(csv_path)   # the table as CSV, rewritten after every scan
        self.rows: list[dict] = []
        self.reports: list = []
        self.blocks_added = 0
        self.new_parameters: dict = {}   # the last inserted block's {name: parameter} (live)
        self.inserted_values: dict = {}   # their values when inserted
        self._probe_rows: set | None = None
        self._mark, self._steps_since = None, 0

    # --- roles -----------------------------------------------------------------------------------
    def probe_rows(self, model) -> set:
        if self._probe_rows is None:
            from depthcert.api._data import as_stream

            self._probe_rows = {b for x, _ in as_stream(self.probe, "probe", model) for b in _row_bytes(x)}
        return self._probe_rows

    def check_roles(self, model, train_batches: Iterable | None) -> None:
        """Refuse (``ValueError``) a probe that shares an input row with ``train_batches`` (skipped when
        ``check_disjoint`` is False or there is no training data to read)."""
        if not self.check_disjoint or train_batches is None:
            return
        rows = self.probe_rows(model)
        for k, batch in enumerate(train_batches):
            shared = sum(b in rows for b in _row_bytes(self.batch_x(batch)))
            if shared:
                raise ValueError(f"probe shares {shared} input rows with training batch {k}, must be held out from the "
                                 "training data (THEORY §10: independent roles; check_disjoint=False to take that on yourself).")

    # --- timing ----------------------------------------------------------------------------------
    def step_done(self) -> None:
        """Called after each training step (its time counts as training time)."""
        if self._mark is None:
            self._mark = time.perf_counter()
        self._steps_since += 1

    def due(self, step: int) -> bool:
        return self.every_n_steps is not None and step > 0 and step % self.every_n_steps == 0

    # --- the call --------------------------------------------------------------------------------
    def __call__(self, model: nn.Module, step: int, optimizer=None, schedulers: Iterable = ()) -> dict:
        """Scan (and grow) ``model`` at ``step``; the metrics to log (numbers only)."""
        import depthcert as dc

        start = time.perf_counter()
        train_s = start - self._mark if self._mark is not None else float("nan")
        steps = self._steps_since
        eps = {} if self.eps is None else {"eps": self.eps}
        from numerics.distributed import local_only

        # under DDP every rank holds the whole probe: each scans it alone, as without a process group
        with _scan_mode(model), local_only():
            rep = dc.saturation(model, self.probe, self.loss, self.sites, level=self.level, seed=self.seed + len(self.rows),
                                output=self.output, **eps, **self.scan_kw)
        self.reports.append(rep)
        inserted, n_new = None, 0
        if self.grow and not rep.saturated and self.blocks_added < self.max_blocks:
            kind, new = grow_in_place(model, rep.best_site, rep, self.layer_init)
            if optimizer is not None and new:
                add_param_group(optimizer, new.values(), schedulers)
            self.blocks_added += 1
            inserted, n_new = f"{kind}@{rep.best_site}", sum(p.numel() for p in new.values())
            self.new_parameters = new
            self.inserted_values = {n: p.detach().clone() for n, p in new.items()}
        cost = time.perf_counter() - start
        ag = {s["site"]: s["AG_max"] for s in rep.sites}
        row = {"step": step, "verdict": rep.verdict, "best_site": rep.best_site, "AG_max": max(ag.values()),
               "gain_ucb": rep.gain_ucb, "predicted_gain": rep.predicted_gain, "inserted": inserted, "new_params": n_new,
               "cost_s": cost, "train_s": train_s, "steps_since": steps,
               "cost_fraction": cost / train_s if train_s > 0 else float("nan"),
               "cost_in_steps": cost / (train_s / steps) if steps and train_s > 0 else float("nan"),
               **{f"AG_max:{s}": v for s, v in ag.items()}}
        self.rows.append(row)
        if self.csv_path is not None:   # atomically: a crash mid-write leaves the previous table
            from plumbing.io import atomic_write

            table = self.table
            atomic_write(self.csv_path, lambda tmp: table.to_csv(tmp, index=False))
        log.info("depthcert step %d: %s (AG_max %.3g, best site %s)%s", step, rep.verdict, row["AG_max"], rep.best_site,
                 f"; inserted {inserted}" if inserted else "")
        self._mark, self._steps_since = time.perf_counter(), 0
        return self.metrics(rep, row)

    def metrics(self, rep, row: dict) -> dict:
        out = {"depthcert/saturated": float(rep.saturated), "depthcert/improvable": float(rep.verdict == "improvable"),
               "depthcert/AG_max": float(row["AG_max"]), "depthcert/gain_ucb": float(rep.gain_ucb),
               "depthcert/blocks_added": float(self.blocks_added)}
        if row["cost_fraction"] == row["cost_fraction"]:
            out["depthcert/cost_fraction"] = float(row["cost_fraction"])
        for s in rep.sites:
            for score in SITE_SCORES:
                if s.get(score) is not None:
                    out[f"depthcert/{score}/{s['site']}"] = float(s[score])
        return out

    @property
    def table(self):
        """One row per scan (``pandas.DataFrame``)."""
        import pandas as pd

        return pd.DataFrame(self.rows)

    @property
    def saturated(self) -> bool:
        return bool(self.reports) and self.reports[-1].saturated
