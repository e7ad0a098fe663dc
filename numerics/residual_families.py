"""The torch part of the residual block families of :data:`bounds.families.RESIDUAL_FAMILIES`: block factories.

A family's ``torch`` part (:class:`TorchFamily`) builds and reads its block ``h(u) = V phi(u)`` on
flattened states (:class:`numerics.insertion.ResidualBlock`, ``V: (d, r)`` starting at 0):

* ``init_features(block, seed)``: sets ``block.U``, ``block.b`` (frozen buffers, trained parameters or
  None) from the seed;
* ``features(block, flat)``: ``phi`` of shape ``(n, r)`` from states flattened to ``(n, d)``;
* ``width(d, width)``: the block's ``r``;
* ``rho_phi(block, rho)``: a sure bound on ``sup_{||u|| <= rho} ||phi(u)||`` at the block's current
  features (THEORY §4);
* ``certificate_block(q, c)``: the ``[block]`` of :func:`depthcert.certify_insertion`'s setup, from the
  quantities ``q`` the API measured on its block of the family's tangent features
  (:attr:`bounds.families.ResidualFamily.tangent`: ``d``, ``nu_V``, ``rho_phi``) and its constants ``c``;
  None: the API does not certify the family. The API's other inputs stay those of the tangent features
  (``phi_sq_sum`` of the empirical routes, the localised routes' moments): a family whose
  ``certificate_block`` rescales ``nu_V`` must not claim ``empirical_rademacher``.

Built-ins: ``readout`` (``phi = relu(U0 u + b0)``, frozen), ``full`` (the same features, trained; the API
does not certify it: its ERM trains ``V`` only and its class needs a sure ``rho``), attached here to
the registry entries, and the scan-only ``linear`` (``phi(u) = u``, :data:`SCAN_ONLY`: a direction of the
scans with no certificate, so not in the registry).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping

import torch
from torch import nn

from bounds.families import RESIDUAL_FAMILIES, attach
from numerics._numerics import spectral_norm
from numerics.families import PROTOCOL_FAMILIES

__all__ = ["FULL_TORCH", "LINEAR_TORCH", "READOUT_TORCH", "SCAN_ONLY", "TorchFamily", "block_family", "tangent_family"]


@dataclasses.dataclass(frozen=True)
class TorchFamily:
    """A residual block family's torch part (docstring of ``numerics.residual_families``)."""

    init_features: Callable
    features: Callable
    width: Callable
    rho_phi: Callable
    certificate_block: Callable | None = None


def _random_features(trained: bool) -> Callable:
    def init(block: nn.Module, seed: int) -> None:
        gen = torch.Generator().manual_seed(seed)
        dtype = block.V.dtype
        # He-style scale so that ||phi(u)|| is of the order of ||u||.
        U = torch.randn(block.r, block.d, generator=gen, dtype=dtype) * math.sqrt(2.0 / block.d)
        b = torch.randn(block.r, generator=gen, dtype=dtype) * 0.1
        if trained:
            block.U, block.b = nn.Parameter(U), nn.Parameter(b)
        else:
            block.register_buffer("U", U)
            block.register_buffer("b", b)
    return init


def _no_features(block: nn.Module, seed: int) -> None:
    block.U = block.b = None


def relu_features(block: nn.Module, flat: torch.Tensor) -> torch.Tensor:
    """``relu(U flat + b)``: ``(n, r)``."""
    return torch.nn.functional.linear(flat, block.U, block.b).relu_()   # fused: ~2x faster than relu(u U^T + b)


def relu_rho_phi(block: nn.Module, rho: float) -> float:
    """``||relu(U u + b)|| <= ||U u + b|| <= ||U||_2 rho + ||b||``."""
    return spectral_norm(block.U) * float(rho) + float(block.b.detach().norm())


def readout_certificate_block(q: Mapping, c: Mapping) -> dict:
    """``readout``'s ``[block]``: ``d``, ``L_top``, the plug-in or given ``rho_phi`` and the cap ``nu_V``."""
    return {"d": q["d"], "L_top": c["L_top"], "rho_phi": q["rho_phi"], "nu_V": q["nu_V"]}


READOUT_TORCH = TorchFamily(_random_features(trained=False), relu_features, lambda d, width: width, relu_rho_phi,
                            readout_certificate_block)
FULL_TORCH = TorchFamily(_random_features(trained=True), relu_features, lambda d, width: width, relu_rho_phi)
LINEAR_TORCH = TorchFamily(_no_features, lambda block, flat: flat, lambda d, width: d, lambda block, rho: float(rho))
#: Insertion-only families (no certificate, not in the registry): ``linear``, ``h_V(u) = V u``.
SCAN_ONLY: Mapping[str, TorchFamily] = {"linear": LINEAR_TORCH}

attach("readout", torch=READOUT_TORCH)
attach("full", torch=FULL_TORCH)


def block_family(name: str) -> TorchFamily | None:
    """The torch part of the family ``name`` (registered or scan-only); None: no such family (or no torch part)."""
    if name in SCAN_ONLY:
        return SCAN_ONLY[name]
    fam = RESIDUAL_FAMILIES.get(name) if isinstance(name, str) else None
    return None if fam is None else fam.torch


def tangent_family(name: str) -> str:
    """The protocol family whose features span ``name``'s tangent space at ``theta = 0`` (THEORY §8).

    A protocol family is its own; a registered residual family names its
    :attr:`~bounds.families.ResidualFamily.tangent`; anything else is returned as it is (the caller names it).

    Example:
        >>> tangent_family("affine"), tangent_family("full")
        ('affine', 'readout')
    """
    if name in PROTOCOL_FAMILIES or not isinstance(name, str) or name not in RESIDUAL_FAMILIES:
        return name
    return RESIDUAL_FAMILIES[name].tangent
