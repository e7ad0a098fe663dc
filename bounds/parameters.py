"""The setup parameters of THEORY §5-§6 and their allowed ranges, as data.

:data:`PARAMETERS` maps every setup key to its constraint so that invalid values can be
generated automatically in property tests (scikit-learn's ``_parameter_constraints`` idea).
The constraint dialect itself (:class:`~plumbing.validation.Interval`,
:class:`~plumbing.validation.InputError`) lives in :mod:`plumbing.validation`; importing it
from here is deprecated.
"""
from __future__ import annotations

from typing import Iterator, Mapping

from bounds.families import RESIDUAL_FAMILIES
from plumbing.validation import Interval

__all__ = ["BLOCK_PARAMETERS", "OPTIONAL", "PARAMETERS"]

_unit_open = Interval(0, 1, closed_low=False, closed_high=False)
_nonneg = Interval(0)
_pos = Interval(0, closed_low=False)
_real = Interval()

#: Top-level setup keys (THEORY §5-§6) and their allowed ranges.
PARAMETERS: Mapping[str, Interval] = {
    "L_test_old": _nonneg,
    "delta_R": _real,          # measured; Theorem 2 needs > 0 and says so when it is not
    "delta_erm": _nonneg,      # (C2) makes it >= 0
    "delta_test_R": _real,     # random test-level margin, any sign
    "M": Interval(1),
    "K": Interval(1),
    "delta": _unit_open,
    "delta_prime": _unit_open,
    "B": _pos,
    "L_loss": _pos,
}

#: Optional top-level keys.
OPTIONAL: Mapping[str, Interval] = {
    "delta_erm_S": _nonneg,
    "eps_M": _nonneg,
    "eps_K": _nonneg,
    "n_grid": Interval(1, integer=True),
    "delta_R_failure": Interval(0, 1, closed_low=True, closed_high=False),
    "R_old": _nonneg,
}

class _BlockParameters(Mapping):
    """``{family name: its [block] keys and ranges}``, read from :data:`bounds.families.RESIDUAL_FAMILIES`."""

    def __getitem__(self, name: str) -> Mapping[str, Interval]:
        return RESIDUAL_FAMILIES[name].parameters

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(RESIDUAL_FAMILIES))

    def __len__(self) -> int:
        return len(RESIDUAL_FAMILIES)

    def __repr__(self) -> str:
        return repr(dict(self))


#: ``[block]`` keys per family (THEORY §4), read from the family objects of :mod:`bounds.families`: the
#: one table every key list of a family is read from (the setup's ``[block]``, the run study's caps and
#: ``bounds_config.toml``). A live view: a family registered later (:func:`bounds.families.register_family`)
#: is in it.
BLOCK_PARAMETERS: Mapping[str, Mapping[str, Interval]] = _BlockParameters()

