"""``routes.any`` ("some route certifies"): now :mod:`bounds.routes._union`; this name stays importable."""
from bounds.routes._union import ANY_OF, AnyRouteResult, any_route

__all__ = ["ANY_OF", "AnyRouteResult", "any_route"]
