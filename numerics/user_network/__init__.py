"""A user's own network: the torch work behind :mod:`depthcert.api` (any ``nn.Module``, any data).

:mod:`depthcert.api` re-exports every name of ``__all__``; the functions below are documented under those names.

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
from numerics.user_network._attach import load_grown, new_parameters
from numerics.user_network._certify import Certificate, certify_insertion
from numerics.user_network._constants import Constants, constants
from numerics.user_network._growth import GrowthResult, grow
from numerics.user_network._insert import insert_block
from numerics.user_network._calibration import calibration, plot_calibration
from numerics.user_network._first_order import first_order_check
from numerics.user_network._predicted import predicted_vs_observed
from numerics.layouts import LAYOUTS
from numerics.user_network._report import SaturationReport
from numerics.user_network._routes import DEFAULT_ROUTE, ROUTES, RouteSpec, register_route
from numerics.user_network._saturation import saturation
from numerics.user_network._suggestion import RefusedInsertion, Suggestion
from numerics.user_network._trial import trial_insertion
from numerics.user_network._trial_result import TrialResult
from numerics.user_network._verdict import DEFAULT_EPS

__all__ = ["Certificate", "Constants", "DEFAULT_EPS", "DEFAULT_ROUTE", "GrowthResult", "LAYOUTS", "ROUTES",
           "RefusedInsertion", "RouteSpec", "SaturationReport", "Suggestion", "TrialResult", "calibration", "certify_insertion",
           "constants", "first_order_check", "grow", "insert_block", "load_grown", "new_parameters", "plot_calibration",
           "predicted_vs_observed", "register_route", "saturation", "trial_insertion"]
