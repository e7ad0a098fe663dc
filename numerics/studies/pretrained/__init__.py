"""The pretrained study (``depthcert study pretrained``): where to insert a block into MiniLM-L6, does it help,
and LLaMA-Pro's control; a study package like the others (its stages private, :func:`run_pretrained` its face)."""
from numerics.studies.pretrained._study import DEFAULTS, QUICK, run_pretrained

__all__ = ["DEFAULTS", "QUICK", "run_pretrained"]
