"""The route table of ``dc.certify_insertion``: every route of the registry :data:`bounds.routes.REGISTRY`, extensible.

The table is a live view of the route registry: one entry per route group (``"paper"``: Theorems 2 and 3;
``"variants"``: this project's THEORY §6 variants; ``"localised"``: the THEORY §6b routes; a registered route
of its own group: its name), each a :class:`RouteSpec` whose ``rows(setup, level, inputs, constants)``
evaluates its routes (:attr:`bounds.routes.Route.evaluate`, vectorised, from the theorem objects) and returns
``[(name, RouteResult)]``; a row may be ``(name, None, missing)``: not evaluable, with the constants it lacks
(the localised routes: ``kappa``, ``A_norm``, ...). ``inputs`` is a :class:`TableInputs`.
:func:`register_route` adds a :class:`bounds.routes.Route` to the registry (it then reaches every route list:
validity, ``prove``, the union, the docs' table) or, as before, a :class:`RouteSpec` to this table only. A route
whose constants are missing is listed with ``missing`` and ``not evaluable``, never skipped. The localised
routes' rows read the measured quantities, so this module attaches their evaluation to the registry
(:func:`bounds.routes.attach_route`).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Mapping, MutableMapping

import numpy as np

from bounds.routes import REGISTRY, Route, attach_route
from bounds.routes import register_route as _register
from bounds.variant_routes import VariantInputs
from numerics.user_network._localised import LOCALISED_NAMES, localised_row

__all__ = ["DEFAULT_ROUTE", "ROUTES", "RouteSpec", "RouteTable", "TableInputs", "evaluate_table", "register_route", "route_names",
           "default_text", "select_rows"]

#: The row of the certificate's table that ``certified`` and ``bound`` report when ``route=None``
#: (**Choice**, fixed before any data): ``"direct_route"``, Theorem 3 (it needs no estimate of Delta_R).
DEFAULT_ROUTE = "direct_route"


@dataclasses.dataclass(frozen=True)
class RouteSpec:
    """One entry of the route table :data:`depthcert.ROUTES`: a group of rows (a route itself is a
    :class:`bounds.routes.Route`; the registry's groups are entries built from it).

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


for _name in LOCALISED_NAMES:          # the localised rows read the measured quantities: attached here
    attach_route(_name, evaluate=localised_row(_name))
#: Groups whose rows are listed by name (as the table always listed the variants).
_BY_NAME = ("variants",)


def _group(group: str) -> list[Route]:
    routes = [r for r in REGISTRY.values() if r.table_group == group and r.evaluate is not None and r.kind == "test"]
    return sorted(routes, key=lambda r: r.row_name) if group in _BY_NAME else routes


_GROUP_ROWS: dict[str, Callable] = {}


def _group_rows(group: str) -> Callable:
    """The one rows function of ``group`` (made once, so ``dc.ROUTES == dc.ROUTES`` as with the old dict)."""
    if group not in _GROUP_ROWS:
        _GROUP_ROWS[group] = _make_group_rows(group)
    return _GROUP_ROWS[group]


def _make_group_rows(group: str) -> Callable:
    def rows(setup, level, inputs, constants):
        memo, out = {}, []
        for r in _group(group):
            res = r.evaluate(setup, level, inputs, constants, memo)
            if isinstance(res, list):
                out.append((r.row_name, None, res))
            elif res is not None:
                out.append((r.row_name, res))
        return out
    rows.__doc__ = f"The rows of the registry's {group!r} routes (:attr:`bounds.routes.Route.evaluate`)."
    return rows


class RouteTable(MutableMapping):
    """The route table :data:`depthcert.ROUTES`: ``{entry name: RouteSpec}``, a live view of the route registry
    (one entry per group of registered routes with a certificate row) followed by the :class:`RouteSpec` entries
    registered with :func:`register_route` (which may be removed again: ``del`` / ``pop``)."""

    def __init__(self):
        self._extra: dict[str, RouteSpec] = {}

    def _groups(self) -> dict[str, RouteSpec]:
        out = {}
        for g in dict.fromkeys(r.table_group for r in REGISTRY.values() if r.evaluate is not None and r.kind == "test"):
            routes = _group(g)
            needs = tuple(dict.fromkeys(c for r in routes for c in r.needs))
            out[g] = RouteSpec(g, needs, _group_rows(g), tuple(r.row_name for r in routes))
        return out

    def __getitem__(self, name: str) -> RouteSpec:
        return {**self._groups(), **self._extra}[name]

    def __setitem__(self, name: str, spec: RouteSpec) -> None:
        if name in self._groups():
            raise ValueError(f"route table entry {name!r} is the registry's, must be a new name.")
        self._extra[name] = spec

    def __delitem__(self, name: str) -> None:
        if name not in self._extra:
            raise KeyError(f"{name!r}: not an entry added with register_route (the registry's entries stay).")
        del self._extra[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._groups(), **self._extra})

    def __len__(self) -> int:
        return len({**self._groups(), **self._extra})

    def __repr__(self) -> str:
        return repr(dict(self))

    def copy(self) -> dict:
        """A plain dict of the entries shown now (no longer live)."""
        return dict(self)

    def __or__(self, other) -> dict:
        return {**dict(self), **dict(other)} if isinstance(other, Mapping) else NotImplemented

    def __ror__(self, other) -> dict:
        return {**dict(other), **dict(self)} if isinstance(other, Mapping) else NotImplemented


