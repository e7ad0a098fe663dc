"""The one place where the run's quantity names become the setups' keys (``bounds``).

The run reports ``L_top_certified`` (beside ``L_top_empirical``) and ``delta_erm_pop`` (beside
``delta_erm_S``); :class:`bounds.routes.Setup` and :class:`bounds.localised_routes.LocalisedSetup`
call them ``L_top`` and ``delta_erm``. Every translation reads :data:`QUANTITY_OF`.
"""
from __future__ import annotations

from typing import Iterable, Mapping

__all__ = ["QUANTITY_OF", "setup_values"]

#: A setup key -> the name of the run's quantity it is read from (where they differ).
QUANTITY_OF: Mapping[str, str] = {"L_top": "L_top_certified", "delta_erm": "delta_erm_pop"}


def setup_values(source, keys: Iterable[str]) -> dict:
    """``{setup key: value}`` read from ``source`` (a quantities mapping, or an object such as
    :class:`~numerics.studies.run._stages.Constants`) under the run's names.

    Example:
        >>> setup_values({"L_top_certified": 2.0, "B": 1.0}, ("L_top", "B"))
        {'L_top': 2.0, 'B': 1.0}
    """
    read = source.__getitem__ if isinstance(source, Mapping) else (lambda name: getattr(source, name))
    return {k: read(QUANTITY_OF.get(k, k)) for k in keys}
