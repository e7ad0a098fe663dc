"""Forwards that skip the part of a network before a site (the curvature passes' shortcut, THEORY §2).

Every evaluation of :func:`numerics.estimators.curvature_along` on a batch changes the network
only *at* a site (``u -> u + h_V(u)``): everything computed before the site's output is the same
in every pass. :class:`SiteReplay` records, in the first forward of each batch, the outputs of the
*maximal* module calls that finish before the site's output exists (the site's own call included,
its raw output before any forward hook); later forwards of that batch return copies of them
instead of running those modules, so only the part after the site is computed and differentiated.

Exactly the same numbers: a skipped call would compute the same output from the same input (eval
mode, no randomness). Checked, not assumed: after a recording, :meth:`SiteReplay.confirm` compares
a replayed forward's per-sample losses with the recorded ones and switches the replay off for that
batch (full forwards, as without it) when they differ beyond rounding. Only calls whose outputs are
tensors (or tuples / lists / dicts of tensors, numbers, None) are replayed; any other call is
entered and its children are replayed instead. **Choice**: at most :data:`MAX_BYTES` of recorded
outputs per replay; batches beyond it run in full. A model with a module whose ``forward`` cannot be
replaced (scripted or traced by ``torch.jit`` anywhere in it, or e.g. a read-only ``forward``) runs in full.
"""
from __future__ import annotations

import contextlib
import functools

import torch
from torch import nn
from torch.utils import _pytree

from numerics.sites import module_at

__all__ = ["MAX_BYTES", "SiteReplay", "record_together"]

#: **Choice**: the largest total size of recorded outputs one replay keeps (bytes).
MAX_BYTES = 1 << 30
_LEAVES = (torch.Tensor, type(None), bool, int, float, str)


class _Call:
    __slots__ = ("module", "index", "children", "done", "output")

    def __init__(self, module, index: int):
        self.module, self.index, self.children, self.done, self.output = module, index, [], False, None


def _replayable(out) -> bool:
    return all(isinstance(leaf, _LEAVES) for leaf in _pytree.tree_leaves(out))


def _tensors(out) -> list:
    return [v for v in _pytree.tree_leaves(out) if isinstance(v, torch.Tensor)]


def _counts(call: _Call, into: dict) -> dict:
    """Calls per module inside ``call`` (the counters a skipped call must still advance)."""
    for child in call.children:
        into[child.module] = into.get(child.module, 0) + 1
        _counts(child, into)
    return into


def _forget(call: _Call) -> None:
    for child in call.children:
        _forget(child)
    call.children, call.output = [], None


def _frozen(stack: list, site_call: _Call, copies: dict | None = None) -> dict:
    """``{(module, index): (output copy, counts)}`` of the maximal calls of ``stack`` done when ``site_call``
    finished (empty when the site's own output is not replayable); ``copies``: ``{call: its copy}`` shared
    by the sites of one recording, so that a call recorded for several sites is copied once."""
    chosen, todo = [], [c for a in stack for c in a.children if c.done] or [site_call]
    while todo:
        call = todo.pop(0)
        if _replayable(call.output):
            chosen.append(call)
        else:
            todo.extend(c for c in call.children if c.done)
    if site_call not in chosen:
        return {}
    copy = functools.partial(_pytree.tree_map, lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v)
    copies = {} if copies is None else copies
    for c in chosen:
        if c not in copies:
            copies[c] = copy(c.output)
    return {(c.module, c.index): (copies[c], _counts(c, {})) for c in chosen}


