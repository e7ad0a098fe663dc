"""``dc.constants``: the sure constants of a route at one site of a common network (THEORY §1, §6b, §10).

What is derived, on a float64 copy of the model in eval mode (derivations: ``docs/THEORY.md`` §10,
*Constants for common heads*):

* ``rho`` -- a sure bound on the whole-state ``||u||`` at the site, when the site's output is the
  output of a per-sample normalisation (``GroupNorm``, ``LayerNorm``, ``RMSNorm``) with ``n_g``
  affine parameters over a state of ``S`` numbers: ``max|gamma| sqrt(S) + sqrt(S / n_g) ||beta||``
  (every ``eps >= 0``). BatchNorm in eval mode is the affine map of its running statistics: an
  unbounded input, no radius.
* ``L_top`` = ``A_norm`` = ``||W||_2`` and ``kappa`` (squared loss ``2 ||W||_2^2``, cross-entropy
  ``max_{k,j} ||W_k - W_j||^2 / 4 <= ||W||_2^2 / 2``, both the exact largest curvature) when ``f_top`` is affine, ``f_top(u) = W u + c`` on the
  flattened state: a linear head, global average pooling then a linear head (``||W||_2 =
  ||A||_2 / sqrt(P)``), BatchNorm in eval mode folded in. ``W`` is read off by one backward pass
  per output; **Choice**: ``f_top`` is taken to be affine when no module that is not affine runs
  after the site and ``W u + c`` reproduces ``f_top(u)`` on random states at four scales (a
  functional nonlinearity, e.g. ``torch.relu`` in ``forward``, fails the second check).
* ``B`` (cross-entropy) ``= log C + max_{k,y} (||W_k - W_y|| R + c_k - c_y)`` with ``R`` the radius
  of the head input -- **Choice**, at most THEORY §1's ``log C + 2 max_k (||W_k|| R + |c_k|)``;
  squared loss (with ``y_bound`` = ``Y``): ``F = ||W||_2 R + ||c||``, ``B = (F + Y)^2``,
  ``L_loss = 2 (F + Y)``. With the block right below the affine head, ``R = rho + nu_V rho_phi``
  depends on the block (:meth:`Constants.B_with`); a site further down uses the last
  normalisation above it, whose radius no block below changes.
* ``rho_phi`` of the readout block: ``||phi|| <= ||U0||_2 ||u|| + sqrt(P) ||b0||``
  (:meth:`Constants.rho_phi_for`; ReLU is 1-Lipschitz with ``relu(0) = 0``, Minkowski over positions).

What cannot be derived is ``None`` with its reason in ``why``. **Choice**: the constants are those of the
float64 function; for a model in a lower precision the radii carry the rounding margin ``(S + 8) eps``.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Mapping

import torch
from torch import nn

from numerics.user_network._data import as_stream
from numerics.user_network._localised import LOSS_CURVATURE
from numerics.sites import add_at_site, check_no_batchnorm, module_at

__all__ = ["AFFINE_MODULES", "NORMS", "Constants", "constants", "norm_radius"]

#: Per-sample normalisations whose output has a sure radius (THEORY §1, §10).
NORMS = (nn.GroupNorm, nn.LayerNorm, nn.RMSNorm)
#: Modules that are affine maps of their input (BatchNorm in eval mode: its running statistics).
AFFINE_MODULES = (nn.Linear, nn.Identity, nn.Dropout, nn.Flatten, nn.Unflatten, nn.AvgPool1d, nn.AvgPool2d,
                  nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.Conv1d, nn.Conv2d, nn.modules.batchnorm._BatchNorm)
_NAMES = ("B", "L_loss", "L_top", "A_norm", "kappa", "rho", "rho_phi")
#: Hugging Face RMSNorms of the form ``weight * x / sqrt(mean(x^2) + eps)`` (as ``nn.RMSNorm``; not Gemma's
#: ``(1 + weight)``): read by class name in ``transformers``' own modules.
HF_RMSNORMS = ("transformers.models.llama.modeling_llama.LlamaRMSNorm",
               "transformers.models.mistral.modeling_mistral.MistralRMSNorm",
               "transformers.models.qwen2.modeling_qwen2.Qwen2RMSNorm")


def is_norm(mod: nn.Module) -> bool:
    """A per-sample normalisation with a sure radius: one of :data:`NORMS` or of :data:`HF_RMSNORMS`."""
    return isinstance(mod, NORMS) or f"{type(mod).__module__}.{type(mod).__qualname__}" in HF_RMSNORMS


@dataclasses.dataclass(frozen=True)
class Constants:
    """The sure constants of :func:`depthcert.constants` at one site, each a value or ``None``.

    The seven constants (THEORY §1), each a ``float`` or ``None`` where not derived:
    ``B`` (the loss range), ``L_loss`` (the loss's Lipschitz constant), ``L_top`` (the Lipschitz
    constant of the network above the site), ``A_norm`` (its linear part's norm), ``kappa`` (the
    curvature of the loss through the head), ``rho`` (the radius of the state at the site) and
    ``rho_phi`` (the radius of the block's features).

    Attributes
    ----------
    site : str
        The module path the constants are for.
    loss : str
        ``"cross_entropy"`` or ``"squared"``.
    state_shape : tuple of int
        The shape of one sample's state at the site.
    why : dict of str
        For each constant that is ``None``: why it is not derived.
    how : dict of str
        For each derived constant: how it was derived.
    at_top : bool
        Whether the layers above the site are one affine map (an affine head right above).
    head : tuple or None
        ``(W, c, y_bound, R)`` of the affine head and its input's radius, used by
        :meth:`B_with` (None without an affine head and ``rho``).

    Notes
    -----
    **Not** the run study's ``Constants`` (``numerics.studies.run._stages``: the constants of the
    project's own post-norm network and capped block, every one determined, with the caps); these are
    read from any network's weights at one site, each a value or ``None`` with the reason.

    Examples
    --------
        >>> import math
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.Linear(8, 2)).double()
        >>> x = torch.randn(16, 3, dtype=torch.float64)
        >>> c = dc.constants(net, "1", (x, (x[:, 0] > 0).long()))
        >>> sorted(c.given())                              # the keywords of certify_insertion
        ['A_norm', 'B', 'L_loss', 'L_top', 'kappa']
        >>> list(c.table().columns)
        ['constant', 'value', 'derivation']
        >>> W, b = net[2].weight.detach(), net[2].bias.detach()   # B on head inputs of radius rho + 0.5
        >>> R = c.rho + 0.5
        >>> B = math.log(2) + max(float((W[k] - W[j]).norm()) * R + float(b[k] - b[j]) for k in range(2) for j in range(2))
        >>> math.isclose(c.B_with(0.5), B)
        True
    """

    site: str
    loss: str
    B: float | None
    L_loss: float | None
    L_top: float | None
    A_norm: float | None
    kappa: float | None
    rho: float | None
    rho_phi: float | None
    state_shape: tuple
    why: Mapping[str, str]
    how: Mapping[str, str]
    at_top: bool = False
    head: tuple | None = dataclasses.field(default=None, repr=False)

    def table(self):
        """``pandas.DataFrame``: one row per constant (value, and how it was derived or why it was not)."""
        import pandas as pd

        return pd.DataFrame([{"constant": k, "value": getattr(self, k),
                              "derivation": self.how.get(k) if getattr(self, k) is not None else self.why.get(k)}
                             for k in _NAMES])

    def given(self) -> dict:
        """The derived values by ``certify_insertion``'s keyword names (``None`` where not derived)."""
        return {k: getattr(self, k) for k in ("B", "L_loss", "L_top", "A_norm", "kappa")}

    def B_with(self, extra: float) -> float | None:
        """``B`` when the head input's radius grows by ``extra`` (``nu_V rho_phi`` of a block right below the head)."""
        return self.loss_range_with(extra)[0]

    def loss_range_with(self, extra: float) -> tuple:
        """``(B, L_loss)`` on head inputs of radius ``rho + extra`` (``(None, None)`` without an affine head and ``rho``)."""
        if self.head is None:
            return None, None
        return _loss_range(self.loss, self.head, self.head[3] + float(extra))[:2]

    def rho_phi_for(self, block) -> float | None:
        """A sure ``||phi||`` of a readout block's features at this site: ``||U0||_2 rho + sqrt(P) ||b0||``."""
        feats = getattr(block, "features", [])
        if self.rho is None or len(feats) != 1 or not hasattr(feats[0], "U"):
            return None
        U, b = feats[0].U.detach().double(), feats[0].b.detach().double()
        P = math.prod(self.state_shape) // U.shape[1]
        return float(torch.linalg.matrix_norm(U, ord=2)) * self.rho + math.sqrt(P) * float(b.norm())


