"""Alias: the figures now live with their studies (kept so that existing imports keep working)."""
from numerics._store import load_result  # noqa: F401
from numerics.studies._run_outputs import plot_bound_vs_observed  # noqa: F401
from numerics.studies.sweeps import plot_sweep  # noqa: F401

__all__ = ["load_result", "plot_bound_vs_observed", "plot_sweep"]
