"""Insertion sites on any ``nn.Module`` and function-preserving insertion there (THEORY §1, §8).

A *site* is a module path (``"blocks.3"``, ``"norms.0"``, ``"model.gpt_neox.layers.2"``)
whose output is the residual stream ``u`` at that point, or ``"blocks.*"`` for "after
every block of this ``ModuleList``". Inserting there gives ``u -> u + h(u)``.

* :func:`resolve_sites` -- the sites a user named (or the model's default block
  boundaries), checked: no batch-norm anywhere (it couples samples, so per-sample
  activation gradients are undefined, THEORY §1), every path exists, and every site's
  output has the shape of its input (a residual stream; a site that changes the shape is
  refused). Errors are :class:`~plumbing.validation.InputError` (one line, exit 2).
* :class:`SiteProbe` -- a forward hook adds a zero tensor ``0_l`` at every site, so ONE
  backward pass of the summed loss gives ``m_i = d l_i / d u_l`` at every site at once:
  ``d(sum_i l_i) / d 0_l`` has row ``i`` equal to ``m_i`` because no operation couples
  samples.
* :func:`add_at_site` -- a context in which a site's output becomes ``u + fn(u)`` (used for
  curvature along a step, and for jumpboards without touching the model).
* :func:`insert_unit` -- function-preserving insertion of a real block
  (:class:`ResidualUnit`, ``u + h(u)`` with ``h = 0`` at insertion): the module at the path
  is wrapped in a :class:`GrownSite`; the grown model's outputs are bitwise equal.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterable, Sequence

import torch
from torch import nn

from plumbing.validation import InputError

__all__ = ["GrownSite", "ResidualUnit", "SiteProbe", "ZeroBlock", "add_at_site", "check_no_batchnorm",
           "default_site_names",
           "insert_unit", "module_at", "resolve_sites", "site_depth"]


class ResidualUnit(nn.Module):
    """``u -> u + block(u)``: one inserted residual block (its output is the stream)."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        return u + self.block(u)


class GrownSite(nn.Module):
    """``inner`` followed by inserted :class:`ResidualUnit` s, passing through any extra outputs.

    The stream is ``inner``'s output (or its first element when it returns a tuple, as
    Hugging Face layers may); the units act on the stream only.
    """

    def __init__(self, inner: nn.Module, units: Sequence[ResidualUnit] = ()):
        super().__init__()
        self.inner, self.units = inner, nn.ModuleList(units)

    def forward(self, *args, **kwargs):
        out = self.inner(*args, **kwargs)
        stream = out[0] if isinstance(out, tuple) else out
        for unit in self.units:
            stream = unit(stream)
        return (stream,) + tuple(out[1:]) if isinstance(out, tuple) else stream


def check_no_batchnorm(model: nn.Module, key: str = "model") -> None:
    """Refuse batch-norm that uses batch statistics (THEORY §1: it couples samples, so ``m_i`` is undefined).

    Batch-norm in eval mode with running statistics is a fixed per-channel affine map (no
    coupling) and is accepted; in train mode, or without running statistics, it is refused.

    Raises:
        InputError: naming the first such batch-norm module.
    """
    mods = list(model.named_modules())
    bad = [n for n, m in mods if isinstance(m, nn.modules.batchnorm._BatchNorm)
           and (m.training or not m.track_running_stats)]
    bad += [n or "the model" for n, m in mods if not getattr(m, "per_sample_safe", True)]
    if bad:
        raise InputError(key, "a network without batch-norm in train mode (batch statistics couple samples: "
                         "per-sample activation gradients are undefined; call model.eval() to use the running "
                         "statistics, or use group or layer norm)", f"batch-norm at {bad[0]!r}")


def module_at(model: nn.Module, path: str, key: str = "sites") -> nn.Module:
    """The submodule at a dotted ``path`` (``""`` is the model).

    Raises:
        InputError: no such module (names the path and the top-level children).
    """
    mod = model
    for part in [p for p in path.split(".") if p]:
        children = dict(mod.named_children())
        if part not in children:
            raise InputError(key, f"module paths of the model (e.g. {sorted(dict(model.named_children()))}, "
                             "or 'name.*' for every block of a ModuleList)", path)
        mod = children[part]
    return mod


def _expand(model: nn.Module, name: str) -> list[str]:
    """A site and, inside grown sites, every stream position: inner, then each unit."""
    mod = module_at(model, name)
    if isinstance(mod, GrownSite):
        return _expand(model, f"{name}.inner") + [f"{name}.units.{k}" for k in range(len(mod.units))]
    return [name]


