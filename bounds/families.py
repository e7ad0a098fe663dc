"""Residual block families (THEORY §1, §4) as objects: the one registry of families, :data:`RESIDUAL_FAMILIES`.

A *residual block family* is the class ``H_new`` of blocks ``h_theta`` inserted at a state
``u`` (``x -> f_top(u + h_theta(u))``). One :class:`ResidualFamily` carries all of it:

* its mathematics, torch-free: the ``[block]`` keys a setup needs (with their ranges), the sure
  bound on the block's output, the closed-form bound on the vector Rademacher complexity
  ``Rad^vec_n(H)`` (its Rademacher term), its side algebra (:attr:`ResidualFamily.side_algebra`:
  the facts :mod:`proofs_check` checks for it) and its tangent space at ``theta = 0``
  (:attr:`ResidualFamily.tangent`: the protocol family whose features span it, THEORY §8);
* ``torch``: its block factory (features, width, ``rho_phi``) and the API's certificate block
  (:class:`numerics.residual_families.TorchFamily`);
* ``run``: its behaviour in the run study -- caps from a network, training, (C2) selection,
  re-evaluation (:class:`numerics.studies.run._family.RunFamily`).

The built-in families' torch and run parts are attached by :mod:`numerics.residual_families` and
:mod:`numerics.studies.run._family` (:func:`attach`), so that this module stays torch-free; a new
family is one module building one complete :class:`ResidualFamily` and one :func:`register_family`
call (docs/CONTRIBUTING.md, "Add a block family"). Every name list of families
(:data:`bounds.parameters.BLOCK_PARAMETERS`, ``insertion.family``'s allowed values, the run
study's registry) is a live view of this registry (:class:`FamilyNames`).

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
from typing import Any, Callable, Iterator, Mapping, Sequence

import sympy as sp

from bounds import _symbols as s
from plumbing.validation import InputError, Interval

__all__ = ["BUILT_IN", "FULL", "READOUT", "RESIDUAL_FAMILIES", "FamilyNames", "ResidualFamily", "attach",
           "register_family", "residual_family", "unregister_family"]

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
        tangent: the protocol family (:data:`numerics.families.PROTOCOL_FAMILIES`) whose features span the
            family's tangent space at ``theta = 0`` (THEORY §8): the directions a scan scores for it, and the
            features the API's scan, jumpboard and certificate use for it (``readout`` and ``full``:
            ``"readout"``, since ``full``'s derivative in ``U, b`` vanishes at ``V = 0``).
        torch: its torch behaviour (:class:`numerics.residual_families.TorchFamily`); None until attached.
        run: its run-study behaviour (:class:`numerics.studies.run._family.RunFamily`); None until attached.
    """

    name: str
    parameters: Mapping[str, Interval]
    output_formula: Callable[[Mapping[str, float]], float]
    rad_vec_formula: Callable[[sp.Expr], sp.Expr]
    empirical_rademacher: bool
    trains_features: bool
    description: str
    tangent: str = "readout"
    torch: Any = None
    run: Any = None

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

    @property
    def side_algebra(self) -> tuple[str, ...]:
        """The side-algebra facts its certificates rest on, each checked per family by :mod:`proofs_check`:
        ``eps_scaling`` (``eps_M sqrt(M)`` free of ``M``: the closed ``min_M`` solves), ``uniform_closed``
        (the uniform term with its closed form is THEORY §4's ``eps_n``) and, where the family's sign Monte
        Carlo applies, ``uniform_empirical``."""
        return ("eps_scaling", "uniform_closed") + (("uniform_empirical",) if self.empirical_rademacher else ())


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

#: Every residual block family, by name: the one registry (:func:`register_family` adds one; every name
#: and key list of families reads it).
RESIDUAL_FAMILIES: Mapping[str, ResidualFamily] = {f.name: f for f in (READOUT, FULL)}
#: The families shipped with the toolkit (:func:`unregister_family` keeps them).
BUILT_IN = ("readout", "full")
#: Names a new family may not take: the scan-only ``linear`` block and the protocol families ``affine`` and
#: ``block`` of :mod:`numerics` (``readout`` is both a protocol and a residual family, with the same features).
_RESERVED = ("linear", "affine", "block")


