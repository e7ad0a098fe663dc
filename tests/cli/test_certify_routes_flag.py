"""``depthcert certify`` (``--routes default``, the default) prints the paper's two routes and the route fixed
before the data only; ``--routes all`` every route; the files hold every route either way; a bad value exits 2."""
from __future__ import annotations

import json

import pytest

from depthcert.api._routes import DEFAULT_ROUTE, route_names
from tests.cli.test_help_promises import SPEC, _run

BASE = ["certify", *SPEC, "--site", "blocks.1", "--B", "5", "--L-top", "3"]


def _printed_routes(out: str) -> list[str]:
    names = route_names()
    return [ln.split()[0] for ln in out.splitlines() if ln.split() and ln.split()[0] in names]


def test_routes_default_prints_three_rows_and_all_prints_every_row(tmp_path, capsys):
    code, out, err = _run([*BASE, "--routes", "default", "--out", str(tmp_path / "d")], capsys)
    assert code == 0, err
    assert _printed_routes(out) == ["population_route", "direct_route"] and DEFAULT_ROUTE == "direct_route"
    every = [r["route"] for r in json.loads((tmp_path / "d" / "certify.json").read_text())["routes"]]
    assert len(every) >= 10                                                # the file keeps every route
    code, out, err = _run([*BASE, "--route", "direct_tight_hoeffding", "--routes", "default"], capsys)
    assert code == 0, err
    assert _printed_routes(out) == ["population_route", "direct_route", "direct_tight_hoeffding"]
    code, out, err = _run([*BASE, "--routes", "all"], capsys)
    assert code == 0 and _printed_routes(out) == every                    # --routes all: every route
    code, out, err = _run(BASE, capsys)
    assert code == 0 and _printed_routes(out) == ["population_route", "direct_route"]   # the default view
    with pytest.raises(SystemExit) as exc:                                 # argparse's choices: one line, exit 2
        _run([*BASE, "--routes", "some"], capsys)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "--routes" in err and "'some'" in err and len(err.strip().splitlines()) == 1