class SiteReplay:
    """Recorded module outputs before ``site`` for the batches of one sample (module docstring).

    Use one replay per ``(model, site, sample, batching)``: the key of a batch is its
    ``(start, stop)`` in the sample. A recorded output that a replayed forward changes in place
    ends that batch's replay (the pass itself computed what a full pass computes).

    Example:
        >>> net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
        >>> rep, x = SiteReplay(net, "1"), torch.randn(4, 2)
        >>> with rep.forward((0, 4)):
        ...     a = net(x)
        >>> with rep.forward((0, 4)):   # replayed: net[0] and net[1] are not run
        ...     b = net(x)
        >>> torch.equal(a, b), rep.replayed((0, 4))
        (True, True)
    """

    def __init__(self, model: nn.Module, site: str, max_bytes: int = MAX_BYTES):
        self.model, self.site = model, module_at(model, site)
        self.max_bytes, self.bytes = int(max_bytes), 0
        self._cache: dict = {}     # key -> {(module, call index): (output, calls inside it per module)}
        self._versions: dict = {}  # key -> [(tensor, version)] of the recorded outputs
        self._off: set = set()     # keys that run in full
        self._mode, self._key, self._count, self._stack, self._rec = None, None, {}, [], None

    def replayed(self, key) -> bool:
        """True when forwards of batch ``key`` skip the part before the site."""
        return key in self._cache

    @contextlib.contextmanager
    def forward(self, key):
        """Within the context, one forward of the model on batch ``key``: recorded the first time,
        replayed after (full and untouched when the replay is off for that key)."""
        if key in self._cache and any(t._version != v for t, v in self._versions[key]):
            self._drop(key)   # changed in place since it was recorded (e.g. by another site's forward: shared copies)
        full = key in self._off or self.site is self.model or isinstance(self.model, torch.jit.ScriptModule)
        if full or (key not in self._cache and self.bytes >= self.max_bytes):
            yield self
            return
        self._mode, self._key = ("replay" if key in self._cache else "record"), key
        self._count, self._stack, self._rec = {}, [], None
        try:
            saved = _replace_forwards(self.model, self._wrap)
        except (AttributeError, RuntimeError, TypeError):   # e.g. a scripted or traced submodule: no replay (restored)
            self._drop(key)
            self._mode = self._key = None
            yield self
            return
        try:
            yield self
        finally:
            _restore(saved)
            if self._mode == "record":
                self._store(key)
            elif any(t._version != v for t, v in self._versions[key]):
                self._drop(key)
            self._mode, self._key, self._stack, self._rec = None, None, [], None

    def confirm(self, key, recorded: torch.Tensor, replayed: torch.Tensor) -> bool:
        """Keep the replay of ``key`` iff the replayed per-sample losses equal the recorded ones
        up to rounding (else the batch runs in full from now on). Returns whether it is kept."""
        a, b = recorded.detach().double(), replayed.detach().double()
        ok = a.shape == b.shape and a.numel() > 0 and bool(torch.isfinite(a).all())
        if ok:
            tol = 1e3 * torch.finfo(recorded.dtype).eps * (1.0 + float(a.abs().max()))
            ok = float((a - b).abs().max()) <= tol
        if not ok:
            self._drop(key)
        return ok

    def _drop(self, key) -> None:
        self._off.add(key)
        rec = self._cache.pop(key, {})
        self._versions.pop(key, None)
        self.bytes -= sum(t.numel() * t.element_size() for out, _ in rec.values() for t in _tensors(out))

    def _wrap(self, mod, orig):
        @functools.wraps(orig)
        def forward(*args, **kwargs):
            idx = self._count.get(mod, 0)
            self._count[mod] = idx + 1
            if self._mode == "replay":
                hit = self._cache[self._key].get((mod, idx))
                if hit is None:
                    return orig(*args, **kwargs)
                for m, c in hit[1].items():
                    self._count[m] = self._count.get(m, 0) + c
                return hit[0]
            if self._rec is not None:   # the site is done: nothing more to record
                return orig(*args, **kwargs)
            return self._record(mod, idx, orig, args, kwargs)
        return forward

    def _record(self, mod, idx, orig, args, kwargs):
        call = _Call(mod, idx)
        if self._stack:
            self._stack[-1].children.append(call)
        self._stack.append(call)
        try:
            out = orig(*args, **kwargs)
        finally:
            self._stack.pop()
        call.done, call.output = True, out
        if mod is self.site and self._rec is None:
            self._rec = self._freeze(call)
        return out

    def _freeze(self, site_call: _Call) -> dict:
        """``{(module, index): (output copy, counts)}`` of the maximal calls done before the site."""
        rec = _frozen(self._stack, site_call)
        for call in self._stack:
            _forget(call)
        return rec

    def _store(self, key) -> None:
        rec = self._rec or {}
        size = sum(t.numel() * t.element_size() for out, _ in rec.values() for t in _tensors(out))
        if not rec or self.bytes + size > self.max_bytes:
            self._off.add(key)
            return
        self._cache[key], self.bytes = rec, self.bytes + size
        self._versions[key] = [(t, t._version) for out, _ in rec.values() for t in _tensors(out)]


