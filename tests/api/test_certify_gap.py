"""``dc.certify_insertion`` reports ``M_needed`` per row and the scan's ``n_needed_improvable`` (issue 29)."""
import dataclasses

import pytest

import depthcert as dc
from bounds.localised_routes import evaluate_localised
from depthcert.api._localised import localised_setup


@pytest.fixture(scope="module")
def cert(roles):
    net, sig, S, T = roles
    return dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, L_loss=1.0,
                                kappa=1.0, erm_steps=2, batch_size=200)


def test_rows_and_fields_carry_the_gap(cert):
    assert {"certified", "route", "bound", "rows", "quantities", "constants", "notes"} <= set(
        f.name for f in dataclasses.fields(cert))       # the existing fields are unchanged
    n = cert.n_needed_improvable
    assert n == cert.gap["n_needed_improvable"] == cert.gap["scan"]["n_needed_improvable"]
    for row in cert.rows:
        assert {"M_needed", "n_needed_improvable", "M_needed_ratio"} <= set(row)
        if row["M_needed"] is not None and n:
            assert row["M_needed_ratio"] == pytest.approx(row["M_needed"] / n)
        assert cert.gap["routes"][row["route"]]["reason"]
    assert {"M_needed", "M_needed_ratio"} <= set(cert.table().columns)
    chosen = next(r for r in cert.rows if r["route"] == cert.route)
    assert cert.M_needed == chosen["M_needed"] and cert.M_needed_ratio == chosen["M_needed_ratio"]


def test_localised_M_needed_certifies_on_the_route_own_evaluator(cert):
    """Either it certifies at ``M_needed`` and not at ``M_needed / 1.5``, or (``None``) not even at ``M_MAX``."""
    from bounds.sample_size import M_MAX

    st = localised_setup(cert.quantities, cert.constants, "cross_entropy", 0.05)
    checked = 0
    for name, g in cert.gap["routes"].items():
        if not name.startswith("localised_") or g["reason"].startswith("not evaluable"):
            continue
        at = lambda M: bool(evaluate_localised(dataclasses.replace(st, M=M), 0.05).routes[name].certified)  # noqa
        if g["M_needed"] is None:
            assert not at(M_MAX) and "t_T_d" in g["reason"], name
        else:
            assert at(g["M_needed"]) and not at(g["M_needed"] / 1.5), name
        checked += 1
    assert checked >= 4
