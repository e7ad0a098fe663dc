"""This project's THEORY §6b localised certificates (**Choice**) as :class:`~bounds.routes.Route` objects,
generated from one spec, :data:`bounds.localised.LOCALISED_SPECS` (``(chain, uniform, tail)`` per name).

Their certificate-table rows read the network's measured quantities (``kappa``, ``A_norm``, ...), so the API
attaches their ``evaluate`` (:mod:`numerics.user_network._routes`, :func:`~bounds.routes.attach_route`); the validity
study reads their values as themselves and checks ``E_U`` exactly where the record holds its supremum.
"""
from __future__ import annotations

from bounds.localised import LOCALISED, LOCALISED_SPECS
from bounds.routes._route import Route

__all__ = ["ROUTES", "localised_route"]


def localised_route(name: str) -> Route:
    """The :class:`~bounds.routes.Route` of the localised certificate ``name`` (a key of ``LOCALISED_SPECS``)."""
    return Route(name, LOCALISED[name], {}, exact={"E_U": ("E_U", "upper", "U_S")}, prefix=f"{name}/",
                 origin="Choice", group="localised")


#: Every localised route, in :data:`~bounds.localised.LOCALISED_SPECS` order.
ROUTES = tuple(localised_route(n) for n in LOCALISED_SPECS)
