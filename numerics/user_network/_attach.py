"""Insertion that keeps every name: the new blocks ride on a forward hook of the site's module (THEORY §1).

:func:`attach_unit` leaves the module at ``site`` where it is: it registers an
``nn.ModuleList`` named :data:`UNITS` *inside* that module and one forward hook
(:func:`_run_units`, a module-level function, so copies and pickles keep working) that
passes the module's output -- the stream ``u`` at the site, or the first element of a tuple
output -- through the inserted :class:`~numerics.sites.ResidualUnit` s, ``u -> u + h(u)``,
in order. So every original parameter keeps its ``state_dict`` key and value (a grown
``blocks.2`` still has ``blocks.2.conv1.weight``), and only new keys are added, e.g.
``blocks.2.depthcert_units.0.block.V``:

* :func:`new_parameters` -- ``{name: parameter}`` of every inserted block;
* :func:`insertions` -- what rebuilds the architecture: one record per inserted block
  (``site``, ``family``, ``state_shape``, ``width``, ``layout``), plain Python values;
* :func:`load_grown` -- the user's freshly built model plus a saved ``{"insertions",
  "state_dict"}`` (``torch.load(..., weights_only=True)``) gives the grown model back.

A site that is an ``nn.Sequential`` (whose forward calls every child) carries its units on
its last child, recursively: the same stream. A site is still the stream *after* everything at that point: the scan's hooks are registered
after this one, so scanning ``blocks.2`` of a grown model sees the output of its last inserted
block, and a further insertion at ``blocks.2`` goes after the existing ones. The inserted
blocks are sites too (``blocks.2.depthcert_units.0``), scanned only when named.
"""
from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from numerics.families import ProtocolBlock
from numerics.layouts import positions
from numerics.sites import GrownSite, ResidualUnit, module_at
from plumbing.validation import InputError

__all__ = ["FORMAT", "UNITS", "attach_unit", "insertions", "load_grown", "new_parameters", "unit_sites"]

#: the name of the list of inserted blocks inside a site's module.
UNITS = "depthcert_units"
#: the ``format`` tag of a saved grown model (``depthcert grow --save-model``).
FORMAT = "depthcert.grown/1"


def _run_units(module: nn.Module, args, out):
    """The forward hook of a grown site: its stream through every inserted unit, extra outputs passed on."""
    stream = out[0] if isinstance(out, tuple) else out
    for unit in getattr(module, UNITS):
        stream = unit(stream)
    return (stream,) + tuple(out[1:]) if isinstance(out, tuple) else stream


def _spec(block: nn.Module, site: str) -> dict:
    if not isinstance(block, ProtocolBlock):
        return {"site": site, "family": None, "kind": type(block).__name__}
    return {"site": site, "family": "+".join(block.families), "state_shape": list(block.state_shape),
            "width": int(block.width), "layout": block.layout}


def attach_unit(model: nn.Module, site: str, block: nn.Module) -> ResidualUnit:
    """Insert ``u -> u + block(u)`` right after ``site``, in place, keeping every existing name.

    ``site`` is a module path (the unit goes after the units already there) or an inserted
    unit ``<path>.depthcert_units.<k>`` (the new unit goes right after it).

    Raises:
        InputError: no module at ``site``, or the module already has an attribute named ``UNITS``.

    Example:
        >>> net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
        >>> x, keys = torch.randn(4, 2), list(net.state_dict())
        >>> _ = attach_unit(net, "1", ProtocolBlock((3,), ["linear"], 2, 0, torch.float32))
        >>> set(keys) < set(net.state_dict()), list(new_parameters(net))
        (True, ['1.depthcert_units.0.block.V'])
    """
    unit = ResidualUnit(block)
    unit.depthcert_spec = _spec(block, site)
    head, _, last = site.rpartition(".")
    if head.rpartition(".")[2] == UNITS and last.isdigit():
        units = module_at(model, head)
        unit.depthcert_spec["site"] = head.rpartition(".")[0]
        units.insert(int(last) + 1, unit)
        return unit
    mod = module_at(model, _host(model, site))
    if not isinstance(getattr(mod, UNITS, None), nn.ModuleList):
        if hasattr(mod, UNITS):
            raise InputError("site", f"a module without an attribute {UNITS!r} (the name of inserted blocks)", site)
        mod.add_module(UNITS, nn.ModuleList())
        mod.register_forward_hook(_run_units)
    getattr(mod, UNITS).append(unit)
    return unit


