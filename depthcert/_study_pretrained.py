"""Old path of the pretrained study, which is now the study package :mod:`numerics.studies.pretrained`
(its module ``numerics.studies.pretrained._study``); these names stay importable here."""
from numerics.studies.pretrained._study import DEFAULTS, QUICK, _pickle, _read_kept, _summary, run_pretrained  # noqa: F401

__all__ = ["DEFAULTS", "QUICK", "run_pretrained"]
