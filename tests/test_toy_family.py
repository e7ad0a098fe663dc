"""Issue 36 (acceptance, families): a new residual block family is one module (``tests/_toy_family.py``) and
one registration call, and it works through ``insert_block``, ``grow``, ``certify_insertion`` and ``run``.

The toy ``scaled_readout`` is the readout's class reparametrised (features ``2 phi``, caps ``nu_V / 2``), so
what must not change is known without its code: the function at ``theta = 0`` and at the jumpboards, the
certificate's closed-form bounds and ``eps_M`` (``nu_V rho_phi`` is invariant); what must change is known
too: its features and ``rho_phi`` double, its caps halve, and it has no empirical Rademacher route.
"""
from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from bounds.families import RESIDUAL_FAMILIES, register_family, unregister_family
from plumbing.config import merge_config
from tests._toy_family import SCALE, SCALED_READOUT

NAME = SCALED_READOUT.name
F64 = torch.float64


@pytest.fixture
def toy():
    """The one registration call (and its removal, so that other tests see the built-ins only)."""
    register_family(SCALED_READOUT)
    yield RESIDUAL_FAMILIES[NAME]
    unregister_family(NAME)


def _draw(n: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=F64)
    return x, (x[:, 0] > 0).long()


def _net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.Sequential(nn.Linear(8, 8), nn.Tanh()), nn.Linear(8, 2)).double()


def test_registration_reaches_every_name_list_and_is_refused_when_malformed(toy):
    from bounds.parameters import BLOCK_PARAMETERS
    from bounds.routes import Setup
    from numerics.insertion import CERTIFIED_FAMILIES, FAMILIES
    from numerics.studies.run._family import RUN_FAMILIES, run_family

    assert NAME in CERTIFIED_FAMILIES and NAME in FAMILIES and BLOCK_PARAMETERS[NAME] is toy.parameters
    assert run_family(NAME).math is toy and RUN_FAMILIES[NAME].routes == ("population_route", "direct_route",
                                                                           "population_tight_hoeffding",
                                                                           "population_tight_bernstein",
                                                                           "direct_tight_hoeffding",
                                                                           "direct_tight_bernstein")
    Setup(L_test_old=0.6, delta_R=0.1, delta_erm=0.0, delta_test_R=0.1, M=1e4, K=1e4, delta=0.05,
          delta_prime=0.05, B=4.0, L_loss=1.4, family=NAME, block=dict(d=8, L_top=2.0, rho_phi=3.0, nu_V=0.2))
    with pytest.raises(ValueError, match="family.name == 'scaled_readout'"):
        register_family(SCALED_READOUT)                              # a name is registered once
    with pytest.raises(ValueError, match="family.name == 'linear'"):
        register_family(dataclasses.replace(SCALED_READOUT, name="linear"))   # the scan-only block's name
    with pytest.raises(ValueError, match="must hold \\['L_top', 'd'\\]"):
        register_family(dataclasses.replace(SCALED_READOUT, name="no_d", parameters={"nu_V": toy.parameters["nu_V"]}))
    with pytest.raises(ValueError, match="must be a registered family other than"):
        unregister_family("readout")                                 # the built-ins stay


