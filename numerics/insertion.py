"""Zero-output residual insertion ``x -> f_top(u + h_theta(u))``, ``u = f_bot(x)`` (THEORY §1).

Families (``h_0 = 0`` because ``V`` starts at 0):

* ``readout``: ``h_V(u) = V phi(u)``, ``phi(u) = relu(U0 u + b0)``, ``U0, b0`` frozen;
* ``full``: ``h(u) = V relu(U u + b)``, ``U, b, V`` trained;
* ``linear``: ``h_V(u) = V u`` (``phi(u) = u``);
* any family registered in :data:`bounds.families.RESIDUAL_FAMILIES`: its own block factory
  (:mod:`numerics.residual_families`; no family is named in this module's code).

``u`` is flattened to ``(n, d)`` for the block (``d = C H W`` for the CNN). The frozen
base model is shared, never copied, by :meth:`ExpandedModel.with_V`.
"""
from __future__ import annotations

import copy
import math

import torch
from torch import nn

from bounds.families import FamilyNames
from numerics.models import PostNorm
from numerics.residual_families import SCAN_ONLY, block_family

#: The residual block families with a certificate (a live view of :data:`bounds.families.RESIDUAL_FAMILIES`:
#: ``[block]`` keys, output and Rademacher bounds, block factory; the run study's ``insertion.family``).
CERTIFIED_FAMILIES = FamilyNames()
#: Insertion-only families: ``linear`` (``h_V(u) = V u``), a direction the saturation scans use; it has no
#: ``[block]`` table and no certificate. (Paper B's *protocol* families are another vocabulary:
#: :data:`numerics.families.PROTOCOL_FAMILIES`.)
SCAN_ONLY_FAMILIES = tuple(SCAN_ONLY)
#: Every family :func:`insert_block` builds (live: a family registered later is in it).
FAMILIES = FamilyNames(extra=SCAN_ONLY_FAMILIES)


class ResidualBlock(nn.Module):
    """``h(u) = V phi(u)`` on flattened states; ``V: (d, r)`` starts at 0.

    The features ``phi`` are the family's (:func:`numerics.residual_families.block_family`: its factory
    sets ``U, b`` from ``seed`` and computes ``phi``).

    Attributes:
        family: a registered family (``"readout"``, ``"full"``, ...) or ``"linear"``.
        V: trainable ``(d, r)``; ``U, b``: ``(r, d)``, ``(r,)`` (frozen for readout,
            trained for full, absent for linear).

    Raises:
        ValueError: an unknown family.
    """

    def __init__(self, family: str, d: int, r: int, seed: int, dtype: torch.dtype):
        super().__init__()
        torch_part = block_family(family)
        if torch_part is None:
            raise ValueError(f"family == {family!r}, must be one of {list(FAMILIES)}.")
        self.family, self.d, self.r = family, d, r
        self.V = nn.Parameter(torch.zeros(d, r, dtype=dtype))
        torch_part.init_features(self, seed)

    @property
    def U0(self):
        """Alias of ``U`` (THEORY's ``U0`` for the frozen readout features)."""
        return self.U

    @property
    def b0(self):
        """Alias of ``b`` (THEORY's ``b0``)."""
        return self.b

    def features(self, u: torch.Tensor) -> torch.Tensor:
        """``phi(u)``: ``(n, r)`` from ``u`` of shape ``(n, ...)`` with ``prod(...) = d``."""
        return block_family(self.family).features(self, u.reshape(u.shape[0], -1))

    def forward(self, u: torch.Tensor) -> torch.Tensor:
        """``h(u) = V phi(u)`` reshaped like ``u``."""
        return (self.features(u) @ self.V.T).reshape(u.shape)


class ExpandedModel(nn.Module):
    """``f_new(x) = base.top(u + block(u), at)`` with ``u = base.bottom(x, at)`` (frozen base).

    With ``post_norm=True`` the state passed on is ``N(u + block(u))`` (unit gain, the
    base model's ``eps_n``), function-preserving only if ``N`` is idempotent
    (see :func:`post_norm_report`).
    """

    def __init__(self, base: nn.Module, at: int, block: ResidualBlock, post_norm: bool = False):
        super().__init__()
        base._check_at(at)
        self.base, self.at, self.block = base, at, block
        self.post_norm = None
        if post_norm:
            ref = base.norm_at(at)
            groups = ref.groups if ref.kind == "group" else 1
            self.post_norm = PostNorm(ref.gamma.numel(), ref.kind, base.eps_n, 1.0, groups)
            self.post_norm.to(ref.gamma.dtype).requires_grad_(False)
        for p in self.base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.top_from_u(self.base.bottom(x, self.at))

    def top_from_u(self, u: torch.Tensor) -> torch.Tensor:
        """``f_top(u + h(u))`` (or ``f_top(N(u + h(u)))`` for post-norm insertion)."""
        z = u + self.block(u)
        if self.post_norm is not None:
            z = self.post_norm(z)
        return self.base.top(z, self.at)

    def block_parameters(self) -> list[nn.Parameter]:
        """The trainable parameters of the inserted block (``V``, and ``U, b`` for full)."""
        return [p for p in self.block.parameters() if p.requires_grad]

    def with_V(self, V: torch.Tensor) -> "ExpandedModel":
        """A copy sharing the frozen base, with ``V`` replaced (e.g. a jumpboard ``-G/beta``).

        Raises:
            ValueError: ``V`` has the wrong shape.
        """
        if tuple(V.shape) != tuple(self.block.V.shape):
            raise ValueError(f"expected V of shape {tuple(self.block.V.shape)}, got {tuple(V.shape)}.")
        new = copy.copy(self)
        new._modules = dict(self._modules)
        new.block = copy.deepcopy(self.block)
        with torch.no_grad():
            new.block.V.copy_(V.detach().to(new.block.V.dtype))
        return new


