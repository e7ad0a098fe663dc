"""``dc.certify_insertion``: roles checked disjoint, every route of the table, missing constants named."""
import pytest
import torch

import depthcert as dc

SMALL = dict(erm_steps=2, batch_size=200)



def test_every_route_is_evaluated_and_the_default_is_stated(roles):
    net, sig, S, T = roles
    before = {k: v.clone() for k, v in net.state_dict().items()}
    cert = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, **SMALL)
    tab = cert.table()
    assert {"population_route", "direct_route", "direct_tight_bernstein"} <= set(tab["route"])
    assert cert.route == "direct_route" and "the default, fixed before the data" in cert.notes[0]
    direct = tab[tab["route"] == "direct_route"].iloc[0]
    assert cert.bound == direct["bound"] and cert.certified == bool(direct["certified"])
    # the bound is Theorem 3's: L_test_old - Delta_test^R - Delta_ERM_S + 2 (eps_M + eps_K) >= L_test_old - margins
    q = cert.quantities
    assert cert.bound > q["L_T_old"] - q["delta_test_R"] - q["delta_erm_S"]
    assert q["delta_erm"] >= 0 and q["delta_erm_S"] >= 0 and q["d"] == 8 and q["P"] == 16 and q["layout"] == "NCL"
    assert all(torch.equal(v, before[k]) for k, v in net.state_dict().items())


def test_missing_constants_are_named_and_the_route_not_evaluated(roles):
    net, sig, S, T = roles
    cert = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, **SMALL)   # L_loss = sqrt 2 for CE
    assert not cert.certified and cert.bound is None
    assert all(m == ["B", "L_top"] for m in cert.table()["missing"])
    own = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0,
                               loss=lambda out, t: torch.nn.functional.cross_entropy(out, t, reduction="none"), **SMALL)
    assert all(m == ["L_loss"] for m in own.table()["missing"])   # a user's loss: L_loss is the user's to give


def test_overlapping_roles_are_refused(roles):
    net, sig, S, T = roles
    x, y = S
    with pytest.raises(ValueError, match=r"S and T share 5 identical \(x, y\) rows"):
        dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=(torch.cat([T[0], x[:5]]), torch.cat([T[1], y[:5]])),
                             **SMALL)


def test_the_route_table_is_extensible(roles):
    net, sig, S, T = roles
    seen = {}

    def rows(setup, level, inputs, constants):
        seen["kappa"] = constants["kappa"]
        from bounds.routes import evaluate_routes

        return [("localised_stub", evaluate_routes(setup, level).direct)]

    dc.register_route(dc.RouteSpec("localised_stub", ("B", "L_loss", "L_top", "kappa"), rows))
    try:
        with pytest.raises(ValueError, match="route table entry 'localised_stub' exists"):
            dc.register_route(dc.RouteSpec("localised_stub", (), rows))
        cert = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, **SMALL)
        assert cert.table().set_index("route").loc["localised_stub", "missing"] == ["kappa"]
        cert = dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, kappa=0.5,
                                    route="localised_stub", **SMALL)
        assert seen["kappa"] == 0.5 and cert.route == "localised_stub"
    finally:
        dc.ROUTES.pop("localised_stub")
    with pytest.raises(ValueError, match="route == 'nope', must be None or one of"):
        dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, route="nope", **SMALL)


def test_the_route_table_copies_to_a_plain_dict_that_later_registrations_do_not_reach():
    snap = dc.ROUTES.copy()
    assert type(snap) is dict and snap == dict(dc.ROUTES) and (dc.ROUTES | {"x": 1}) == {**snap, "x": 1}
    assert ({"paper": 0} | dc.ROUTES)["paper"] == snap["paper"]
    dc.register_route(dc.RouteSpec("copy_stub", (), lambda *a: []))
    try:
        assert "copy_stub" in dc.ROUTES and "copy_stub" not in snap
    finally:
        dc.ROUTES.pop("copy_stub")


def test_an_unknown_route_is_refused_before_any_work_and_int32_labels_overlap_int64_ones():
    """Review fixes: ``route`` is checked first (no scan, no training); one sample given with int32 labels
    in one role and int64 in another is the same row."""
    import torch

    import depthcert as dc
    from depthcert.api._data import as_stream
    from depthcert.api._roles import check_disjoint

    with pytest.raises(ValueError, match="route == 'nope'"):
        dc.certify_insertion(torch.nn.Linear(2, 2), "x", signal=None, S=None, T=None, route="nope")
    m = torch.nn.Linear(1, 1)
    x = torch.arange(4.0)[:, None]
    a = as_stream((x, torch.zeros(4, dtype=torch.int32)), "S", m)
    b = as_stream((x[:2], torch.zeros(2, dtype=torch.int64)), "T", m)
    with pytest.raises(ValueError, match="S and T share 2 identical"):
        check_disjoint({"S": a, "T": b})
