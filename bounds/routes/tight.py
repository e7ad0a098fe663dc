"""This project's THEORY §6 variants (**Choice**) as :class:`~bounds.routes.Route` objects, generated from one
spec, :data:`bounds.variants.VARIANT_SPECS` (``(route, tail, uniform)`` per name).

In the certificate table every variant is evaluated together (:func:`bounds.variant_routes.evaluate_variants`,
once per table); a variant whose inputs are missing has no row. The validity study checks a population
variant in its estimated-``Delta_R`` form, its ``E_S`` exactly against the one-sided (population) or
two-sided (direct) supremum, and the sign Monte Carlo's event ``E_MC`` of an empirical variant.
"""
from __future__ import annotations

from bounds.routes._route import Route
from bounds.theorems import with_estimated_delta_R
from bounds.variants import VARIANT_SPECS, VARIANTS

__all__ = ["ROUTES", "variant_route"]

_BINDINGS = {"population": {"R_jump": "R_jump_pop", "RS_jump": "R_S_jump_pop", "RS_new": "R_S_new"},
             "direct": {"R_jump": "R_jump_S", "RS_jump": "R_S_jump_S", "RS_new": "R_S_new",
                        "L_test_jump": "L_test_jump_S"}}


def _evaluate(name: str):
    def evaluate(setup, level, inputs, constants, memo):
        from bounds.variant_routes import evaluate_variants

        if "variants" not in memo:
            memo["variants"] = evaluate_variants(setup, level, inputs.variants, any_route=False)
        return memo["variants"].variants.get(name)     # None: its inputs are not given (no row)
    return evaluate


def variant_route(name: str) -> Route:
    """The :class:`~bounds.routes.Route` of the variant ``name`` (a key of :data:`~bounds.variants.VARIANT_SPECS`)."""
    route, _, uniform = VARIANT_SPECS[name]
    T = VARIANTS[name]
    theorem = with_estimated_delta_R(T, name) if route == "population" else T
    threshold = next(e.tail.symbol.name for e in T.events if e.name == "E_S")
    exact = {"E_S": ("E_S", "upper" if route == "population" else "sup", threshold)}
    if uniform == "empirical":
        exact["E_MC"] = ("rad_S", "bracket", "rad_S_estimate")
    return Route(name, theorem, _BINDINGS[route], exact=exact, prefix=f"{name}/", origin="Choice", group="variants",
                 evaluate=_evaluate(name), proofs=(T,))


#: Every variant's route, in :data:`~bounds.variants.VARIANT_SPECS` order.
ROUTES = tuple(variant_route(n) for n in VARIANT_SPECS)
