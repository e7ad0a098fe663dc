"""Deprecated alias: the figures live with their studies (kept so that existing imports keep working)."""
import warnings

from numerics.studies.run._outputs import plot_bound_vs_observed  # noqa: F401
from numerics.studies.sweeps import plot_sweep  # noqa: F401
from plumbing.store import load_result  # noqa: F401

__all__ = ["load_result", "plot_bound_vs_observed", "plot_sweep"]

warnings.warn("numerics.plots is deprecated: plot_bound_vs_observed is in numerics.studies.run, plot_sweep in "
              "numerics.studies.sweeps, load_result in plumbing.store", DeprecationWarning, stacklevel=2)
