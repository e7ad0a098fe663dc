"""Residual block families (THEORY §1, §4) as objects: the one place to add a family.

A *residual block family* is the class ``H_new`` of blocks ``h_theta`` inserted at a state
``u`` (``x -> f_top(u + h_theta(u))``). Its mathematics lives here, torch-free: the
``[block]`` keys a setup needs (with their ranges), the sure bound on the block's output and
the closed-form bound on the vector Rademacher complexity ``Rad^vec_n(H)``. The torch
behaviour of a family (its caps from a network, training, (C2) selection, re-evaluation)
is registered under the same name in :data:`numerics.studies.run._family.RUN_FAMILIES`.

* ``readout``: ``h_V(u) = V phi(u)``, ``phi(u) = relu(U0 u + b0)`` frozen, ``||V||_F <= nu_V``;
* ``full``: ``h(u) = V relu(U u + b)``, ``||[U b]||_F <= nu_U``, ``||V||_F <= nu_V``.

Not to be confused with Paper B's *protocol* families (``linear``/``affine``/``readout``/
``block`` of :mod:`numerics.families`, config key ``saturation.families``): those name which
directions a saturation test scans, not a certified class. :mod:`numerics.insertion` also
builds a ``linear`` block (``h_V(u) = V u``) for the scans; it has no certificate here.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping

import sympy as sp

from bounds import _symbols as s
from plumbing.validation import InputError, Interval

__all__ = ["FULL", "READOUT", "RESIDUAL_FAMILIES", "ResidualFamily", "residual_family"]

_nonneg = Interval(0)
#: The keys every family's ``[block]`` has: the state dimension and the top's Lipschitz constant.
_COMMON = {"d": Interval(1, integer=True), "L_top": _nonneg}


@dataclasses.dataclass(frozen=True)
class ResidualFamily:
    """One residual block family (docstring of ``bounds.families``).

    Attributes:
        name: its ``[block] family`` / ``insertion.family`` value.
        parameters: its ``[block]`` keys and their ranges (``d``, ``L_top``, then the caps).
        output_formula: ``{cap key: value} -> sup ||h(u)||`` (plain floats, no sympy).
        rad_vec_formula: ``n -> the closed-form bound on Rad^vec_n(H)`` (sympy).
        empirical_rademacher: the sign Monte Carlo of the empirical Rademacher value (THEORY §4)
            is this family's (readout: the linear class ``V -> V phi``), so the empirical
            variants and the Jensen bound apply.
        trains_features: training moves the features (``full``): a localised ball in ``V``
            alone (THEORY §6b) does not hold ``f_new``.
        description: one line for docs and errors.
    """

    name: str
    parameters: Mapping[str, Interval]
    output_formula: Callable[[Mapping[str, float]], float]
    rad_vec_formula: Callable[[sp.Expr], sp.Expr]
    empirical_rademacher: bool
    trains_features: bool
    description: str

    @property
    def output_keys(self) -> tuple[str, ...]:
        """The ``[block]`` keys that bound the block's output (all but ``d`` and ``L_top``)."""
        return tuple(k for k in self.parameters if k not in _COMMON)

    def output_bound(self, block: Mapping[str, float]) -> float:
        """``sup ||h_theta(u)||`` over the capped class and ``||u|| <= rho`` (THEORY §1, §4).

        Raises:
            InputError: a missing or negative / non-finite cap (named ``block.<key>``).
        """
        v = {}
        for k in self.output_keys:
            if k not in block:
                raise InputError(f"block.{k}", "a finite number >= 0", "<missing>")
            x = float(block[k])
            if not (math.isfinite(x) and x >= 0):
                raise InputError(f"block.{k}", "a finite number >= 0", x)
            v[k] = x
        return self.output_formula(v)

    def rad_vec(self, n: sp.Expr = s.n) -> sp.Expr:
        """The closed-form bound on ``Rad^vec_n(H)`` (sympy, in the ``[block]`` symbols)."""
        return self.rad_vec_formula(n)


READOUT = ResidualFamily(
    "readout", {**_COMMON, "rho_phi": _nonneg, "nu_V": _nonneg},
    output_formula=lambda v: v["nu_V"] * v["rho_phi"],                                   # ||V phi|| <= nu_V rho_phi
    rad_vec_formula=lambda n: s.nu_V * sp.sqrt(s.d) * s.rho_phi / sp.sqrt(n),
    empirical_rademacher=True, trains_features=False,
    description="h_V(u) = V relu(U0 u + b0), U0, b0 frozen, ||V||_F <= nu_V")
#: Golowich--Rakhlin--Shamir 2018 (Thm 1, depth 2, summed over the ``d`` output coordinates; bias
#: absorbed, ``rho~ = sqrt(rho^2 + 1)``); output ``<= nu_V ||[U b]||_F ||[u; 1]|| <= nu_V nu_U rho~``.
FULL = ResidualFamily(
    "full", {**_COMMON, "rho": _nonneg, "nu_U": _nonneg, "nu_V": _nonneg},
    output_formula=lambda v: v["nu_V"] * v["nu_U"] * math.sqrt(v["rho"] ** 2 + 1.0),
    rad_vec_formula=lambda n: s.d * sp.sqrt(s.rho**2 + 1) * s.nu_U * s.nu_V * (sp.sqrt(4 * sp.log(2)) + 1) / sp.sqrt(n),
    empirical_rademacher=False, trains_features=True,
    description="h(u) = V relu(U u + b), ||[U b]||_F <= nu_U, ||V||_F <= nu_V (U, b, V trained)")

#: Every residual block family, by name (append here to add one; every key list derives from it).
RESIDUAL_FAMILIES: Mapping[str, ResidualFamily] = {f.name: f for f in (READOUT, FULL)}


def residual_family(name: object, key: str = "block.family") -> ResidualFamily:
    """The family named ``name``.

    Raises:
        InputError: an unknown name (``key`` named, with the known families).
    """
    if not isinstance(name, str) or name not in RESIDUAL_FAMILIES:
        raise InputError(key, f"one of {sorted(RESIDUAL_FAMILIES)}", name)
    return RESIDUAL_FAMILIES[name]
