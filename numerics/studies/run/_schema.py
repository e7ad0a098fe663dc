"""The run study's configuration schema, as data (STYLE: Errors): one table per section.

Its own module, below every stage, so that the typed configuration
(:mod:`numerics.studies.run._config`) is derived from it without an import circle: a key
added here appears in :class:`~numerics.studies.run._config.RunConfig` automatically.
``[localised]``'s rules (:class:`CapRule`, :data:`LOCALISED_SCHEMA`) live here for the same
reason (re-exported by :mod:`numerics.studies.run._localised`).
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from bounds._variant_inputs import ROUTE_NAMES
from bounds.localised import LOCALISED_SPECS
from plumbing.validation import InputError, Interval
from numerics.builders import MODEL_SCHEMA, REFERENCE_SCHEMA, TASK_SCHEMA
from numerics.studies.run._family import FAMILIES, INSERTION_OPTIONS

__all__ = ["CONFIG_SCHEMA", "CapRule", "LOCALISED_SCHEMA"]

_int = lambda lo: Interval(lo, integer=True)  # noqa: E731
_unit = Interval(0, 1, closed_low=False, closed_high=False)
_pos = Interval(0, closed_low=False)


class CapRule:
    """``[localised] cap``: ``"jumpboard"``, ``"predicted"`` or a number ``> 0`` (a rule of :func:`plumbing.validation.check_value`)."""

    WORD = "jumpboard"
    PREDICTED = "predicted"

    def describe(self) -> str:
        return (f'"{self.WORD}" (nu = ||G^||/beta^ on the signal sample), "{self.PREDICTED}" (the cap that maximises '
                'the margin of the route fixed before the data predicted on the signal sample) or a finite number > 0 '
                'fixed before S')

    def invalid_examples(self) -> tuple:
        """Values the rule rejects (for generated bad-input tests)."""
        return ("wide", 0.0, -1.0, math.inf, True, [1.0])

    def check(self, key: str, value: object):
        if value in (self.WORD, self.PREDICTED) and isinstance(value, str):
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not (0 < value < math.inf):
            raise InputError(key, self.describe(), value)
        return float(value)


#: The ``[localised]`` table (levels fixed before the data; absent ones: what ``level`` leaves, split).
LOCALISED_SCHEMA: Mapping[str, object] = {
    "cap": CapRule(), "use": tuple(LOCALISED_SPECS), "delta_U": _unit, "delta_T_d": _unit, "delta_S_pop": _unit,
    "delta_sigma": _unit, "delta_R_failure": _unit, "delta_Sn": _unit, "delta_tr": _unit, "variance": ("centred", "uncentred"),
    "cap_grid": _int(1), "cap_ratio": Interval(1, closed_low=False)}

#: Allowed values, as data: an :class:`Interval` or a tuple of choices (STYLE: Errors).
CONFIG_SCHEMA: Mapping[str, Mapping[str, Any]] = {
    "": {"seed": _int(0), "data_seed": _int(0), "level": Interval(0, 1, closed_low=False)},
    "task": TASK_SCHEMA,
    "model": MODEL_SCHEMA,
    "reference": REFERENCE_SCHEMA,
    "insertion": {"at": _int(-1), "family": FAMILIES, "width": _int(1), "seed": _int(0),
                  "output_cap": _pos, **INSERTION_OPTIONS},
    "block_training": {"optimizer": ("sgd", "momentum", "adam"), "lr": _pos, "steps": _int(0),
                       "batch_size": _int(1)},
    "sizes": {"M": _int(2), "K": _int(2), "population": _int(2), "delta": _unit, "delta_prime": _unit},
    # THEORY §6 variants (this project's Choice): levels fixed before any data, the sign Monte
    # Carlo of the empirical Rademacher value, and the route fixed before the data (optional)
    "variants": {"delta_mc": _unit, "n_draws": _int(1), "delta_S_jump_pop": _unit, "delta_T_new": _unit,
                 "delta_T_old": _unit, "delta_T_jump_S": _unit, "use": ROUTE_NAMES},
    # THEORY §6b localised certificates (this project's Choice): the ball's cap, levels, the route fixed before the data
    "localised": LOCALISED_SCHEMA,
}
