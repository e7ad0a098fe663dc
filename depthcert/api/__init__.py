"""depthcert on your own network: the public API for any ``nn.Module`` and any data.

* :func:`saturation` -- scan every site: ``"improvable"``, ``"saturated"`` (within ``eps``) or
  ``"undetermined"`` (THEORY §8), in each site's state layout (THEORY §10);
* :func:`insert_block` -- a copy of the model with one block inserted (``init="zero"``:
  function-preserving; ``"jumpboard"``: Theorem 1's step from a scan);
* :func:`grow` -- scan, insert, train, until saturated within ``eps``;
* :func:`certify_insertion` -- Paper A's certificate at a site, from samples by role
  (signal, ``S``, ``T``), every route of the extensible table :data:`ROUTES` evaluated.

Data: a ``DataLoader``, a ``Dataset``, a tuple ``(x, y)`` of tensors or numpy arrays, or any
re-iterable of ``(x, y)`` batches, streamed on the model's device and dtype.
"""
from depthcert.api._certify import Certificate, certify_insertion
from depthcert.api._growth import GrowthResult, grow
from depthcert.api._insert import insert_block
from numerics.layouts import LAYOUTS
from depthcert.api._report import SaturationReport
from depthcert.api._routes import DEFAULT_ROUTE, ROUTES, RouteSpec, register_route
from depthcert.api._saturation import saturation
from depthcert.api._verdict import DEFAULT_EPS

__all__ = ["Certificate", "DEFAULT_EPS", "DEFAULT_ROUTE", "GrowthResult", "LAYOUTS", "ROUTES", "RouteSpec", "SaturationReport",
           "certify_insertion", "grow", "insert_block", "register_route", "saturation"]