def test_insert_block_builds_the_familys_own_block(toy):
    from numerics.estimators import rho_phi
    from numerics.insertion import insert_block
    from numerics.models import PostNormResMLP

    net = PostNormResMLP(4, 8, 2, 5, seed=3)
    x = torch.randn(16, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    new, ref = insert_block(net, 1, NAME, 3, seed=7), insert_block(net, 1, "readout", 3, seed=7)
    u = net.bottom(x, 1)
    with torch.no_grad():
        assert torch.equal(new(x), net(x))                            # function-preserving at theta = 0
        assert torch.equal(new.block.features(u), SCALE * ref.block.features(u))
    assert rho_phi(new.block, 1.5) == pytest.approx(SCALE * rho_phi(ref.block, 1.5), rel=1e-12)
    assert [tuple(p.shape) for p in new.block_parameters()] == [(8, 3)]   # frozen features: V only
    with pytest.raises(ValueError, match="family == 'bogus', must be one of .*'scaled_readout'"):
        insert_block(net, 1, "bogus", 3)


def test_an_unregistered_family_is_refused_by_insert_block():
    from numerics.insertion import insert_block
    from numerics.models import PostNormResMLP

    with pytest.raises(ValueError, match="family == 'scaled_readout', must be one of"):
        insert_block(PostNormResMLP(4, 8, 2, 5), 1, NAME, 3)


def test_api_insert_block_and_grow_use_the_familys_tangent_space(toy):
    import depthcert as dc

    net, (x, _) = _net(), _draw(64, 9)
    rep = dc.saturation(net, _draw(512, 2), sites=["1"], curvature_n=64)
    for init in ("zero", "jumpboard"):
        a = dc.insert_block(net, "1", NAME, init, scan=rep, force=True)
        b = dc.insert_block(net, "1", "readout", init, scan=rep, force=True)
        with torch.no_grad():
            assert torch.equal(a(x), b(x))
    other = dc.insert_block(net, "1", "linear", "jumpboard", scan=rep, force=True)   # another tangent space differs
    with torch.no_grad():
        assert not torch.allclose(other(x), b(x)) and not torch.allclose(b(x), net(x))
    kw = dict(train=_draw(512, 1), probe=_draw(512, 2), sites=["1"], max_blocks=1, steps=5, curvature_n=64)
    g_toy, g_ref = dc.grow(net, family=NAME, **kw), dc.grow(net, family="readout", **kw)
    assert g_toy.trajectory["blocks_added"].iloc[-1] == 1                # one block inserted, then trained
    assert g_toy.trajectory.equals(g_ref.trajectory)
    with torch.no_grad():
        assert torch.equal(g_toy.model(x), g_ref.model(x))
    with pytest.raises(ValueError, match="family == 'bogus'"):
        dc.insert_block(net, "1", "bogus", "zero", scan=rep)


def test_certify_insertion_certifies_the_family(toy):
    """The toy's setup is read through its ``certificate_block``: right, the readout's bounds; a mutant that
    forgets to rescale the cap (``nu_V`` where ``nu_V / SCALE`` is due) doubles the Rademacher term and is seen."""
    import depthcert as dc

    kw = dict(signal=_draw(600, 1), S=_draw(400, 2), T=_draw(400, 3), B=5.0, L_top=5.0, erm_steps=2)
    cert, ref = dc.certify_insertion(_net(), "1", family=NAME, **kw), dc.certify_insertion(_net(), "1", **kw)
    assert cert.quantities["family"] == NAME and ref.quantities["family"] == "readout"
    rows, ref_rows = {r["route"]: r for r in cert.rows}, {r["route"]: r for r in ref.rows}
    closed = ["population_route", "direct_route", "direct_tight_hoeffding", "population_tight_bernstein"]
    for route in closed:                                   # the same class: the same bound
        assert rows[route]["bound"] == pytest.approx(ref_rows[route]["bound"], rel=1e-9, abs=1e-12), route
    wrong = dataclasses.replace(toy, name="scaled_readout_unscaled", torch=dataclasses.replace(
        toy.torch, certificate_block=lambda q, c: {**toy.torch.certificate_block(q, c), "nu_V": q["nu_V"]}))
    register_family(wrong)
    try:
        mutant = {r["route"]: r for r in dc.certify_insertion(_net(), "1", family=wrong.name, **kw).rows}
    finally:
        unregister_family(wrong.name)
    assert mutant["direct_route"]["bound"] > ref_rows["direct_route"]["bound"] * (1 + 1e-6)
    for bad in ("full", "bogus"):                          # refused before any work, the allowed ones named
        with pytest.raises(ValueError, match=f"family == '{bad}', must be one of \\['readout', 'scaled_readout'\\]"):
            dc.certify_insertion(_net(), "1", family=bad, **kw)


def test_run_takes_the_family_from_insertion_family(toy):
    from numerics.studies.run import run_experiment

    tiny = {"sizes": {"M": 1000, "K": 1000, "population": 1000}, "reference": {"n": 500, "steps": 15},
            "block_training": {"steps": 60, "batch_size": 512}}
    res = {f: run_experiment(merge_config(tiny, {"insertion": {"family": f}})) for f in (NAME, "readout")}
    q, ref = res[NAME]["quantities"], res["readout"]["quantities"]
    assert res[NAME]["config"]["insertion"]["family"] == NAME
    assert q["rho_phi"] == pytest.approx(SCALE * ref["rho_phi"], rel=1e-12)
    assert q["nu_V"] == pytest.approx(ref["nu_V"] / SCALE, rel=1e-12)
    assert res[NAME]["eps_M"] == pytest.approx(res["readout"]["eps_M"], rel=1e-12)   # nu_V rho_phi invariant
    assert res[NAME]["L_test_old"] == res["readout"]["L_test_old"]
    assert "direct_tight_hoeffding_empirical" in res["readout"]["routes"]
    assert "direct_tight_hoeffding_empirical" not in res[NAME]["routes"]


@pytest.mark.slow
def test_validity_takes_the_family_from_insertion_family(toy, tmp_path):
    from numerics.studies.validity import run_validity

    cfg = {"sizes": {"M": 2000, "K": 2000, "population": 2000}, "reference": {"n": 500},
           "block_training": {"steps": 40, "batch_size": 256}, "validity": {"group": 1, "population": 100_000},
           "insertion": {"family": NAME}}
    s = run_validity(cfg, 1, tmp_path, progress=False)
    assert s["draws"] == 1 and "direct_tight_hoeffding" in s["routes"]
    assert not any(r.endswith("_empirical") for r in s["routes"])      # the toy's routes, not the readout's


def test_a_built_in_family_cannot_be_replaced_and_the_name_lists_act_as_tuples():
    """register_family(replace=True) refuses readout/full (they could not be restored: unregister keeps them), and
    the live name lists add and hash as the tuples they replaced."""
    from bounds.families import READOUT, FamilyNames
    from numerics.insertion import CERTIFIED_FAMILIES

    for fam in (READOUT, dataclasses.replace(READOUT, torch=None)):
        with pytest.raises(ValueError, match="other than the built-in"):
            register_family(fam, replace=True)
    assert RESIDUAL_FAMILIES["readout"].torch is not None          # untouched
    names = FamilyNames()
    assert names + ("x",) == (*tuple(names), "x") and ("x",) + names == ("x", *tuple(names))
    assert hash(CERTIFIED_FAMILIES) == hash(tuple(CERTIFIED_FAMILIES)) and {CERTIFIED_FAMILIES: 1}[tuple(CERTIFIED_FAMILIES)] == 1
