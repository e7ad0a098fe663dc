"""A certificate route as one object, :class:`Route`, and the one registry of routes, :data:`REGISTRY`.

A route is a theorem object (its bound, its failure events, its proof chain) plus what the layers
around it need to read it: the constants it needs, how the validity study binds its symbols to
measured values, the theorem whose events it pays for in "some route certifies", its row in the
certificate table and its vectorised evaluation there, its plot label, and whether the default
certificate table shows it. Every list of routes reads this registry: the API's route table
(``depthcert.ROUTES``), the validity study's ``ROUTE_SPECS``, ``depthcert prove``'s theorems and
mutants, the union's ``ANY_OF``, the run report's paper rows, the plot labels and the docs' route
table (:func:`bounds.routes.markdown_table`). A new route is one module building one :class:`Route`
and one :func:`register_route` call (docs/CONTRIBUTING.md, "Add a route").

Torch-free: a part that needs the layers above (the API's localised rows read the network's
measured quantities) is attached by that layer (:func:`attach_route`), as families' torch parts are.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator, Mapping, Sequence

from bounds._statement import Theorem

__all__ = ["BUILT_IN", "EXACT_EVENTS", "REGISTRY", "LiveMapping", "Route", "RouteView", "attach_route", "paper_rows", "register_route", "route",
           "union_theorems", "unregister_route"]

#: event -> (the record's deviation entry, side, the threshold symbol): exact checks over the class (validity study).
EXACT_EVENTS: Mapping[str, tuple[str, str, str]] = {"E_S": ("E_S", "sup", "eps_M"), "E_T": ("E_T", "sup", "eps_K")}
#: The constants every route of this project needs (a route without them is listed, not evaluable).
CONSTANTS = ("B", "L_loss", "L_top")
_KINDS = ("test", "population")


@dataclasses.dataclass(frozen=True)
class Route:
    """One certificate route (docstring of ``bounds.routes._route``).

    The first seven fields are those of the validity study's former ``RouteSpec`` (positional order kept:
    ``numerics.studies.validity._routes.RouteSpec`` is this class).

    Attributes:
        name: its key in the run and validity records (``record["routes"][name]``) and in the registry.
        theorem: the statement the validity study checks (conclusion, premises, failure events).
        binding: symbol name -> measured value name of the validity records, beyond the symbols read as themselves.
        kind: ``"test"`` (a bound on ``L_test(f_new)``) or ``"population"`` (a bound on ``R(f_new)``).
        exact: event -> ``(deviation entry, side, threshold symbol)`` checked exactly by the validity study.
        prefix: the prefix of its event names in ``validity.json`` (variants: ``"<name>/"``).
        origin: ``"paper"`` or ``"Choice"``.
        row: its row name in the certificate table (default: ``name``).
        group: its entry of the API's route table (``"paper"``, ``"variants"``, ``"localised"``; default: ``name``).
        needs: the constants its row needs (``B``, ``L_loss``, ``L_top``, ...).
        evaluate: ``evaluate(setup, level, inputs, constants, memo)`` -> a ``RouteResult`` (vectorised over the
            setup's arrays), a list of what is missing (not evaluable), or None (no row); ``memo`` is a dict shared
            by one table's evaluation (routes evaluated together compute once). None: no row in the certificate table.
        union: the theorem whose events it pays for in "some route certifies" (``ANY_OF``); None: not in that union.
        proofs: the statements ``depthcert prove`` verifies for it (default: ``(theorem,)``).
        mutants: ``(name, description, target, build)`` wrong versions ``depthcert prove`` must reject.
        label: its plot label (default: ``name``).
        default: shown in the default certificate table (the paper's two routes; the route fixed before the
            data is added by the table itself).
        validity: checked by the validity study (``ROUTE_SPECS``).
    """

    name: str
    theorem: Theorem
    binding: Mapping[str, str] = dataclasses.field(default_factory=dict)
    kind: str = "test"
    exact: Mapping[str, tuple[str, str, str]] = dataclasses.field(default_factory=lambda: dict(EXACT_EVENTS))
    prefix: str = ""
    origin: str = "paper"
    row: str | None = None
    group: str | None = None
    needs: tuple[str, ...] = CONSTANTS
    evaluate: Callable | None = None
    union: Theorem | None = None
    proofs: tuple[Theorem, ...] | None = None
    mutants: tuple[tuple[str, str, str, Callable], ...] = ()
    label: str | None = None
    default: bool = False
    validity: bool = True

    @property
    def row_name(self) -> str:
        """Its row name in the certificate table (``row``, else ``name``)."""
        return self.row or self.name

    @property
    def table_group(self) -> str:
        """Its entry of the API's route table (``group``, else ``name``)."""
        return self.group or self.name

    @property
    def proof_chain(self) -> tuple[Theorem, ...]:
        """The statements ``depthcert prove`` verifies for it."""
        return tuple(self.proofs) if self.proofs is not None else (self.theorem,)

    @property
    def plot_label(self) -> str:
        """Its label in plots and tables."""
        return self.label or self.name

    @property
    def events(self) -> tuple[str, ...]:
        """Its failure events (the distinct events its premises use)."""
        return tuple(dict.fromkeys(p.event for p in self.theorem.premises if p.event is not None))

    @property
    def inputs(self) -> tuple[str, ...]:
        """The symbols its bound and failure probability read (sorted)."""
        syms = self.theorem.bound.free_symbols | self.theorem.failure_probability.free_symbols
        return tuple(sorted(x.name for x in syms))


#: Every route, by name, in registration order: the one registry (:func:`register_route` adds one).
REGISTRY: dict[str, Route] = {}
#: The routes shipped with the toolkit (filled when :mod:`bounds.routes` registers them; never unregistered).
BUILT_IN: list[str] = []


def _check(r: Route) -> None:
    if not isinstance(r, Route):
        raise ValueError(f"route is a {type(r).__name__}, must be a bounds.routes.Route.")
    if not isinstance(r.name, str) or not r.name.isidentifier():
        raise ValueError(f"route.name == {r.name!r}, must be an identifier.")
    if not isinstance(r.theorem, Theorem):
        raise ValueError(f"route.theorem is a {type(r.theorem).__name__}, must be a bounds.Theorem "
                         f"(route {r.name!r}).")
    if r.kind not in _KINDS:
        raise ValueError(f"route.kind == {r.kind!r}, must be one of {list(_KINDS)} (route {r.name!r}).")
    if r.union is not None and not isinstance(r.union, Theorem):
        raise ValueError(f"route.union is a {type(r.union).__name__}, must be a bounds.Theorem or None (route {r.name!r}).")
    if r.evaluate is not None and not callable(r.evaluate):
        raise ValueError(f"route.evaluate == {r.evaluate!r}, must be callable or None (route {r.name!r}).")
    rows = {o.row_name for o in REGISTRY.values() if o.name != r.name}
    if r.row_name in rows:
        raise ValueError(f"route.row == {r.row_name!r}, must be a row name not in {sorted(rows)} (route {r.name!r}).")


def register_route(r: Route, *, replace: bool = False) -> Route:
    """Add ``r`` to :data:`REGISTRY` (the one registration call of a new route); every route list sees it.

    Raises:
        ValueError: not a :class:`Route`, a malformed field (named), a name taken (unless ``replace``; never a
            built-in) or a row name another route has.
    """
    _check(r)
    if r.name in REGISTRY and (not replace or r.name in BUILT_IN):
        raise ValueError(f"route.name == {r.name!r}, must be a name not in {list(REGISTRY)} (a registered one "
                         f"other than the built-ins: with replace=True).")
    REGISTRY[r.name] = r
    return r


def unregister_route(name: str) -> None:
    """Remove a registered route (a test's or a plugin's).

    Raises:
        ValueError: a built-in route or an unknown name.
    """
    if name in BUILT_IN or name not in REGISTRY:
        raise ValueError(f"name == {name!r}, must be a registered route other than the built-ins.")
    del REGISTRY[name]


def attach_route(name: str, **parts: Any) -> Route:
    """Set a registered route's ``evaluate`` (how the layers above attach what needs them, e.g. the API's rows).

    Raises:
        ValueError: an unknown route or a part other than ``evaluate``.
    """
    if name not in REGISTRY or not set(parts) <= {"evaluate"}:
        raise ValueError(f"(name, parts) == {(name, sorted(parts))!r}, must be a registered route and evaluate.")
    REGISTRY[name] = dataclasses.replace(REGISTRY[name], **parts)
    return REGISTRY[name]


def route(name: str) -> Route:
    """The route called ``name`` (its registry name or its row name).

    Raises:
        KeyError: no such route (the message lists the registered ones).
    """
    if name in REGISTRY:
        return REGISTRY[name]
    for r in REGISTRY.values():
        if r.row_name == name:
            return r
    raise KeyError(f"route == {name!r}, must be one of {list(REGISTRY)} or their rows.")


class RouteView(Sequence):
    """A live, read-only list of the registered routes that pass ``keep`` (equal to the list it shows).

    Example:
        >>> paper = RouteView(lambda r: r.group == "paper")
        >>> [r.name for r in paper][:2]
        ['population', 'direct']
    """

    def __init__(self, keep: Callable[[Route], bool] = lambda r: True):
        self._keep = keep

    def _items(self) -> list:
        return [r for r in REGISTRY.values() if self._keep(r)]

    def __getitem__(self, i):
        return self._items()[i]

    def __len__(self) -> int:
        return len(self._items())

    def __iter__(self) -> Iterator[Route]:
        return iter(self._items())

    def __eq__(self, other) -> bool:
        return self._items() == (list(other) if isinstance(other, (list, tuple, RouteView)) else other)

    __hash__ = None

    def __add__(self, other) -> list:
        return self._items() + list(other)

    def __radd__(self, other) -> list:
        return list(other) + self._items()

    def copy(self) -> list:
        """A plain list of the routes shown now (no longer live)."""
        return self._items()

    def __repr__(self) -> str:
        return f"RouteView({[r.name for r in self._items()]})"


class LiveMapping(Mapping):
    """A live, read-only mapping computed from the registry at each access by ``items()`` (equal to the dict it shows).

    Example:
        >>> rows = LiveMapping(lambda: {r.row_name: r.name for r in REGISTRY.values() if r.default})
        >>> dict(rows)
        {'population_route': 'population', 'direct_route': 'direct'}
    """

    def __init__(self, items: Callable[[], dict]):
        self._fn = items

    def __getitem__(self, key):
        return self._fn()[key]

    def __iter__(self) -> Iterator:
        return iter(self._fn())

    def __len__(self) -> int:
        return len(self._fn())

    def __repr__(self) -> str:
        return repr(self._fn())

    def copy(self) -> dict:
        """A plain dict of what the mapping shows now (no longer live)."""
        return dict(self._fn())

    def __or__(self, other) -> dict:
        return {**self._fn(), **dict(other)} if isinstance(other, Mapping) else NotImplemented

    def __ror__(self, other) -> dict:
        return {**dict(other), **self._fn()} if isinstance(other, Mapping) else NotImplemented


def union_theorems() -> dict:
    """``{route name: the theorem whose events it pays for}`` of the registered routes in "some route certifies"."""
    return {r.name: r.union for r in REGISTRY.values() if r.union is not None}


def paper_rows() -> dict:
    """``{row name: (route name, statement)}`` of Paper A's test-risk routes (``population_route``, ``direct_route``)."""
    return {r.row_name: (r.name, r.proof_chain[0]) for r in REGISTRY.values() if r.group == "paper" and r.kind == "test"}
