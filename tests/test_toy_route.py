"""Adding a certificate route is one module (``tests/_toy_route.py``) and one registration call, and it then
reaches every route list: the API's table (``dc.ROUTES``, a certificate's rows), the validity study, ``prove``,
the union (``ANY_OF``) and the docs' route table; unregistering restores each.

``direct_loose`` is Theorem 3 plus ``eps_K`` (docstring of ``tests/_toy_route.py``), so what each list must show is
known without its code: its row is the direct route's bound plus ``eps_K`` (``bounds.routes.costs``), ``prove``
verifies it, the validity study never sees it violated. Its wrong twin ``direct_overclaim`` (Theorem 3 without its
costs) is caught twice: ``prove`` rejects it (the toy's mutant), the validity study sees its conclusion violated
far above its stated failure probability on the toy world (``tests/bounds/_toy_world.py``).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from bounds.routes import REGISTRY, Setup, costs, markdown_table, register_route, unregister_route
from tests._toy_route import DIRECT_LOOSE, DIRECT_OVERCLAIM, LOOSE, NAME, OVERCLAIM


def _lists() -> dict:
    """Every route list a registered route must reach (names only)."""
    import depthcert as dc
    from bounds.routes import ANY_OF
    from depthcert.api._routes import route_names
    from numerics.studies.validity._routes import ROUTE_SPECS
    from proofs_check import MUTANTS
    from proofs_check._prove import DEFAULT_THEOREMS

    return {"registry": list(REGISTRY), "api": list(dc.ROUTES), "rows": sorted(route_names()),
            "validity": [s.name for s in ROUTE_SPECS], "prove": [t.name for t in DEFAULT_THEOREMS],
            "mutants": [m.name for m in MUTANTS], "union": list(ANY_OF), "docs": markdown_table()}


@pytest.fixture
def toy():
    """The one registration call (and its removal: every list as it was)."""
    before = _lists()
    register_route(DIRECT_LOOSE)
    yield REGISTRY[NAME]
    unregister_route(NAME)
    assert _lists() == before


def _setup(**kw) -> Setup:
    base = dict(L_test_old=np.array([0.62, 0.9]), delta_R=0.09, delta_erm=0.004, delta_test_R=0.085, M=2e5, K=1e5,
                delta=0.05, delta_prime=0.05, B=4.2, L_loss=2**0.5, family="readout",
                block=dict(d=8, L_top=2.5, rho_phi=3.0, nu_V=0.4))
    return Setup(**{**base, **kw})


def test_the_toy_route_reaches_every_list(toy):
    lists = _lists()
    assert NAME in lists["registry"] and NAME in lists["api"] and NAME in lists["rows"]
    assert NAME in lists["validity"] and LOOSE.name in lists["prove"] and NAME in lists["union"]
    assert "toy_direct_overclaim" in lists["mutants"]
    assert f"| `{NAME}` | `{NAME}` | {NAME} | **Choice** | a toy: Theorem 3 plus eps_K" in lists["docs"]


def test_its_row_in_the_api_table_is_the_direct_bound_plus_eps_K(toy):
    import depthcert as dc
    from bounds.variant_routes import VariantInputs
    from depthcert.api._routes import TableInputs

    st = _setup(M=1e7, K=1e7, delta_test_R=np.array([0.085, 0.05]))
    inputs, c = TableInputs(VariantInputs(), {}, "cross_entropy"), {"B": 4.2, "L_loss": 2**0.5, "L_top": 2.5}
    entry = dc.ROUTES[NAME]                                        # its own entry of the API's table
    assert entry.names == (NAME,) and entry.needs == ("B", "L_loss", "L_top")
    (name, mine), = entry.rows(st, 0.1, inputs, c)
    (_, pop), (_, direct) = dc.ROUTES["paper"].rows(st, 0.1, inputs, c)
    eps_K = costs(st)[1]
    assert name == NAME and mine.route == NAME
    np.testing.assert_allclose(mine.bound, direct.bound + eps_K, rtol=1e-12)
    np.testing.assert_allclose(mine.improvement, st.L_test_old - mine.bound, rtol=1e-12)
    # vectorised over delta_test_R: the direct route certifies both, the looser toy the larger margin only
    assert direct.certified.tolist() == [True, True] and mine.certified.tolist() == [True, False]


def test_a_certificate_reports_it_and_its_default_table_shows_the_route_fixed_before_the_data(toy):
    import torch
    from torch import nn

    import depthcert as dc

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()

    def draw(n, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n, 3, generator=g, dtype=torch.float64)
        return x, (x[:, 0] > 0).long()

    cert = dc.certify_insertion(net, "1", signal=draw(600, 1), S=draw(400, 2), T=draw(400, 3), B=5.0, L_top=5.0,
                                erm_steps=2, route=NAME)
    rows = {r["route"]: r for r in cert.rows}
    assert cert.route == NAME and cert.bound == rows[NAME]["bound"] and len(cert.table()) == len(cert.rows)
    assert list(cert.table(routes="default")["route"]) == ["population_route", "direct_route", NAME]
    text = str(cert)
    assert all(n in text for n in ("population_route", "direct_route", NAME)) and "direct_tight" not in text
    assert f"and {len(cert.rows) - 3} more routes" in text
    with pytest.raises(ValueError, match="routes == 'some'"):
        cert.table(routes="some")


def test_prove_verifies_it_and_rejects_its_wrong_twin(toy):
    from proofs_check import MUTANTS, verify, verify_all
    from proofs_check._prove import DEFAULT_THEOREMS

    mine = [T for T in DEFAULT_THEOREMS if T.name == LOOSE.name]
    assert verify_all(mine, mutants=False, side_algebra=False).ok
    mutant = next(m for m in MUTANTS if m.name == "toy_direct_overclaim")
    assert mutant.build() is OVERCLAIM and not verify(mutant.build(), necessity=False).ok


def test_the_union_pays_for_its_events_without_being_told(toy):
    from bounds.routes import any_route, evaluate_routes

    st = _setup(eps_M=0.01, eps_K=0.02)
    rep = evaluate_routes(st, level=0.2)
    v = {**st.values(), "eps_M": rep.eps_M, "eps_K": rep.eps_K, "level": np.float64(0.2)}
    a = any_route({"direct": rep.direct, NAME: rep.direct}, v, 0.2)    # its events read from the registry's ANY_OF
    assert a.events == ("E_T", "E_S") and float(np.max(a.failure_probability)) == pytest.approx(0.1)
    with pytest.raises(KeyError):
        any_route({"not_registered": rep.direct}, v, 0.2)


def test_the_validity_study_checks_it_and_catches_the_wrong_twin(toy):
    from numerics.studies.validity import summarize
    from tests.numerics.studies._toy_records import toy_records

    records = toy_records(60)
    for r in records:
        direct, v = r["routes"]["direct"], r["values"]
        r["routes"][NAME] = {**copy.deepcopy(direct), "bound": direct["bound"] + v["eps_K"]}
        r["routes"]["direct_overclaim"] = {**copy.deepcopy(direct), "bound": direct["bound"] - 2 * (v["eps_M"] + v["eps_K"])}
    register_route(DIRECT_OVERCLAIM)
    try:
        s = summarize(records, 0.05)
    finally:
        unregister_route("direct_overclaim")
    assert s["routes"][NAME]["violations"] == 0 and s["routes"]["direct"]["violations"] == 0
    bad = s["routes"]["direct_overclaim"]
    assert bad["violations"] > 0.1 * 60 and bad["significant"], bad           # stated 0.1, far exceeded