#: The route table of :func:`depthcert.certify_insertion`: ``{entry name: RouteSpec}``; each entry
#: evaluates some rows of the certificate's table (``"paper"``: Theorems 2 and 3; ``"variants"``:
#: this project's THEORY §6 variants; ``"localised"``: the THEORY §6b routes; then every group of routes
#: registered in :data:`bounds.routes.REGISTRY`). Extend it with :func:`depthcert.register_route`.
ROUTES: RouteTable = RouteTable()


def route_names() -> set | None:
    """Every row name the table can produce (None when an entry does not declare its names)."""
    if any(not spec.names for spec in ROUTES.values()):
        return None
    return {n for spec in ROUTES.values() for n in spec.names}


def register_route(spec: RouteSpec | Route, *, replace: bool = False) -> None:
    """Add ``spec`` to :data:`depthcert.ROUTES`: its rows appear in every later certificate's table.

    A :class:`bounds.routes.Route` is registered in the one route registry (:func:`bounds.routes.register_route`):
    it then reaches every route list (this table, validity, ``depthcert prove``, the union, the docs' table).
    A :class:`RouteSpec` reaches this table only (as before).

    Parameters
    ----------
    spec : RouteSpec or bounds.routes.Route
        The new entry (its ``name`` must be new unless ``replace``).
    replace : bool, keyword-only, default False
        Replace an entry of the same name that was itself added by ``register_route`` (the registry's own
        entries, one per group of built-in routes, are never replaced).

    Returns
    -------
    None

    Raises
    ------
    ValueError
        The name is taken and ``replace`` is False, or it names one of the registry's own entries.

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
    if isinstance(spec, Route):
        _register(spec, replace=replace)
        return
    if spec.name in ROUTES and not replace:
        raise ValueError(f"route table entry {spec.name!r} exists, must be a new name (or replace=True).")
    ROUTES[spec.name] = spec


def select_rows(rows: list, routes, chosen: str | None = None) -> list:
    """The rows of a certificate's table that ``routes`` asks for.

    ``None`` or ``"all"``: every row; ``"default"``: the registry's default routes (:attr:`bounds.routes.Route.default`:
    the paper's two) and ``chosen``, the route fixed before the data, in table order; a list of row names: those.

    Raises:
        ValueError: another value, or a name that is no row (the rows are listed).

    Example:
        >>> rows = [{"route": n} for n in ("population_route", "direct_route", "direct_tight_bernstein", "x")]
        >>> [r["route"] for r in select_rows(rows, "default", chosen="x")]
        ['population_route', 'direct_route', 'x']
    """
    names = [r["route"] for r in rows]
    if routes is None or (isinstance(routes, str) and routes == "all"):
        return list(rows)
    if isinstance(routes, str) and routes == "default":
        keep = {r.row_name for r in REGISTRY.values() if r.default} | ({chosen} if chosen else set())
    elif isinstance(routes, (list, tuple)) and all(isinstance(n, str) and n in names for n in routes):
        keep = set(routes)
    else:
        raise ValueError(f"routes == {routes!r}, must be None, 'all', 'default' or a list of rows of {names}.")
    return [r for r in rows if r["route"] in keep]


def default_text(cert) -> str:
    """``str(cert)``: the default certificate table (the paper's two routes and the route fixed before the data),
    then how many more rows ``cert.table(routes="all")`` holds."""
    shown = cert.table(routes="default")
    cols = [c for c in ("route", "certified", "bound", "failure_probability", "missing") if c in shown.columns]
    head = f"{'certified' if cert.certified else 'not certified'} by {cert.route} (bound {cert.bound})"
    more = len(cert.rows) - len(shown)
    return "\n".join([head, shown[cols].to_string(index=False)] +
                      ([f"... and {more} more routes: cert.table(routes='all')"] if more else []))


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