def _host(model: nn.Module, site: str) -> str:
    """The module that carries the units of ``site``: the site's module, or, for an ``nn.Sequential``
    (whose forward calls every child, so it cannot hold one more), its last child, recursively --
    the same stream."""
    mod = module_at(model, site)
    while isinstance(mod, nn.Sequential):
        if not len(mod):
            raise InputError("site", "a module with an output (an empty nn.Sequential has none)", site)
        last = list(mod._modules)[-1]
        site, mod = f"{site}.{last}" if site else last, mod[-1]
    return site


def _units(model: nn.Module):
    """``(path of the unit, unit)`` for every inserted unit (this module's and :class:`GrownSite` 's)."""
    for name, mod in model.named_modules():
        if isinstance(mod, ResidualUnit):
            parent = name.rpartition(".")[0]
            if parent.rpartition(".")[2] == UNITS or isinstance(_parent(model, parent), GrownSite):
                yield name, mod


def _parent(model: nn.Module, path: str):
    head = path.rpartition(".")[0]
    try:
        return module_at(model, head) if path else None
    except InputError:
        return None


def new_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """``{name: parameter}`` of every block inserted by :func:`depthcert.insert_block` or :func:`depthcert.grow`.

    Every other parameter keeps the name (and, until trained, the value) it had in the original
    model; the inserted blocks' parameters are new names under the site's module
    (``<site>.depthcert_units.<k>.block.V``). Use it to build optimiser groups or freeze lists.
    A real decoder layer inserted into a Hugging Face decoder (``init="copy_zero"``) is listed by its
    names in the model's layer list (``model.layers.4.*``); the layers above it moved up one index.

    Parameters
    ----------
    model : torch.nn.Module
        A grown model (any other model has no inserted block: ``{}``).

    Returns
    -------
    dict
        ``{name: torch.nn.Parameter}``: the inserted blocks' parameters by their names in
        ``model.named_parameters()``.

    Raises
    ------
    TypeError
        ``model`` is not an ``nn.Module``.

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        >>> x = torch.randn(256, 3, dtype=torch.float64)
        >>> rep = dc.saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=32)
        >>> grown = dc.insert_block(net, "1", family="linear", init="zero", scan=rep)
        >>> list(dc.new_parameters(grown))
        ['1.depthcert_units.0.block.V']
        >>> sorted(dc.new_parameters(grown)) == sorted(set(dict(grown.named_parameters())) - set(dict(net.named_parameters())))
        True
        >>> opt = torch.optim.Adam(dc.new_parameters(grown).values(), lr=1e-3)   # train only the new block
        >>> dc.new_parameters(net)
        {}
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}, must be a torch.nn.Module.")
    from numerics.interop.hf_layers import inserted_layers

    return {**inserted_layers(model), **{f"{path}.{n}": p for path, unit in _units(model) for n, p in unit.named_parameters()}}


def unit_sites(model: nn.Module) -> list[str]:
    """The module paths of every inserted block (each a site: the stream after it)."""
    return [path for path, _ in _units(model)]


def insertions(model: nn.Module) -> list[dict]:
    """One record per inserted block (``site``, ``family``, ``state_shape``, ``width``, ``layout``), in
    the order :func:`load_grown` re-applies them; plain Python values (``weights_only``-loadable)."""
    return [dict(getattr(unit, "depthcert_spec", {"site": path, "family": None})) for path, unit in _units(model)
            if path.rpartition(".")[0].rpartition(".")[2] == UNITS]


def _check_insertions(saved: Mapping, dtype) -> None:
    """Before any block is built: each insertion has its own tensors in ``state_dict`` (so there are at most
    as many insertions as tensors), and the blocks' parameters fit in memory (``d x (d + 1 + 3 width)`` numbers
    of V and features each, ``d`` the state's feature size, :func:`plumbing.machine.check_fits`)."""
    from plumbing.machine import check_fits

    insertions, state = saved["insertions"], saved["state_dict"]
    n_tensors = len(state) if isinstance(state, Mapping) else 0
    if not isinstance(insertions, (list, tuple)) or len(insertions) > n_tensors:
        raise InputError("saved['insertions']", f"a list of at most {n_tensors} insertions (one or more tensors of "
                         "state_dict each)", f"{len(insertions) if hasattr(insertions, '__len__') else insertions!r} "
                         "insertions")
    numbers = 0
    for rec in insertions:
        try:
            shape, width = [int(v) for v in rec["state_shape"]], int(rec["width"])
            d = shape[0] if len(shape) == 3 else shape[-1]
        except (KeyError, TypeError, ValueError, IndexError):
            continue   # malformed: refused with its own message below
        numbers += max(d, 0) * (max(d, 0) + 1 + 3 * max(width, 0))
    itemsize = torch.empty((), dtype=dtype).element_size()
    check_fits({"saved['insertions']": (len(insertions), float(numbers * itemsize), False)})