def default_site_names(model: nn.Module) -> list[str]:
    """Every block boundary: ``model.site_names()`` if defined, else every block of the
    largest ``ModuleList``/``Sequential`` and of its sibling lists of the same block class
    (:func:`_with_siblings`; shape-changing ones are dropped by :func:`resolve_sites`)."""
    if hasattr(model, "site_names"):
        return list(model.site_names())
    lists = [(len(m), n) for n, m in model.named_modules() if isinstance(m, (nn.ModuleList, nn.Sequential))
             and not isinstance(m, GrownSite) and not n.endswith("depthcert_units") and len(m) > 0]
    if not lists:
        raise InputError("sites", "a list of module paths (the model has no ModuleList/Sequential of blocks)", [])
    size, name = max(lists, key=lambda t: (t[0], -len(t[1])))
    names = [f"{name}.{k}" if name else str(k) for k in range(size)]
    return names if not name else _with_siblings(model, name, names)


def _with_siblings(model: nn.Module, name: str, names: list[str]) -> list[str]:
    """**Choice**: the blocks of the largest list plus those of every other list whose elements are all of the
    same (user-defined, not ``torch.nn``) block class -- a ResNet's ``layer1`` .. ``layer4`` -- in the model's
    order; lists inside such a block (a ResNet's ``downsample``) are not streams and are left out. A model
    whose largest list mixes classes, or holds ``torch.nn`` modules, keeps the largest list alone."""
    kinds = {type(m) for m in module_at(model, name)}
    (kind,) = kinds if len(kinds) == 1 else (None,)
    if kind is None or kind.__module__.startswith("torch.nn"):
        return names
    lists = [n for n, m in model.named_modules() if isinstance(m, (nn.ModuleList, nn.Sequential)) and len(m)
             and all(type(c) is kind for c in m) and not n.endswith("depthcert_units")]
    blocks = [f"{n}.{k}" for n in lists for k in range(len(module_at(model, n)))]
    inside = [b for b in blocks if any(b.startswith(o + ".") for o in blocks)]
    return [b for b in blocks if b not in inside] if name in lists else names


def _glob(model: nn.Module, pattern: str) -> list[str]:
    if not pattern.endswith(".*"):
        return [pattern]
    parent = module_at(model, pattern[:-2])
    if not isinstance(parent, (nn.ModuleList, nn.Sequential)):
        raise InputError("sites", "'name.*' with name a ModuleList or Sequential", pattern)
    return [f"{pattern[:-2]}.{k}" for k in range(len(parent))]


def _first_tensor(args, kwargs):
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


def _stream(out):
    return out[0] if isinstance(out, tuple) else out


