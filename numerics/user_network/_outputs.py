"""Ordinary models and data: outputs that are tuples or dicts, labels of the wrong kind, sites that match nothing.

* ``output=`` (:func:`pick_output`) -- for a model whose forward returns a tuple ``(logits, aux)``,
  a dict / Hugging Face ``ModelOutput`` or any other container: an ``int`` index, a key, or a
  callable ``output(model_output) -> logits``. Without it such an output is refused with an
  error naming ``output=``.
* :func:`resolve_named_sites` -- :func:`numerics.sites.resolve_sites`, whose error for a site
  that matches nothing (an unknown path, or a container such as a ``ModuleList`` that the
  forward never calls) lists the module paths that would match (``sites="blocks"`` -> the
  pattern ``"blocks.*"`` and its paths).
"""
from __future__ import annotations

import difflib
from typing import Callable, Mapping

import torch
from torch import nn

from numerics.sites import module_at, resolve_sites
from plumbing.validation import InputError

__all__ = ["check_output_arg", "pick_output", "resolve_named_sites"]

_ALLOWED = "an int index, a key, or a callable output(model_output) -> logits"


def check_output_arg(output) -> None:
    """Raise InputError unless ``output`` is None, an int, a str or a callable."""
    if output is not None and not (isinstance(output, (int, str)) or callable(output)) or isinstance(output, bool):
        raise InputError("output", f"None, {_ALLOWED}", output)


def _describe(out) -> str:
    if isinstance(out, Mapping):
        return f"a {type(out).__name__} with keys {list(out)}"
    return f"a {type(out).__name__} of {len(out)} elements"


def pick_output(out, output):
    """The logits in a model's output: ``out`` itself (``output`` None, a tensor output), ``out[output]``
    or ``output(out)``.

    Raises:
        InputError: a tuple / list / dict output without ``output=``, an index or key it lacks, or a
            pick that is not a tensor.

    Example:
        >>> pick_output((torch.zeros(2, 3), "aux"), 0).shape
        torch.Size([2, 3])
    """
    if output is None:
        if isinstance(out, (tuple, list, Mapping)):
            raise InputError("output", f"given when the model returns {_describe(out)} ({_ALLOWED}, e.g. "
                             "output=0 or output='logits')", None)
        return out
    if callable(output) and not isinstance(output, (int, str)):
        picked = output(out)
    elif isinstance(out, torch.Tensor) and isinstance(output, str):   # torch would index by the string's characters
        raise InputError("output", f"{_ALLOWED} of the model's output (a Tensor: it has no keys; leave output unset "
                         "when the model returns the logits)", output)
    else:
        try:
            picked = out[output]
        except (IndexError, KeyError, TypeError):
            what = _describe(out) if isinstance(out, (tuple, list, Mapping)) else f"a {type(out).__name__}"
            raise InputError("output", f"{_ALLOWED} of the model's output ({what})", output) from None
    if not isinstance(picked, torch.Tensor):
        raise InputError("output", f"{_ALLOWED} picking a tensor (the logits)", f"{output!r} -> {type(picked).__name__}")
    return picked


def _paths(model: nn.Module) -> list[str]:
    return [n for n, _ in model.named_modules() if n]


def _matches(model: nn.Module, name: str) -> list[str]:
    """Module paths a user naming ``name`` may have meant (containers: their blocks)."""
    try:
        mod = module_at(model, name)
    except InputError:
        mod = None
    if isinstance(mod, (nn.ModuleList, nn.ModuleDict, nn.Sequential)) and len(mod):
        return [f"{name}.{k}" for k, _ in mod.named_children()]
    if mod is not None:
        return [f"{name}.{k}" if name else k for k, _ in mod.named_children()]
    paths = _paths(model)
    last = name.rpartition(".")[2]
    near = [p for p in paths if p.rpartition(".")[2] == last or p.endswith("." + name)]
    return near or difflib.get_close_matches(name, paths, n=8, cutoff=0.5)


def _accepted_patterns(model: nn.Module, x) -> list[str] | None:
    """The ``'name.*'`` patterns :func:`numerics.sites.resolve_sites` would accept on ``x`` (every block of the
    container reached by the forward and shape-keeping); None without ``x`` or when the forward fails."""
    if x is None:
        return None
    from numerics.sites import _shapes

    lists = [n for n, m in model.named_modules() if n and isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m)
             and not n.endswith("depthcert_units")][:32]
    blocks = {n: [f"{n}.{k}" for k, _ in module_at(model, n).named_children()] for n in lists}
    try:
        shapes = _shapes(model, [b for bs in blocks.values() for b in bs], x)
    except Exception:   # noqa: BLE001 -- a hint only
        return None
    return [f"{n}.*" for n, bs in blocks.items() if all(b in shapes and shapes[b][0] == shapes[b][1] for b in bs)]


def _hint(model: nn.Module, value, x=None, shape: bool = False) -> str | None:
    accepted = _accepted_patterns(model, x)
    if shape:   # a site that changes the state's shape: only what would be accepted
        from numerics.sites import resolve_sites

        try:
            streams = resolve_sites(model, None, x)
        except InputError:
            streams = []
        pats = f"; 'name.*' patterns this model accepts: {accepted[:8]}" if accepted else ""
        return (f"shape-keeping default sites of this model: {streams[:12]}" if streams else "no shape-keeping default site") + pats
    name = value if isinstance(value, str) else None
    if name is None or name.endswith(".*"):
        lists = [n for n, m in model.named_modules() if n and isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m)]
        if accepted is not None:
            lists = [p[:-2] for p in accepted]
        return f"'name.*' patterns of this model: {[n + '.*' for n in lists][:8]}" if lists else None
    found = _matches(model, name)
    if not found:
        more = f"; 'name.*' patterns this model accepts: {accepted[:8]}" if accepted else ""
        return f"no module path of the model resembles {name!r}; its top-level modules: {sorted(dict(model.named_children()))}" + more
    container = isinstance(_module_or_none(model, name), (nn.ModuleList, nn.ModuleDict, nn.Sequential))
    pattern = f"sites={name + '.*'!r} (a container's blocks) matches " if container else "module paths that would match: "
    more = f" ... ({len(found)} in all)" if len(found) > 8 else ""
    return pattern + ", ".join(found[:8]) + more


def _module_or_none(model, name):
    try:
        return module_at(model, name)
    except InputError:
        return None


def resolve_named_sites(model: nn.Module, sites, x: torch.Tensor, key: str = "sites") -> list[str]:
    """:func:`numerics.sites.resolve_sites`; its error for a site that matches nothing lists what would match.

    Raises:
        InputError: as :func:`numerics.sites.resolve_sites`, with the matching module paths added.
    """
    try:
        return resolve_sites(model, sites, x, key=key)
    except InputError as exc:
        shape = "shape-preserving sites" in str(exc.allowed)
        hint = _hint(model, exc.value, x, shape) if exc.key == key else None
        if hint is None:
            raise
        raise InputError(key, f"{exc.allowed}; {hint}", exc.value) from None


def with_output(loss: Callable, output) -> Callable:
    """``loss`` applied to the picked logits (:func:`pick_output`), keeping the loss's name for errors."""
    def picked(out, y):
        return loss(pick_output(out, output), y)

    picked.__name__ = getattr(loss, "__name__", "loss")
    return picked