def load_grown(model: nn.Module, saved: Mapping) -> nn.Module:
    """A grown model back from its saved form: ``model`` with ``saved["insertions"]`` re-applied and
    ``saved["state_dict"]`` loaded.

    ``depthcert grow --save-model grown.pt`` writes ``{"format", "insertions", "state_dict"}``
    (plain values and tensors: ``torch.load(path, weights_only=True)`` reads it); the
    architecture of the original network is the user's, so ``model`` is built fresh by the user's
    own code and changed in place.

    Parameters
    ----------
    model : torch.nn.Module
        A freshly built original network (its parameters are overwritten by the saved ones).
    saved : dict
        ``{"insertions": [one record per inserted block: site, family, state_shape, width,
        layout], "state_dict": ...}``.

    Returns
    -------
    torch.nn.Module
        ``model`` itself, grown, in eval mode.

    Raises
    ------
    InputError
        ``saved`` lacks ``insertions`` or ``state_dict``, or holds a block that cannot be rebuilt.
    RuntimeError
        The state dict does not fit the rebuilt model (``torch``'s ``load_state_dict``).

    Examples
    --------
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        >>> x = torch.randn(256, 3, dtype=torch.float64)
        >>> rep = dc.saturation(net, (x, (x[:, 0] > 0).long()), sites=["1"], curvature_n=32)
        >>> grown = dc.insert_block(net, "1", family="linear", init="zero", scan=rep)
        >>> record = {"site": "1", "family": "linear", "state_shape": [8], "width": 16, "layout": "ND"}
        >>> saved = {"insertions": [record], "state_dict": grown.state_dict()}   # what --save-model writes
        >>> fresh = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)).double()
        >>> back = dc.load_grown(fresh, saved)
        >>> back is fresh, bool(torch.equal(back(x), grown(x)))
        (True, True)
    """
    if not isinstance(saved, Mapping) or not {"insertions", "state_dict"} <= set(saved):
        raise InputError("saved", "a dict with 'insertions' and 'state_dict' (depthcert grow --save-model)",
                         sorted(saved) if isinstance(saved, Mapping) else type(saved).__name__)
    p = next(model.parameters(), None)
    dtype, device = (p.dtype, p.device) if p is not None else (torch.float32, torch.device("cpu"))
    _check_insertions(saved, dtype)
    for rec in saved["insertions"]:
        if not rec.get("family") or "state_shape" not in rec:
            raise InputError("saved", "insertions of protocol blocks (family, state_shape, width, layout)", rec)
        block = ProtocolBlock(tuple(rec["state_shape"]), rec["family"].split("+"), int(rec["width"]), 0, dtype,
                              layout=rec.get("layout")).to(device)
        block.positions = positions(rec["layout"], rec["state_shape"])[1] if rec.get("layout") else 1
        attach_unit(model, rec["site"], block)
    model.load_state_dict(saved["state_dict"])
    return model.eval()
