"""The saturation study's typed result (:func:`numerics.studies.saturation.run`)."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from plumbing.results import StudyResult

__all__ = ["SaturationResult"]


@dataclasses.dataclass(frozen=True)
class SaturationResult(StudyResult):
    """A scan's ``saturation.json`` as a typed record (also a read-only mapping of its content).

    Attributes:
        saturated: the model-level test did not reject "every site saturated" at ``level``
            (absence of evidence, not a finding: see ``data["model"]["verdict"]``).
        best_site: the site with the largest predicted gain among the rejecting ones.
        predicted_gain, certified_gain: that site's plug-in gain bound and its certified lower bound.
        level: the model-level test's level.
        L_test_reference: the scanned reference network's test loss.
        data: the whole content (``to_dict()``: what ``saturation.json`` holds, without its stamp).
    """

    saturated: bool = False
    best_site: str = ""
    predicted_gain: float = 0.0
    certified_gain: float = 0.0
    level: float = 0.0
    L_test_reference: float = 0.0

    @classmethod
    def from_dict(cls, content: Mapping[str, Any]) -> "SaturationResult":
        """The typed record of a scan's content (``model`` and ``reference`` sections).

        Raises:
            KeyError: not a saturation result (a section or key missing).
        """
        import copy
        import types

        m, ref = content["model"], content["reference"]
        return cls(data=types.MappingProxyType(copy.deepcopy(dict(content))), saturated=bool(m["saturated"]),
                   best_site=m["best_site"], predicted_gain=m["predicted_gain"], certified_gain=m["certified_gain"],
                   level=m["level"], L_test_reference=ref["L_test"])
