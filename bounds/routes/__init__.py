"""Certificate routes: Paper A's two routes evaluated (THEORY §5-§6), and the one registry of every route.

* Paper A's routes, evaluated and solved (:mod:`bounds.routes._paper`, the former ``bounds/routes.py``):
  :class:`Setup`, :func:`evaluate_routes`, :class:`RouteResult`, :class:`RoutesReport`, :func:`any_route`,
  ``min_M_expression`` / ``min_K_expression`` / ``improvement_expression``; :data:`ROUTES` is still the tuple
  ``("population", "direct")`` of the routes those closed forms solve.
* A route as one object, :class:`Route`, in one registry, :data:`REGISTRY` (:mod:`bounds.routes._route`):
  :func:`register_route` / :func:`unregister_route`; the built-ins are registered here from one module per
  route family: :mod:`bounds.routes.paper` (Theorems 2, 3 and ``population_risk``), :mod:`bounds.routes.tight`
  (THEORY §6 variants, generated from :data:`bounds.variants.VARIANT_SPECS`) and :mod:`bounds.routes.localised`
  (THEORY §6b, from :data:`bounds.localised.LOCALISED_SPECS`). :func:`markdown_table` renders the docs' table.
"""
from __future__ import annotations

from bounds.routes import _paper
from bounds.routes._paper import (ANY_OF, POPULATION_RISK, ROUTES, THEOREMS, AnyRouteResult, RouteResult,  # noqa: F401
                                  RoutesReport, Setup, _REFERENCE, _route, any_route, c_K, c_M, costs, evaluate_routes,
                                  improvement_expression, level_symbol, min_K_expression, min_M_expression)
from bounds.routes._route import (BUILT_IN, EXACT_EVENTS, REGISTRY, Route, RouteView, attach_route, register_route,
                                  route, unregister_route)
from bounds.routes._table import markdown_table
from bounds.routes import localised, paper, tight

__all__ = ["ANY_OF", "AnyRouteResult", "BUILT_IN", "EXACT_EVENTS", "POPULATION_RISK", "REGISTRY", "ROUTES", "Route",
           "RouteResult", "RouteView", "RoutesReport", "Setup", "THEOREMS", "any_route", "attach_route", "c_K", "c_M",
           "costs", "evaluate_routes", "improvement_expression", "level_symbol", "markdown_table", "min_K_expression",
           "min_M_expression", "register_route", "route", "unregister_route"]

for _cls in (Setup, RouteResult, RoutesReport):                 # their home before the package (pickles, docs)
    _cls.__module__ = __name__
for _r in paper.ROUTES + tight.ROUTES + localised.ROUTES:      # the built-ins, in the order every table lists them
    register_route(_r)
    BUILT_IN.append(_r.name)


def __getattr__(name: str):
    if name == "level":   # the symbol, as it was importable before (the functions' argument shadows it)
        return _paper.level_symbol
    if not name.startswith("__") and hasattr(_paper, name):   # every name of the former bounds/routes.py
        return getattr(_paper, name)
    raise AttributeError(f"module 'bounds.routes' has no attribute {name!r}")