def _replace_forwards(model: nn.Module, wrap) -> dict:
    """Install ``wrap(mod, mod.forward)`` as the ``forward`` of every module of ``model`` (an instance attribute,
    shadowing the class's); returns ``{module: the instance attribute it shadows, or None}`` for :func:`_restore`.

    Raises (with every module as it was): TypeError when a module is scripted or traced
    (``torch.jit.ScriptModule``: an assigned ``forward`` goes into the compiled module, where it is used but can be
    neither found in the module's ``__dict__`` nor deleted) or an assignment lands anywhere but the ``__dict__``;
    the error of a ``forward`` that cannot be assigned (e.g. a read-only property: AttributeError).
    """
    mods = list(model.modules())
    scripted = [type(m).__name__ for m in mods if isinstance(m, torch.jit.ScriptModule)]
    if scripted:
        raise TypeError(f"scripted or traced modules {scripted}: their forward cannot be replaced")
    saved: dict = {}
    try:
        for mod in mods:
            old, orig = mod.__dict__.get("forward"), mod.forward
            new = wrap(mod, orig)
            mod.forward = new
            saved[mod] = old
            if mod.__dict__.get("forward") is not new:   # a __setattr__ that keeps it elsewhere: put back what was there
                mod.forward = orig
                raise TypeError(f"{type(mod).__name__}.forward is not kept in the module's __dict__: it cannot be replaced")
    except BaseException:
        _restore(saved)
        raise
    return saved


def _restore(saved: dict) -> None:
    """Undo :func:`_replace_forwards`: each module's instance ``forward`` as it was (absent when it was)."""
    for mod, old in saved.items():
        if old is None:
            mod.__dict__.pop("forward", None)
        else:
            mod.__dict__["forward"] = old


@contextlib.contextmanager
def record_together(replays: list, key):
    """Within the context, one forward of the model records batch ``key`` for every replay of ``replays``
    (:class:`SiteReplay` s of one model at different sites) at once: each gets what its own first forward
    would have recorded (the same maximal calls), so ``k`` sites cost one forward instead of ``k``. A call
    recorded for several sites is copied once and shared by them (memory: the union of the sites' parts,
    not their sum); a copy changed in place by any forward ends, before its next use, the replay of every
    site that holds it (:meth:`SiteReplay.forward` checks the copies' versions first). Replays that
    already hold, or run ``key`` in full, are left as they are. As after a replay's own recording, the
    caller then confirms each (:meth:`SiteReplay.confirm`, as
    :func:`numerics.estimators.site_losses` does). The forward runs without any hook at the sites: a site
    whose own recording forward adds something there (an exact zero, in ``site_loss``) records the same
    outputs (hooks act after the recorded raw output), and its losses differ only where that zero does
    not vanish (an infinite or NaN state).

    Example:
        >>> net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
        >>> reps, x = [SiteReplay(net, "0"), SiteReplay(net, "1")], torch.randn(4, 2)
        >>> with record_together(reps, (0, 4)):
        ...     a = net(x)
        >>> [r.replayed((0, 4)) for r in reps]
        [True, True]
    """
    todo = [r for r in replays if not r.replayed(key) and key not in r._off and r.site is not r.model]
    model = todo[0].model if todo else None
    if not todo or any(r.model is not model for r in todo) or isinstance(model, torch.jit.ScriptModule):
        yield
        return
    rec = _Together({r.site: r for r in todo})
    try:
        saved = _replace_forwards(model, rec.wrap)
    except (AttributeError, RuntimeError, TypeError):   # e.g. a scripted or traced submodule: each records on its own
        yield
        return
    try:
        yield
    finally:
        _restore(saved)
        for mod, rep in rec.by_site.items():
            rep._rec = rec.frozen.get(mod)
            rep._store(key)
            rep._rec = None


class _Together:
    """The state of one :func:`record_together` forward: the call tree, each site's frozen record, the shared copies."""

    def __init__(self, by_site: dict):
        self.by_site, self.stack, self.frozen, self.copies, self.counts = by_site, [], {}, {}, {}

    def wrap(self, mod, orig):
        @functools.wraps(orig)
        def forward(*args, **kwargs):
            if len(self.frozen) == len(self.by_site):
                return orig(*args, **kwargs)
            call = _Call(mod, self.counts.get(mod, 0))
            self.counts[mod] = call.index + 1
            if self.stack:
                self.stack[-1].children.append(call)
            self.stack.append(call)
            try:
                out = orig(*args, **kwargs)
            finally:
                self.stack.pop()
            call.done, call.output = True, out
            if mod in self.by_site and mod not in self.frozen:
                self.frozen[mod] = _frozen(self.stack, call, self.copies)
                if len(self.frozen) == len(self.by_site):   # every site recorded: free the call tree, as one site's recording does
                    for c in self.stack:
                        _forget(c)
            return out
        return forward