def norm_radius(norm: nn.Module, numel: int) -> float:
    """``max|gamma| sqrt(S) + sqrt(S / n_g) ||beta||``: a sure bound on ``||norm(x)||`` over a state of ``S = numel``.

    Derivation (THEORY §10): the normalised ``xh`` has ``sum xh^2 = n v / (v + eps) <= n`` over each group
    (GroupNorm), slice (LayerNorm, mean-square for RMSNorm) of ``n`` numbers, so ``||xh||^2 <= S``; the gain
    multiplies by at most ``max|gamma|``; the shift adds ``||beta||`` once per broadcast copy, ``S / n_g`` of them.

    Raises:
        TypeError: not one of :data:`NORMS`.
    """
    if not is_norm(norm):
        raise TypeError(f"norm is a {type(norm).__name__}, must be one of {[c.__name__ for c in NORMS]} (or a Hugging Face "
                        "RMSNorm of HF_RMSNORMS).")
    gamma, beta = getattr(norm, "weight", None), getattr(norm, "bias", None)
    g = 1.0 if gamma is None else float(gamma.detach().double().abs().max())
    shift = 0.0 if beta is None else math.sqrt(numel / beta.numel()) * float(beta.detach().double().norm())
    return g * math.sqrt(numel) + shift


def _trace(net: nn.Module, site: str, x: torch.Tensor):
    """``(u, producer, after)``: the site's state, the leaf module (path, module) that produced it (or None),
    and the leaf modules called after the site, in order (one no-grad forward)."""
    calls, box, handles = [], {}, []
    for name, mod in net.named_modules():
        if not list(mod.children()):
            handles.append(mod.register_forward_hook(
                lambda m, a, out, name=name: calls.append((name, m, out[0] if isinstance(out, tuple) else out))))
    def at_site(m, a, out):
        box.setdefault("u", (out[0] if isinstance(out, tuple) else out, len(calls)))

    handles.append(module_at(net, site).register_forward_hook(at_site))
    try:
        with torch.no_grad():
            net(x)
    finally:
        for h in handles:
            h.remove()
    u, k = box["u"]
    inside = [c for c in calls[:k] if c[0] == site or c[0].startswith(site + ".")]
    producer = next(((n, m) for n, m, o in reversed(inside) if isinstance(o, torch.Tensor) and o.shape == u.shape
                     and torch.equal(o, u)), None)
    return u, producer, [(n, m) for n, m, _ in calls[k:]]


