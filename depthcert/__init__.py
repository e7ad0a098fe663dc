"""depthcert: when does adding depth to a normalised residual network provably help?

The thin user-facing layer: the public API for a user's own network (:mod:`depthcert.api`,
re-exported here: ``dc.saturation``, ``dc.insert_block``, ``dc.grow``,
``dc.certify_insertion``, ``dc.constants``, ``dc.new_parameters``, ``dc.load_grown``,
``dc.predicted_vs_observed``, ``dc.calibration``, ``dc.first_order_check``, ``dc.trial_insertion``), the ``depthcert``
CLI, config loading and reports. The mathematics lives in :mod:`bounds` (symbolic
statements), :mod:`proofs_check` (machine checks of their proof chains) and :mod:`numerics`
(torch measurements).
"""
__version__ = "0.1.0"
__all__ = ["Certificate", "Constants", "DEFAULT_EPS", "DEFAULT_ROUTE", "GrowthResult", "LAYOUTS", "ROUTES",
           "RefusedInsertion", "RouteSpec", "SaturationReport", "Suggestion", "TrialResult", "__version__", "calibration",
           "certify_insertion", "constants", "first_order_check", "grow", "insert_block", "load_grown", "new_parameters",
           "plot_calibration", "predicted_vs_observed", "register_route", "saturation", "trial_insertion"]

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name):
    # the API (torch) is imported on first use, so `depthcert bounds` and `--help` stay light
    if name in _API:
        from depthcert import api

        return getattr(api, name)
    raise AttributeError(f"module 'depthcert' has no attribute {name!r}")


def __dir__():
    # the lazily imported API is listed too (tab completion, documentation tools)
    return sorted(set(globals()) | _API)
