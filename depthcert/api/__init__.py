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
from depthcert.api._attach import load_grown, new_parameters
from depthcert.api._certify import Certificate, certify_insertion
from depthcert.api._constants import Constants, constants
from depthcert.api._growth import GrowthResult, grow
from depthcert.api._insert import insert_block
from depthcert.api._calibration import calibration, plot_calibration
from depthcert.api._first_order import first_order_check
from depthcert.api._predicted import predicted_vs_observed
from numerics.layouts import LAYOUTS
from depthcert.api._report import SaturationReport
from depthcert.api._routes import DEFAULT_ROUTE, ROUTES, RouteSpec, register_route
from depthcert.api._saturation import saturation
from depthcert.api._suggestion import RefusedInsertion, Suggestion
from depthcert.api._trial import trial_insertion
from depthcert.api._trial_result import TrialResult
from depthcert.api._verdict import DEFAULT_EPS

__all__ = ["Certificate", "Constants", "DEFAULT_EPS", "DEFAULT_ROUTE", "GrowthResult", "LAYOUTS", "ROUTES",
           "RefusedInsertion", "RouteSpec", "SaturationReport", "Suggestion", "TrialResult", "calibration", "certify_insertion",
           "constants", "first_order_check", "grow", "insert_block", "load_grown", "new_parameters", "plot_calibration",
           "predicted_vs_observed", "register_route", "saturation", "trial_insertion"]