def _affine_tail(net: nn.Module, point: str, x: torch.Tensor, u: torch.Tensor):
    """``(W (K, S), c (K,), reason)``: ``f_top(u) = W u + c`` from ``point``, or ``(None, None, why)``."""
    n = u.shape[0]

    def f(state):
        with add_at_site(net, point, lambda s: state - s):
            out = net(x)
        return out[0] if isinstance(out, tuple) else out

    with torch.no_grad():
        seq = f(u.detach())
    if seq.dim() == 3:
        return None, None, (f"the model's output has shape {tuple(seq.shape)}: sequence logits (n, T, V), read per token "
                            "(no whole-state affine head)")
    zero = torch.zeros_like(u, requires_grad=True)
    out = f(zero)
    if out.dim() != 2:
        return None, None, f"the model's output has shape {tuple(out.shape)}, must be logits (n, K)"
    rows = [torch.autograd.grad(out[:, k].sum(), zero, retain_graph=True)[0].reshape(n, -1) for k in range(out.shape[1])]
    J, c = torch.stack(rows, dim=1).detach(), out.detach()
    if not (torch.allclose(J, J[:1].expand_as(J), rtol=1e-9, atol=1e-12) and torch.allclose(c, c[:1].expand_as(c), rtol=1e-9, atol=1e-12)):
        return None, None, "the layers above read more than the state (e.g. a skip connection around the site)"
    W, c = J[0], c[0]
    gen = torch.Generator().manual_seed(0)
    for scale in (1e-2, 1.0, 1e2, 1e4):
        v = scale * torch.randn(u.shape, generator=gen, dtype=u.dtype).to(u.device)
        with torch.no_grad():
            got, want = f(v), v.reshape(n, -1) @ W.T + c
        if not torch.allclose(got, want, rtol=1e-7, atol=1e-7 * (1 + float(want.abs().max()))):
            return None, None, "f_top is not affine in the state (W u + c differs from f_top(u) on random states)"
    return W, c, None