def register_family(family: ResidualFamily, *, replace: bool = False) -> ResidualFamily:
    """Add ``family`` to :data:`RESIDUAL_FAMILIES` (the one registration call of a new family).

    Raises:
        ValueError: not a :class:`ResidualFamily`, a name taken (unless ``replace``), reserved or not an
            identifier, or ``[block]`` keys without ``d`` and ``L_top``.
    """
    if not isinstance(family, ResidualFamily):
        raise ValueError(f"family is a {type(family).__name__}, must be a bounds.families.ResidualFamily.")
    taken = family.name in _RESERVED or (family.name in RESIDUAL_FAMILIES and (not replace or family.name in BUILT_IN))
    if not family.name.isidentifier() or taken:
        raise ValueError(f"family.name == {family.name!r}, must be an identifier not in "
                         f"{list(RESIDUAL_FAMILIES) + list(_RESERVED)} (a registered one other than the built-in "
                         f"{list(BUILT_IN)}: with replace=True).")
    if not set(_COMMON) <= set(family.parameters):
        raise ValueError(f"family.parameters == {sorted(family.parameters)}, must hold {sorted(_COMMON)}.")
    RESIDUAL_FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a registered family (a test's or a plugin's).

    Raises:
        ValueError: a built-in family (:data:`BUILT_IN`) or an unknown name.
    """
    if name in BUILT_IN or name not in RESIDUAL_FAMILIES:
        raise ValueError(f"name == {name!r}, must be a registered family other than {list(BUILT_IN)}.")
    del RESIDUAL_FAMILIES[name]


def attach(name: str, **parts) -> ResidualFamily:
    """Set a registered family's ``torch`` or ``run`` part (how the layers above attach the built-ins' parts).

    Raises:
        ValueError: an unknown family or a part other than ``torch`` / ``run``.
    """
    if name not in RESIDUAL_FAMILIES or not set(parts) <= {"torch", "run"}:
        raise ValueError(f"(name, parts) == {(name, sorted(parts))!r}, must be a registered family and torch / run.")
    RESIDUAL_FAMILIES[name] = dataclasses.replace(RESIDUAL_FAMILIES[name], **parts)   # built-ins too: parts only
    return RESIDUAL_FAMILIES[name]


class FamilyNames(Sequence):
    """A live, read-only view of the registered families' names (then ``extra``), equal to the tuple it shows.

    It is also a rule of :func:`plumbing.validation.check_value` (``insertion.family``'s allowed values).

    Example:
        >>> names = FamilyNames(extra=("linear",))
        >>> names == ("readout", "full", "linear"), "full" in names, names.describe()
        (True, True, "one of ['readout', 'full', 'linear']")
    """

    def __init__(self, extra: tuple[str, ...] = ()):
        self._extra = tuple(extra)

    def _names(self) -> tuple[str, ...]:
        return tuple(RESIDUAL_FAMILIES) + self._extra

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __eq__(self, other) -> bool:
        return self._names() == (tuple(other) if isinstance(other, (tuple, list, FamilyNames)) else other)

    def __hash__(self) -> int:          # equal to the tuple it shows, so hashed as that tuple (as the tuples it replaced)
        return hash(self._names())

    def __add__(self, other) -> tuple:
        return self._names() + tuple(other)

    def __radd__(self, other) -> tuple:
        return tuple(other) + self._names()

    def __repr__(self) -> str:
        return repr(self._names())

    def describe(self) -> str:
        """``one of [...]`` (the message of a refused value)."""
        return f"one of {list(self._names())}"

    def invalid_examples(self) -> tuple:
        """Values the rule rejects (for generated bad-input tests)."""
        return ("bogus", 1, True)

    def check(self, key: str, value: object):
        """``value`` if it names a family here, else :class:`~plumbing.validation.InputError` naming ``key``."""
        if not isinstance(value, str) or value not in self._names():
            raise InputError(key, self.describe(), value)
        return value


def residual_family(name: object, key: str = "block.family") -> ResidualFamily:
    """The family named ``name``.

    Raises:
        InputError: an unknown name (``key`` named, with the known families).
    """
    if not isinstance(name, str) or name not in RESIDUAL_FAMILIES:
        raise InputError(key, f"one of {sorted(RESIDUAL_FAMILIES)}", name)
    return RESIDUAL_FAMILIES[name]
