"""Every row of ``dc.certify_insertion``'s table says which samples it read and how much it certifies
(issue 34, items 1-2): the fields are recomputed here from the row's bound and the measured losses."""
import pytest

import depthcert as dc
from bounds.route_roles import NEGLIGIBLE_SHARE, ROLE_ORDER, route_roles
from depthcert._cmd_user import _summary

SMALL = dict(erm_steps=2, batch_size=200)


@pytest.fixture(scope="module")
def cert(roles):
    net, sig, S, T = roles
    return dc.certify_insertion(net, "blocks.1", signal=sig, S=S, T=T, B=5.0, L_top=3.0, A_norm=1.0, **SMALL)


def test_every_row_names_the_samples_it_read(cert):
    assert len(cert.rows) > 10
    for row in cert.rows:
        assert set(row["roles"]) == set(ROLE_ORDER), row["route"]
        expected = route_roles(row["route"], "signal")      # Delta_R's lower bound: the signal's held third
        assert row["S_only"] is expected["S_only"] and row["roles"] == expected["roles"], row["route"]
    tab = {r["route"]: r for r in cert.rows}
    assert tab["localised_train_linearised_bernstein"]["S_only"] is False
    assert "variance" in tab["localised_train_linearised_bernstein"]["roles"]["T"]
    assert tab["localised_train_linearised_hoeffding"]["S_only"] is True
    assert tab["direct_route"]["T_statistics"] == ["delta_test_R"]
    assert "Delta_R" in tab["population_route"]["roles"]["signal"]


def test_how_much_each_row_certifies_against_a_recomputation(cert):
    q = cert.quantities
    gain = q["L_T_old"] - q["L_T_new"]
    assert set(cert.table().columns) >= {"roles", "S_only", "realised_gain", "improvement_over_loss",
                                         "improvement_over_gain", "share_note"}
    seen = 0
    for row in cert.rows:
        assert row["realised_gain"] == pytest.approx(gain, rel=1e-12, abs=1e-15)
        if row["bound"] is None:
            assert row["improvement_over_loss"] is None and row["improvement_over_gain"] is None
            continue
        seen += 1
        imp = q["L_T_old"] - row["bound"]
        assert row["improvement"] == pytest.approx(imp, rel=1e-9, abs=1e-12)
        assert row["improvement_over_loss"] == pytest.approx(imp / q["L_T_old"], rel=1e-9, abs=1e-12)
        if gain > 0:
            assert row["improvement_over_gain"] == pytest.approx(imp / gain, rel=1e-9, abs=1e-12)
            small = row["certified"] and imp / gain < NEGLIGIBLE_SHARE
            assert ("negligible step" in row["share_note"]) is bool(small)
        else:
            assert row["improvement_over_gain"] is None and "undefined" in row["share_note"]
    assert seen >= 4
    chosen = next(r for r in cert.rows if r["route"] == cert.route)
    assert cert.notes[-1] == f"{cert.route}: {chosen['share_note']}"


def test_the_certify_text_says_a_negligible_step():
    rows = [{"route": "localised_train_linearised_bernstein", "certified": True,
             "share_note": "the certificate covers a negligible step (0.5% of the block's realised gain)"},
            {"route": "direct_route", "certified": False, "share_note": "not certified: improvement -1"}]
    text = _summary("certify", {"routes": rows, "certified": False, "route": "direct_route", "bound": 1.0}, None,
                    _Table())
    assert "  - localised_train_linearised_bernstein: the certificate covers a negligible step (0.5%" in text
    assert text.splitlines()[-1].startswith("certified=False (direct_route, bound")
    assert "not certified: improvement -1" not in text


class _Table:
    def to_string(self, index=False):
        return "route table"