def _loss_range(loss: str, head: tuple, R: float):
    """``(B, L_loss, how)`` for the head ``(W, c, y_bound, .)`` on head inputs of norm ``<= R``."""
    W, c, Y = head[0], head[1], head[2]
    if loss == "cross_entropy":
        diff = torch.cdist(W[None], W[None])[0] * R + (c[:, None] - c[None, :])   # [k, y] = ||W_k - W_y|| R + c_k - c_y
        return float(math.log(W.shape[0]) + diff.max()), math.sqrt(2.0), "log C + max_{k,y}(||W_k - W_y|| R + c_k - c_y)"
    if Y is None:
        return None, None, None
    F = float(torch.linalg.matrix_norm(W, ord=2)) * R + float(c.norm())
    return (F + Y) ** 2, 2.0 * (F + Y), "(F + Y)^2 with F = ||W||_2 R + ||c||"


def _non_affine(after) -> list[str]:
    return [f"{n} ({type(m).__name__})" for n, m in after if not isinstance(m, AFFINE_MODULES)]


def constants(model: nn.Module, site: str, data, loss: str = "cross_entropy", *, y_bound: float | None = None,
              output=None) -> Constants:
    """The sure constants of the certificate at one site: ``B``, ``L_loss``, ``L_top``/``A_norm``,
    ``kappa``, ``rho`` and ``rho_phi``, derived from the network's weights.

    Nothing is estimated from data: every value is a bound that holds for every input, read off
    a float64 copy of the model in eval mode (the derivations: THEORY §10, *Constants for common
    heads*; :doc:`/models` lists what is derived for which head).

    * ``rho`` -- when the site's output is a per-sample normalisation (``GroupNorm``,
      ``LayerNorm``, ``RMSNorm``) over a state of ``S`` numbers: ``max|gamma| sqrt(S) +
      sqrt(S / n_g) ||beta||``. BatchNorm in eval mode is an affine map of an unbounded input:
      no radius.
    * ``L_top = A_norm = ||W||_2`` and ``kappa`` -- when everything above the site is affine,
      ``f_top(u) = W u + c`` (a linear head, average pooling then a linear head, BatchNorm in
      eval mode folded in); ``kappa`` is the largest curvature of the loss through the head
      (squared loss ``2 ||W||_2^2``, cross-entropy ``max_{k,j} ||W_k - W_j||^2 / 4``).
    * ``B`` and ``L_loss`` -- cross-entropy: ``L_loss = sqrt(2)`` and ``B = log C + max_{k,y}
      (||W_k - W_y|| R + c_k - c_y)`` on head inputs of radius ``R``; squared loss (given
      ``y_bound``): ``F = ||W||_2 R + ||c||``, ``B = (F + Y)^2``, ``L_loss = 2 (F + Y)``. When
      the block sits right below the head, ``R`` depends on the block (:meth:`Constants.B_with`).
    * ``rho_phi`` -- depends on the inserted block's features (:meth:`Constants.rho_phi_for`).

    What cannot be derived is ``None``, with its reason in ``why``.

    Parameters
    ----------
    model : torch.nn.Module
        The network (never changed).
    site : str
        One module path, a site of :func:`depthcert.saturation` (``"blocks.2"``).
    data : tuple, Dataset or DataLoader
        ``(x, y)`` tensors or any kind of data :func:`depthcert.saturation` accepts; its first 4 samples run the
        forward passes (the state's shape, the layers called after the site).
    loss : {"cross_entropy", "squared"}, default "cross_entropy"
        A user's loss function has no derived constants.
    y_bound : float or None, keyword-only, default None
        ``Y >= ||y||`` for the squared loss (``B`` and ``L_loss`` need it).
    output : int, str or callable, keyword-only, default None
        The logits in the model's output when it returns a tuple or a dict (a Hugging Face
        ``ModelOutput``: ``output="logits"``), as in :func:`depthcert.saturation`; a dict without it is
        refused naming ``output``. Sequence logits ``(n, T, V)`` under a final normalisation and a
        linear head applied per token (a decoder's ``lm_head``, tied or not): ``B = log V + max_{k,y}
        (||W_k - W_y|| R + c_k - c_y)`` with ``R`` one token's radius (the per-sample loss is the mean over
        positions); ``L_top``, ``A_norm`` and ``kappa`` are not derived there (no whole-state affine head).

    Returns
    -------
    Constants
        The values, ``how`` each was derived and ``why`` the others were not; pass it as
        ``dc.certify_insertion(..., constants=c)``.

    Raises
    ------
    TypeError, ValueError
        A bad model (e.g. BatchNorm in train mode), site, loss, ``y_bound`` or data, each named
        with the allowed values.

    Examples
    --------
        >>> import math
        >>> import torch
        >>> from torch import nn
        >>> import depthcert as dc
        >>> _ = torch.manual_seed(0)
        >>> net = nn.Sequential(nn.Linear(3, 8), nn.LayerNorm(8), nn.Linear(8, 2)).double()
        >>> x = torch.randn(16, 3, dtype=torch.float64)
        >>> c = dc.constants(net, "1", (x, (x[:, 0] > 0).long()))
        >>> math.isclose(c.rho, math.sqrt(8))                  # a LayerNorm output of 8 numbers
        True
        >>> W = net[2].weight.detach()
        >>> math.isclose(c.L_top, float(torch.linalg.matrix_norm(W, ord=2)))   # the linear head
        True
        >>> c.B is None, c.why["B"].startswith("the block sits right below the affine head")
        (True, True)
    """
    from numerics.user_network._constants_seq import picking
    from numerics.user_network._outputs import check_output_arg

    check_no_batchnorm(model, "model")
    check_output_arg(output)
    if loss not in LOSS_CURVATURE:
        raise ValueError(f"loss == {loss!r}, must be one of {sorted(LOSS_CURVATURE)} (a user's loss has no derived constants).")
    if y_bound is not None and not (math.isfinite(float(y_bound)) and float(y_bound) >= 0):
        raise ValueError(f"y_bound == {y_bound!r}, must be a finite number >= 0 (or None).")
    dtype = next(model.parameters()).dtype
    net = picking(copy.deepcopy(model).double().eval(), output)
    x, _ = as_stream(data, "data", net, 64).take(4)
    u, producer, after = _trace(net, site, x)
    why, how = {}, {}
    rho = _site_rho(producer, u, why, how, dtype)
    W, c, reason = _affine_tail(net, site, x, u)
    vals = {"rho": rho, "L_loss": math.sqrt(2.0) if loss == "cross_entropy" else None}
    head = None
    if W is not None:
        head = _top_site(W, c, y_bound, rho, loss, vals, why, how)
    else:
        _not_affine(reason, after, why)
        vals["B"] = _B_above(net, x, after, loss, y_bound, vals, why, how, dtype)
    _loss_and_phi(loss, vals, rho, head, why, how)
    vals = {k: vals.get(k) for k in _NAMES}
    return Constants(site=site, loss=loss, **vals, state_shape=tuple(u.shape[1:]),
                     why={k: v for k, v in why.items() if vals.get(k) is None},
                     how={k: v for k, v in how.items() if vals.get(k) is not None}, at_top=W is not None, head=head)


