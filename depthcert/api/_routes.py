"""The route table of ``dc.certify_insertion``: every route of the theorem objects, extensible.

A route is a :class:`RouteSpec`: the constants it needs (``B``, ``L_loss``, ``L_top``) and a
function ``rows(setup, level, inputs, constants)`` that evaluates it from the theorem objects
(:func:`bounds.routes.evaluate_routes`, :func:`bounds.variant_routes.evaluate_variants`,
:func:`bounds.localised_routes.evaluate_localised`) and returns ``[(name, RouteResult)]``; a
row may be ``(name, None, missing)``: not evaluable, with the constants it lacks (the localised
routes: ``kappa``, ``A_norm``, ...). ``inputs`` is a :class:`TableInputs`. :func:`register_route`
adds a route without touching this module. A route whose constants are missing is listed with
``missing`` and ``not evaluable``, never skipped.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from bounds.routes import evaluate_routes
from bounds.variant_routes import VariantInputs
from depthcert.api._localised import LOCALISED_NAMES, localised_rows
from bounds.variants import VARIANT_SPECS
from bounds.variant_routes import evaluate_variants

__all__ = ["DEFAULT_ROUTE", "ROUTES", "RouteSpec", "TableInputs", "evaluate_table", "register_route", "route_names"]

#: The row of the certificate's table that ``certified`` and ``bound`` report when ``route=None``
#: (**Choice**, fixed before any data): ``"direct_route"``, Theorem 3 (it needs no estimate of Delta_R).
DEFAULT_ROUTE = "direct_route"


@dataclasses.dataclass(frozen=True)
class RouteSpec:
    """One entry of the route table :data:`depthcert.ROUTES`.

    Attributes
    ----------
    name : str
        The entry's name (a key of ``ROUTES``).
    needs : tuple of str
        The constants its rows need (``"B"``, ``"L_loss"``, ``"L_top"``).
    rows : callable
        ``rows(setup, level, inputs, constants) -> [(row name, RouteResult)]``; a row may be
        ``(name, None, missing)``: not evaluable, with the constants it lacks.
    names : tuple of str
        The row names it can produce (checked before any work when a route is asked for by name).

    Examples
    --------
        >>> import depthcert as dc
        >>> spec = dc.ROUTES["paper"]                   # the entry whose rows include the default route
        >>> isinstance(spec, dc.RouteSpec), spec.name, dc.DEFAULT_ROUTE in spec.names
        (True, 'paper', True)
    """

    name: str
    needs: tuple
    rows: Callable
    names: tuple = ()


@dataclasses.dataclass(frozen=True)
class TableInputs:
    """What the rows read besides the Setup: the variants' variances, the measured quantities, the loss."""

    variants: VariantInputs
    measured: dict
    loss: object


def _paper(setup, level, inputs, constants):
    rep = evaluate_routes(setup, level)
    return [("population_route", rep.population), ("direct_route", rep.direct)]


def _variants(setup, level, inputs, constants):
    rep = evaluate_variants(setup, level, inputs.variants, any_route=False)
    return sorted(rep.variants.items())


#: The route table of :func:`depthcert.certify_insertion`: ``{entry name: RouteSpec}``; each entry
#: evaluates some rows of the certificate's table (``"paper"``: Theorems 2 and 3; ``"variants"``:
#: this project's THEORY §6 variants; ``"localised"``: the THEORY §6b routes). Extend it with
#: :func:`depthcert.register_route`.
ROUTES: dict[str, RouteSpec] = {
    "paper": RouteSpec("paper", ("B", "L_loss", "L_top"), _paper, ("population_route", "direct_route")),
    "variants": RouteSpec("variants", ("B", "L_loss", "L_top"), _variants, tuple(sorted(VARIANT_SPECS))),
    "localised": RouteSpec("localised", ("B", "L_loss", "L_top"), localised_rows, LOCALISED_NAMES),
}


def route_names() -> set | None:
    """Every row name the table can produce (None when an entry does not declare its names)."""
    if any(not spec.names for spec in ROUTES.values()):
        return None
    return {n for spec in ROUTES.values() for n in spec.names}


def register_route(spec: RouteSpec, *, replace: bool = False) -> None:
    """Add ``spec`` to :data:`depthcert.ROUTES`: its rows appear in every later certificate's table.

    Parameters
    ----------
    spec : RouteSpec
        The new entry (its ``name`` must be new unless ``replace``).
    replace : bool, keyword-only, default False
        Replace an entry of the same name.

    Returns
    -------
    None

    Raises
    ------
    ValueError
        The name is taken and ``replace`` is False.

    Examples
    --------
    >>> import depthcert as dc
    >>> def no_rows(setup, level, inputs, constants):
    ...     return []
    >>> dc.register_route(dc.RouteSpec("mine", (), no_rows, ()))
    >>> "mine" in dc.ROUTES
    True
    >>> dc.register_route(dc.RouteSpec("mine", (), no_rows, ()))
    Traceback (most recent call last):
    ...
    ValueError: route table entry 'mine' exists, must be a new name (or replace=True).
    >>> del dc.ROUTES["mine"]                    # the table as it was
    """
    if spec.name in ROUTES and not replace:
        raise ValueError(f"route table entry {spec.name!r} exists, must be a new name (or replace=True).")
    ROUTES[spec.name] = spec


def _row(name: str, res, missing=()) -> dict:
    if res is None:
        return {"route": name, "certified": False, "bound": None, "improvement": None,
                "failure_probability": None, "missing": list(missing),
                "message": f"not evaluable: missing {', '.join(missing)}"}
    d = res.to_dict()
    return {"route": name, "certified": bool(np.all(res.certified)), "bound": d["bound"],
            "improvement": d["improvement"], "failure_probability": d["failure_probability"],
            "missing": [], "message": d["message"]}


def evaluate_table(setup_fn, level: float, inputs, constants: dict) -> list[dict]:
    """Every route of :data:`ROUTES` as a table row; ``setup_fn()`` builds the Setup (only when needed)."""
    rows = []
    for spec in ROUTES.values():
        missing = [k for k in spec.needs if constants.get(k) is None]
        if missing:
            rows += [_row(n, None, missing) for n in (spec.names or (spec.name,))]
            continue
        rows += [_row(*item) for item in spec.rows(setup_fn(), level, inputs, constants)]
    return rows