def insert_block(model: nn.Module, at: int, family: str = "readout", width: int = 16, seed: int = 0,
                 post_norm: bool = False) -> ExpandedModel:
    """Insert ``h_theta`` at ``z_at``: ``H_new = {x -> f_top(u + h_theta(u))}`` (THEORY §1).

    Args:
        model: a :class:`~numerics.models.PostNormResMLP` / ``PostNormResCNN`` (frozen
            in place: its parameters get ``requires_grad=False``).
        at: insertion point ``l`` in ``0..D``.
        family: ``"readout"``, ``"full"``, ``"linear"`` or any family registered in
            :data:`bounds.families.RESIDUAL_FAMILIES` (its block factory builds the block).
        width: block width ``r`` (the family's: ignored for ``linear``, where ``r = d``).
        seed: seed of the frozen ``U0, b0`` (readout) / initial ``U, b`` (full).
        post_norm: add ``N(u + h(u))`` (see :func:`post_norm_report`).

    Returns:
        An :class:`ExpandedModel` equal to ``model`` at ``theta = 0`` (bitwise when
        ``post_norm`` is False: ``u + 0 == u``).

    Raises:
        ValueError: unknown family, bad width or insertion point.

    **Not** :func:`depthcert.insert_block` (a different construction, so the two stay apart): this one
    needs a project network with the ``bottom``/``top`` split at an integer depth and returns an
    :class:`ExpandedModel` around the frozen base (shared, not copied; ``top_from_u``, ``with_V`` for the
    certificate's ``f~_pop``), its features drawn from ``seed`` alone; ``depthcert.insert_block`` takes any
    ``nn.Module`` and a named site, copies it, and inserts the block a saturation scan fixed (features and
    state layout from the scan, ``V`` from its jumpboard), keeping every parameter's name.

    Example:
        >>> from numerics.models import PostNormResMLP
        >>> net = PostNormResMLP(3, 8, 2, 4)
        >>> new = insert_block(net, at=1, family="readout", width=5)
        >>> x = torch.randn(6, 3, dtype=torch.float64)
        >>> torch.equal(new(x), net(x)), tuple(new.block.V.shape)
        (True, (8, 5))
    """
    torch_part = block_family(family)
    if torch_part is None:
        raise ValueError(f"family == {family!r}, must be one of {list(FAMILIES)}.")
    if not isinstance(width, int) or width < 1:
        raise ValueError(f"width == {width!r}, must be an int >= 1.")
    model._check_at(at)
    d = math.prod(model.state_shape)
    r = torch_part.width(d, width)
    dtype = model.head.weight.dtype
    return ExpandedModel(model, at, ResidualBlock(family, d, r, seed, dtype), post_norm)


def post_norm_function_preserving(model: nn.Module, at: int | None = None) -> bool:
    """Whether ``N(u + 0) == u`` for every ``u = z_at`` in exact arithmetic (THEORY §1).

    True iff the normalisation producing ``z_at`` is idempotent: ``eps_n = 0``, unit gain
    and zero shift (the inserted ``N`` has unit gain). Otherwise post-norm insertion
    changes the function at ``theta = 0``.

    Args:
        model: a base model (then ``at`` is required) or an :class:`ExpandedModel`
            (its own ``base`` and ``at`` are used when ``at`` is None).

    Raises:
        ValueError: ``at`` missing for a base model.
    """
    if isinstance(model, ExpandedModel):
        model, at = model.base, model.at if at is None else at
    if at is None:
        raise ValueError("at == None, must be an insertion point in [0, D] for a base model.")
    return model.norm_at(at).is_idempotent()


def post_norm_report(model: nn.Module, at: int, x: torch.Tensor | None = None) -> dict:
    """Post-norm insertion report: exact-arithmetic verdict, reasons, measured deviation.

    Returns:
        dict with ``function_preserving`` (bool), ``eps_n``, ``unit_gain``, ``zero_shift``
        and, when ``x`` is given, ``max_abs_output_change`` on that batch.
    """
    ref = model.norm_at(at)
    report = {
        "function_preserving": post_norm_function_preserving(model, at),
        "eps_n": ref.eps_n,
        "unit_gain": bool(torch.all(ref.gamma.detach() == 1.0)),
        "zero_shift": ref.beta is None or bool(torch.all(ref.beta.detach() == 0.0)),
    }
    if x is not None:
        with torch.no_grad():
            plain = model(x)
            changed = insert_block(model, at, "linear", post_norm=True)(x)
        report["max_abs_output_change"] = float((changed - plain).abs().max())
    return report