def _top_site(W, c, y_bound, rho, loss, vals: dict, why: dict, how: dict):
    """The affine head right above the site: ``L_top``, ``A_norm``, ``kappa``; ``B`` waits for the block."""
    _affine_constants(W, loss, vals, how)
    if rho is None:
        why["B"] = "no radius rho at the site (" + why["rho"] + ")"
        return None
    why["B"] = ("the block sits right below the affine head: the head input's radius is rho + nu_V rho_phi, fixed "
                "with the block (Constants.B_with; certify_insertion(constants=...) computes it)")
    if loss == "squared" and y_bound is None:
        why["B"] = "squared loss: needs y_bound (Y >= ||y||)"
    return W, c, y_bound, rho


def _not_affine(reason: str, after, why: dict) -> None:
    bad = _non_affine(after)
    reason = reason + (f"; not affine: {', '.join(bad[:4])}" if bad else "")
    relu = any("ReLU" in b or "GELU" in b for b in bad)
    why.update(L_top=f"an arbitrary f_top: no sure Lipschitz constant derived ({reason})",
               A_norm=f"f_top is not linear ({reason})",
               kappa=("ReLU inside f_top: no Lipschitz gradient, no kappa" if relu else
                      f"f_top is not affine: kappa is not derived ({reason})"))


