"""depthcert on your own network: the public API for any ``nn.Module`` and any data.

* :func:`saturation` -- scan every site: ``"improvable"``, ``"saturated"`` (within ``eps``) or
  ``"undetermined"`` (THEORY §8), in each site's state layout (THEORY §10);
* :func:`insert_block` -- a copy of the model with one block inserted (``init="zero"``:
  function-preserving; ``"jumpboard"``: Theorem 1's step from a scan, inserted only when the
  scan checked it: ``rep.suggestion``); every original parameter keeps its name and value,
  :func:`new_parameters` lists the new ones, :func:`load_grown` rebuilds a saved grown model;
* :func:`grow` -- scan, insert, train, until saturated within ``eps``;
* :func:`certify_insertion` -- Paper A's certificate at a site, from samples by role
  (signal, ``S``, ``T``), every route of the extensible table :data:`ROUTES` evaluated;
* :func:`predicted_vs_observed`, :func:`calibration`, :func:`first_order_check`, :func:`plot_calibration` --
  the scan's scores beside the gains realised after ``k`` training steps, their rank tests and calibration;
* :func:`trial_insertion` -- a measured answer to "where, and is a new block worth it at all?";
* :func:`constants` -- the sure ``B``, ``L_top``/``A_norm``, ``kappa``, ``rho`` and ``rho_phi`` of
  common heads (a post-norm state, a linear or pooled linear head), or why not.

Data: a ``DataLoader``, a ``Dataset``, a tuple ``(x, y)`` of tensors or numpy arrays, or any
re-iterable of ``(x, y)`` batches, streamed on the model's device and dtype.
"""
import importlib as _importlib
import pkgutil as _pkgutil
import sys as _sys

import numerics.user_network as _impl
from numerics.user_network import (DEFAULT_EPS, DEFAULT_ROUTE, LAYOUTS, ROUTES, Certificate, Constants, GrowthResult,
                                   RefusedInsertion, RouteSpec, SaturationReport, Suggestion, TrialResult, calibration,
                                   certify_insertion, constants, first_order_check, grow, insert_block, load_grown,
                                   new_parameters, plot_calibration, predicted_vs_observed, register_route, saturation,
                                   trial_insertion)

__all__ = ["Certificate", "Constants", "DEFAULT_EPS", "DEFAULT_ROUTE", "GrowthResult", "LAYOUTS", "ROUTES",
           "RefusedInsertion", "RouteSpec", "SaturationReport", "Suggestion", "TrialResult", "calibration", "certify_insertion",
           "constants", "first_order_check", "grow", "insert_block", "load_grown", "new_parameters", "plot_calibration",
           "predicted_vs_observed", "register_route", "saturation", "trial_insertion"]
assert sorted(__all__) == sorted(_impl.__all__)   # one list of public names, re-exported whole

#: The torch work lives in :mod:`numerics.user_network` (the layer for a user's network); its private modules stay
#: importable here under their old names (``depthcert.api._saturation`` is ``numerics.user_network._saturation``,
#: the same module object, so patching one patches the other).
_MOVED = tuple(m.name for m in _pkgutil.iter_modules(_impl.__path__) if m.name.startswith("_"))
for _name in _MOVED:
    _mod = _importlib.import_module(f"numerics.user_network.{_name}")
    _sys.modules[f"{__name__}.{_name}"] = _mod
    globals()[_name] = _mod
del _name, _mod
