"""Old path of the pretrained study, which is now the study package :mod:`numerics.studies.pretrained`
(its module ``numerics.studies.pretrained._study``); every name of that module stays importable here."""
from numerics.studies.pretrained import _study
from numerics.studies.pretrained._study import DEFAULTS, QUICK, run_pretrained

__all__ = ["DEFAULTS", "QUICK", "run_pretrained"]


def __getattr__(name: str):
    """Any other name of the study's module (``_f_old``, ``_summary``, ...), read from it."""
    return getattr(_study, name)