def _loss_and_phi(loss: str, vals: dict, rho, head, why: dict, how: dict) -> None:
    if loss == "cross_entropy":
        how["L_loss"] = "sqrt(2) (cross-entropy on any logits, THEORY §1)"
    elif vals.get("L_loss") is None:
        why["L_loss"] = ("squared loss: 2 (F + Y) needs y_bound (Y >= ||y||) and the head input's radius"
                         + (" (Constants.loss_range_with)" if head is not None else ""))
    why["rho_phi"] = ("depends on the block's features: Constants.rho_phi_for(block) = ||U0||_2 rho + sqrt(P) ||b0|| "
                      "(certify_insertion(constants=...) computes it)" if rho is not None else
                      "no radius rho at the site, so no sure rho_phi")


def _site_rho(producer, u: torch.Tensor, why: dict, how: dict, dtype=torch.float64) -> float | None:
    numel = math.prod(u.shape[1:])
    if producer is None:
        why["rho"] = "the site's output is not the output of one module it calls (no normalisation identified)"
        return None
    name, mod = producer
    if isinstance(mod, nn.modules.batchnorm._BatchNorm):
        why["rho"] = (f"{name} is BatchNorm: in eval mode the affine map of its running statistics, of an unbounded "
                      "input (not a per-sample normalisation, THEORY §10): no sure radius")
        return None
    if not is_norm(mod):
        why["rho"] = f"the site's output comes from {name} ({type(mod).__name__}), not a per-sample normalisation"
        return None
    how["rho"] = (f"{type(mod).__name__} {name}: max|gamma| sqrt(S) + sqrt(S/n_g) ||beta||, S = {numel}"
                  + ("" if dtype == torch.float64 else f", times 1 + (S + 8) eps({dtype}) for the model's rounding"))
    return norm_radius(mod, numel) * (1.0 + _margin(numel, dtype))


def _margin(numel: int, dtype) -> float:
    """**Choice**: ``(S + 8) eps`` of a model computed in a dtype below float64 (Higham's ``gamma_n ~ n u``), else 0."""
    return 0.0 if dtype == torch.float64 or not dtype.is_floating_point else (numel + 8) * torch.finfo(dtype).eps


def _affine_constants(W: torch.Tensor, loss: str, vals: dict, how: dict) -> None:
    """``L_top = A_norm = ||W||_2``; ``kappa``: the largest curvature of ``h -> l(W (u + h) + c, y)`` over every
    ``u``, ``h``, ``y`` -- squared: ``2 ||W||_2^2``; cross-entropy: ``max_{k,j} ||W_k - W_j||^2 / 4`` (**Choice**, exact:
    ``W^T (diag p - p p^T) W``, Popoviciu's ``Var_p(w) <= (max w - min w)^2 / 4`` attained at ``p`` = 1/2 on two classes;
    at most ``||W||_2^2 / 2``, THEORY §6b (b)'s constant)."""
    L = float(torch.linalg.matrix_norm(W, ord=2))
    if loss == "cross_entropy":
        kappa = float(torch.cdist(W[None], W[None])[0].max()) ** 2 / 4.0
        form = "max_{k,j} ||W_k - W_j||^2 / 4 (cross-entropy: <= ||W||_2^2 / 2)"
    else:
        kappa, form = 2.0 * L * L, "2 ||W||_2^2 (squared loss)"
    vals.update(L_top=L, A_norm=L, kappa=kappa)
    how.update(L_top="||W||_2 of the affine f_top(u) = W u + c (whole flattened state)", A_norm="||W||_2", kappa=form)


