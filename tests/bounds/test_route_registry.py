"""The one route registry (``bounds.routes.REGISTRY``): every former hand list of routes is a live view of it and
shows what it showed before, a malformed route is refused with the field named, and the docs' route table
(docs/glossary.md) is the registry's rendering.

The expected lists below are the hand-written lists the registry replaced (typed once, as they were), so a
registry that drifted from them fails here.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from bounds import ALL_THEOREMS, THEOREM_2, THEOREM_2_ESTIMATED, THEOREM_3, THEOREM_POPULATION_RISK
from bounds.localised import LOCALISED, LOCALISED_SPECS, LOCALISED_THEOREMS
from bounds.routes import BUILT_IN, REGISTRY, Route, markdown_table, register_route, unregister_route
from bounds.routes._table import BEGIN, END
from bounds.variants import VARIANT_SPECS, VARIANT_THEOREMS, VARIANTS

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "glossary.md"


def docs_table(text: str) -> str:
    """The generated table of a page (between :data:`BEGIN` and :data:`END`)."""
    m = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert m, "the page has no generated route table"
    return m.group(1)


def test_the_docs_route_table_is_the_registrys_and_a_stale_one_is_caught():
    assert docs_table(GLOSSARY.read_text()) == markdown_table()
    stale = GLOSSARY.read_text().replace("| `direct` | `direct_route` |", "| `direct` | `direct_rout` |")
    assert docs_table(stale) != markdown_table()
    lines = markdown_table().splitlines()
    assert len(lines) == 2 + len(REGISTRY) == 2 + 3 + len(VARIANT_SPECS) + len(LOCALISED_SPECS)


def test_every_former_hand_list_is_a_view_of_the_registry_with_its_former_content():
    from bounds.route_roles import route_theorem
    from bounds.routes import ANY_OF
    from bounds.variant_routes import PAPER_ROUTES
    from numerics.studies.run._terms_table import _PAPER
    from numerics.studies.validity._routes import (LOCALISED_ROUTE_SPECS, PAPER_ROUTE_SPECS, ROUTE_SPECS, RouteSpec,
                                                   VARIANT_ROUTE_SPECS)
    from proofs_check._prove import DEFAULT_THEOREMS

    assert dict(ANY_OF) == {"population": THEOREM_2_ESTIMATED, "direct": THEOREM_3}
    assert dict(PAPER_ROUTES) == {"population_route": ("population", THEOREM_2), "direct_route": ("direct", THEOREM_3)}
    assert dict(_PAPER) == {"population": "population_route", "direct": "direct_route"}
    assert tuple(DEFAULT_THEOREMS) == ALL_THEOREMS + VARIANT_THEOREMS + LOCALISED_THEOREMS
    assert RouteSpec is Route
    assert [s.name for s in PAPER_ROUTE_SPECS] == ["population", "direct", "population_risk"]
    assert [s.theorem for s in PAPER_ROUTE_SPECS] == [THEOREM_2_ESTIMATED, THEOREM_3, THEOREM_POPULATION_RISK]
    assert [s.name for s in VARIANT_ROUTE_SPECS] == list(VARIANT_SPECS)
    assert [s.theorem for s in LOCALISED_ROUTE_SPECS] == list(LOCALISED.values())
    assert list(ROUTE_SPECS) == list(PAPER_ROUTE_SPECS) + list(VARIANT_ROUTE_SPECS) + list(LOCALISED_ROUTE_SPECS)
    assert route_theorem("population_route") is THEOREM_2 and route_theorem("direct") is THEOREM_3
    assert route_theorem("population_risk") is THEOREM_POPULATION_RISK and route_theorem("unknown") is None
    assert all(route_theorem(n) is VARIANTS[n] for n in VARIANT_SPECS)
    assert [r.row_name for r in REGISTRY.values() if r.default] == ["population_route", "direct_route"]
    assert BUILT_IN == list(REGISTRY)


def test_the_api_table_lists_what_it_listed():
    import depthcert as dc
    from depthcert.api._routes import route_names

    assert list(dc.ROUTES) == ["paper", "variants", "localised"]
    assert dc.ROUTES["paper"].names == ("population_route", "direct_route")
    assert dc.ROUTES["variants"].names == tuple(sorted(VARIANT_SPECS))
    assert dc.ROUTES["localised"].names == tuple(LOCALISED_SPECS)
    assert all(s.needs == ("B", "L_loss", "L_top") for s in dc.ROUTES.values())
    assert route_names() == {"population_route", "direct_route", *VARIANT_SPECS, *LOCALISED_SPECS}
    with pytest.raises(ValueError, match="is the registry's"):
        dc.ROUTES["paper"] = dc.ROUTES["paper"]
    with pytest.raises(KeyError, match="registry's entries stay"):
        del dc.ROUTES["variants"]


def test_a_malformed_route_is_refused_with_the_field_named():
    base = REGISTRY["direct"]
    new = dataclasses.replace(base, name="mine", row="mine", group=None, default=False)
    with pytest.raises(TypeError, match="theorem"):
        Route("mine")                                                         # a missing field
    with pytest.raises(ValueError, match="route.theorem is a NoneType"):
        register_route(dataclasses.replace(new, theorem=None))
    with pytest.raises(ValueError, match="route.kind == 'risk'"):
        register_route(dataclasses.replace(new, kind="risk"))
    with pytest.raises(ValueError, match="route.name == 'not a name'"):
        register_route(dataclasses.replace(new, name="not a name"))
    with pytest.raises(ValueError, match="route.row == 'direct_route'"):
        register_route(dataclasses.replace(new, name="direct_2", row="direct_route"))   # a row another route has
    with pytest.raises(ValueError, match="route.name == 'direct'"):
        register_route(base, replace=True)                                   # a built-in is never replaced
    with pytest.raises(ValueError, match="route is a dict"):
        register_route({"name": "mine"})
    with pytest.raises(ValueError, match="must be a registered route other than the built-ins"):
        unregister_route("direct")
    assert "mine" not in REGISTRY


def test_the_live_views_copy_and_merge_as_the_list_and_dict_they_show_and_stay_live():
    """``copy()`` is a snapshot (a later registration does not reach it), ``|`` merges as a dict does, and the
    view itself stays live: the registration shows in it and not in the copies."""
    from bounds.routes import ANY_OF
    from bounds.routes._route import RouteView

    view = RouteView(lambda r: r.group == "paper")
    lst, dct = view.copy(), ANY_OF.copy()
    assert type(lst) is list and lst == list(view) and type(dct) is dict and dct == dict(ANY_OF)
    assert (ANY_OF | {"x": 1}) == {**dict(ANY_OF), "x": 1} and ({"population": 0} | ANY_OF)["population"] is THEOREM_2_ESTIMATED
    assert ANY_OF == dict(ANY_OF) and ANY_OF != {**dict(ANY_OF), "x": 1}
    extra = dataclasses.replace(REGISTRY["direct"], name="direct_copy_test", row="direct_copy_test_route", group="paper", default=False)
    register_route(extra)
    try:
        assert "direct_copy_test" in ANY_OF and "direct_copy_test" not in dct
        assert [r.name for r in view if r.name == "direct_copy_test"] == ["direct_copy_test"] and extra not in lst
    finally:
        unregister_route("direct_copy_test")
    assert "direct_copy_test" not in ANY_OF