def _shapes(model: nn.Module, names: Sequence[str], x: torch.Tensor) -> dict:
    """``{name: (input shape, output shape)}`` from one no-grad forward on ``x``."""
    seen, handles = {}, []
    for name in names:
        def hook(mod, args, kwargs, out, name=name):
            inp = _first_tensor(args, kwargs)
            seen[name] = (None if inp is None else tuple(inp.shape), tuple(_stream(out).shape))
        handles.append(module_at(model, name).register_forward_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            model(x)
    finally:
        for h in handles:
            h.remove()
    return seen


def resolve_sites(model: nn.Module, spec: Iterable[str] | None, x: torch.Tensor, key: str = "sites") -> list[str]:
    """The checked, expanded site names (THEORY §1: insertion candidates fixed before any gradient).

    Args:
        model: any ``nn.Module`` mapping a batch ``x`` to outputs.
        spec: module paths / ``"name.*"`` patterns; None = :func:`default_site_names`.
        x: a small example batch (one forward checks the shapes).
        key: config key named in errors.

    Raises:
        InputError: batch-norm, unknown path, a site never reached by the forward, or a site
            whose output shape differs from its input shape.

    Example:
        >>> from numerics.models import PostNormResMLP
        >>> resolve_sites(PostNormResMLP(3, 4, 2, 2), None, torch.zeros(2, 3, dtype=torch.float64))
        ['embed_norm', 'norms.0', 'norms.1']
    """
    check_no_batchnorm(model, "model")
    explicit = spec is not None
    if isinstance(spec, str):
        spec = [spec]
    try:
        raw = [n for pat in (spec if explicit else default_site_names(model)) for n in _glob(model, pat)]
        names = [e for n in raw for e in _expand(model, n)]
    except InputError as exc:
        raise InputError(key, exc.allowed, exc.value) from None
    if not names:
        raise InputError(key, "a non-empty list of module paths", list(spec or []))
    shapes = _shapes(model, names, x)
    ok = []
    for name in names:
        if name not in shapes:
            raise InputError(key, "sites the forward pass goes through", name)
        inp, out = shapes[name]
        if inp != out:
            if explicit:
                raise InputError(key, f"shape-preserving sites (a residual stream), but {name!r} maps "
                                 f"{inp} to {out}", name)
            continue
        ok.append(name)
    if not ok:
        raise InputError(key, "at least one shape-preserving site (none among the defaults)", names)
    return ok


def site_depth(model: nn.Module, names: Sequence[str]) -> int:
    """Number of blocks between the sites (``len(names) - 1``, the depth of a stream of sites)."""
    return max(len(names) - 1, 0)


class SiteProbe(contextlib.AbstractContextManager):
    """Zero tensors added at every site; one backward gives every ``m_i`` at every site (THEORY §1).

    Inside ``with SiteProbe(model, names) as probe:`` each forward records ``probe.states``
    (``{name: u}`` detached) and ``probe.zeros``; :meth:`grads` returns ``{name: m}`` with
    ``m`` of the state's shape, from ONE ``torch.autograd.grad`` call.

    Raises:
        InputError: a site module ran twice in one forward (a shared module is not a site).
    """

    def __init__(self, model: nn.Module, names: Sequence[str]):
        self.model, self.names = model, list(names)
        self.states: dict[str, torch.Tensor] = {}
        self.zeros: dict[str, torch.Tensor] = {}
        self._handles = []

    def _hook(self, name):
        def hook(mod, args, kwargs, out):
            if name in self.zeros:
                raise InputError("sites", "modules that run once per forward (a shared module is not a site)", name)
            stream = _stream(out)
            zero = torch.zeros_like(stream, requires_grad=True)
            self.states[name], self.zeros[name] = stream.detach(), zero
            new = stream + zero
            return (new,) + tuple(out[1:]) if isinstance(out, tuple) else new
        return hook

    def __enter__(self):
        for name in self.names:
            self._handles.append(module_at(self.model, name).register_forward_hook(self._hook(name), with_kwargs=True))
        return self

    def reset(self) -> None:
        """Forget the states of the previous forward (call before each batch)."""
        self.states, self.zeros = {}, {}

    def grads(self, total: torch.Tensor) -> dict[str, torch.Tensor]:
        """``{name: m}``, ``m = d total / d u_name`` for every site, from one backward pass."""
        grads = torch.autograd.grad(total, [self.zeros[n] for n in self.names])
        return {n: g.detach() for n, g in zip(self.names, grads)}

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        return False


@contextlib.contextmanager
def add_at_site(model: nn.Module, name: str, fn: Callable[[torch.Tensor], torch.Tensor]):
    """Within the context the site's output ``u`` becomes ``u + fn(u)`` (no module is replaced)."""
    def hook(mod, args, kwargs, out):
        stream = _stream(out)
        new = stream + fn(stream)
        return (new,) + tuple(out[1:]) if isinstance(out, tuple) else new

    handle = module_at(model, name).register_forward_hook(hook, with_kwargs=True)
    try:
        yield model
    finally:
        handle.remove()


def _set_module(model: nn.Module, path: str, new: nn.Module) -> None:
    parent_path, _, leaf = path.rpartition(".")
    parent = module_at(model, parent_path)
    if isinstance(parent, (nn.ModuleList, nn.Sequential)) and leaf.isdigit():
        parent[int(leaf)] = new
    else:
        setattr(parent, leaf, new)


def insert_unit(model: nn.Module, name: str, block: nn.Module) -> ResidualUnit:
    """Insert ``u -> u + block(u)`` right after site ``name`` (function-preserving if ``block`` is 0).

    ``name`` may be a plain module path (it is wrapped in a :class:`GrownSite`), the
    ``inner`` of a grown site (the unit goes first) or one of its units (the new unit goes
    right after it). The model is changed in place; the new unit is returned. Its output
    equals the old one bitwise when ``block(u) == 0`` (``u + 0 == u`` in floating point).

    Example:
        >>> net = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
        >>> x = torch.randn(4, 2)
        >>> before = net(x)
        >>> _ = insert_unit(net, "1", ZeroBlock())
        >>> torch.equal(net(x), before), type(net[1]).__name__
        (True, 'GrownSite')
    """
    unit = ResidualUnit(block)
    head, _, last = name.rpartition(".")
    owner = module_at(model, head) if head else None
    if last == "inner" and isinstance(owner, GrownSite):
        owner.units.insert(0, unit)
    elif head.endswith(".units") or head == "units":
        grown = module_at(model, head.rpartition(".")[0])
        if not isinstance(grown, GrownSite):
            _set_module(model, name, GrownSite(module_at(model, name), [unit]))
        else:
            grown.units.insert(int(last) + 1, unit)
    else:
        _set_module(model, name, GrownSite(module_at(model, name), [unit]))
    return unit


class ZeroBlock(nn.Module):
    """``u -> 0``: the trivial zero-output block."""

    def forward(self, u):
        return torch.zeros_like(u)