def _B_above(net, x, after, loss, y_bound, vals: dict, why: dict, how: dict, dtype=torch.float64) -> float | None:
    """``B`` from the last normalisation above the site whose head is affine (no block below changes its radius);
    sequence logits: per token (:mod:`numerics.user_network._constants_seq`)."""
    from numerics.user_network._constants_seq import B_tokens, token_head

    for name, mod in reversed(after):
        if not is_norm(mod):
            continue
        u, _, _ = _trace(net, name, x)
        token = token_head(net, name, x, u, after)
        if token is not None:
            d = u.shape[-1]
            return B_tokens(name, mod, u, token, loss, norm_radius(mod, d) * (1.0 + _margin(d, dtype)), why, how)
        W, c, reason = _affine_tail(net, name, x, u)
        if W is None:
            break
        R = norm_radius(mod, math.prod(u.shape[1:])) * (1.0 + _margin(math.prod(u.shape[1:]), dtype))
        B, L_loss, form = _loss_range(loss, (W, c, y_bound, R), R)
        how["L_loss"] = "sqrt(2) (cross-entropy, THEORY §1)" if loss == "cross_entropy" else f"2 (F + Y), R = {R:.6g}"
        vals["L_loss"] = L_loss
        if B is None:
            why["B"] = "squared loss: needs y_bound (Y >= ||y||)"
            return None
        how["B"] = f"{form}, R = {R:.6g} the radius of {name} ({type(mod).__name__}), the last normalisation"
        return B
    bn = any(isinstance(m, nn.modules.batchnorm._BatchNorm) for _, m in after)
    why["B"] = ("no per-sample normalisation above the site feeds an affine head: the logits have no sure bound"
                + (" (BatchNorm in eval mode is an affine map of an unbounded input)" if bn else ""))
    return None


def from_constants(c, site: str, given: dict, rho_phi=None) -> dict:
    """``given`` (``certify_insertion``'s keywords) with every ``None`` filled from the :class:`Constants` ``c``.

    Raises:
        TypeError: ``c`` is not a :class:`Constants`. ValueError: derived at another site; ``rho_phi`` given
        but not a finite number > 0.
    """
    if rho_phi is not None and not (isinstance(rho_phi, (int, float)) and math.isfinite(rho_phi) and rho_phi > 0):
        raise ValueError(f"rho_phi == {rho_phi!r}, must be a finite number > 0 (or None: the plug-in maximum).")
    if c is None:
        return given
    if not isinstance(c, Constants):
        raise TypeError(f"constants is a {type(c).__name__}, must be the Constants of dc.constants(model, site, data).")
    if c.site != site:
        raise ValueError(f"constants were derived at site {c.site!r}, must be derived at the site certified ({site!r}).")
    return {k: (v if v is not None else c.given().get(k)) for k, v in given.items()}


def after_block(c, block, rho_phi, consts: dict, q: dict, level: float):
    """``(rho_phi, consts, q)`` once the block is known: the sure ``rho_phi`` of its features and, for a block right
    below the affine head, ``B`` (and the squared loss's ``L_loss``) at the radius ``rho + nu_V rho_phi`` (the cap
    ``nu_V = 2 ||V_pop||``), with ``Delta_R``'s lower bound recomputed at that range."""
    from bounds.confidence import empirical_bernstein_lower

    if c is None:
        return rho_phi, consts, q
    rho_phi = rho_phi if rho_phi is not None else c.rho_phi_for(block)
    if consts["B"] is None and c.at_top and rho_phi is not None:
        B, L_loss = c.loss_range_with(2.0 * float(block.V.detach().norm()) * rho_phi)
        consts = {**consts, "B": B, "L_loss": consts["L_loss"] if consts["L_loss"] is not None else L_loss}
        if B is not None and q.get("n_held", 0) >= 2:
            q = {**q, "delta_R": float(empirical_bernstein_lower(q["dR_mean"], q["dR_var"], q["n_held"], 2 * B,
                                                                   level / 4))}
    return rho_phi, consts, q
