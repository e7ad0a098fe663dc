"""Behaviour kept through the restructure (issue 15): golden outputs, every number compared.

The files in ``tests/golden/data/`` were written by ``tests/golden/make_golden.py`` from the
commit before the restructure (1cc74fd); this test recomputes them and compares every
number (relative 1e-9) and every string, except run-specific fields (wall times, versions,
output paths).
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tests.golden.make_golden import BOUNDS_EXAMPLES, produce

DATA = Path(__file__).resolve().parent / "golden" / "data"
VOLATILE = {"timings", "versions", "wall_s", "out", "path"}
RTOL = 1e-9
#: Keys added after the golden data were written (issue 17, THEORY §6b; issue 16: ``population_is``, THEORY §10):
#: new results beside the old ones, allowed only where listed (dict path -> allowed new key), never a changed or missing key.
ADDED = {"": ("localised", "population_is"), ".routes": ("localised_", "heldout_paired"), ".streams": ("scan_probe",)}
#: Items appended to a list after the golden data were written (the run's own scan sample, a role of its own).
ADDED_ITEMS = {".fixed_before_data.roles": ("scan_probe",)}
#: The same keys as columns of a sweep's results.csv.
ADDED_COLUMNS = ("localised.", "routes.localised_", "routes.heldout_paired.", "population_is", "streams.scan_probe")
#: Fields added to every route row ``.routes.<name>`` (issue 34: which samples it read, how much it certifies).
ADDED_ROUTE_FIELDS = ("roles", "S_only", "T_statistics", "roles_note", "realised_gain", "improvement_over_loss",
                      "improvement_over_gain", "negligible", "share_note")


def _route_field(where: str, key: str) -> bool:
    """``key`` is one of :data:`ADDED_ROUTE_FIELDS` directly in a route row (``.routes.<name>``)."""
    parts = where.split(".")
    return len(parts) == 3 and parts[1] == "routes" and key in ADDED_ROUTE_FIELDS


def _added(where: str, key: str) -> bool:
    allowed = ADDED.get(where, ())
    return key in allowed or any(a.endswith("_") and key.startswith(a) for a in allowed) or _route_field(where, key)


def _differences(old, new, where="") -> list[str]:
    """Every place where ``new`` differs from ``old`` (numbers to RTOL, the rest exactly)."""
    if isinstance(old, dict) and isinstance(new, dict):
        changed = sorted(k for k in set(old) ^ set(new) if k in old or not _added(where, k))
        out = [f"{where}: keys {changed}"] if changed else []
        for k in set(old) & set(new):
            if k not in VOLATILE:
                out += _differences(old[k], new[k], f"{where}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        new = [v for v in new if v not in ADDED_ITEMS.get(where, ())] if where in ADDED_ITEMS else new
        if len(old) != len(new):
            return [f"{where}: length {len(old)} != {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new)) for d in _differences(a, b, f"{where}[{i}]")]
    num = (int, float)
    if isinstance(old, num) and isinstance(new, num) and not isinstance(old, bool):
        same = math.isclose(old, new, rel_tol=RTOL, abs_tol=1e-300) or (math.isnan(old) and math.isnan(new))
        return [] if same else [f"{where}: {old!r} != {new!r}"]
    return [] if old == new else [f"{where}: {old!r} != {new!r}"]


def _csv_rows(path: Path) -> list[dict]:
    def value(text: str):
        try:
            return float(text)
        except ValueError:
            return text
    with open(path, newline="") as fh:
        return [{k: value(v) for k, v in row.items() if not k.startswith("timings.") and not k.endswith("wall_s")
                 and not k.startswith(ADDED_COLUMNS) and not _route_column(k)} for row in csv.DictReader(fh)]


def _route_column(column: str) -> bool:
    """A results.csv column of :data:`ADDED_ROUTE_FIELDS` (``routes.<name>.<field>[.<role>]``)."""
    parts = column.split(".")
    return len(parts) >= 3 and parts[0] == "routes" and parts[2] in ADDED_ROUTE_FIELDS


def test_differences_sees_a_changed_number_and_a_missing_key():
    assert _differences({"a": 1.0, "b": [1, "x"]}, {"a": 1.0 + 1e-12, "b": [1, "x"]}) == []
    assert _differences({"a": 1.0}, {"a": 1.001})
    assert _differences({"a": 1.0, "b": 2}, {"a": 1.0})
    assert _differences({"a": ["x"]}, {"a": ["y"]})
    assert _differences({"routes": {"a": 1}}, {"routes": {"a": 1, "localised_x": 2, "heldout_paired": 3},
                                              "localised": {}}) == []
    assert _differences({"routes": {"a": 1}}, {"routes": {"a": 1, "other": 2}})       # only the listed new keys
    assert _differences({"a": 1}, {"a": 1, "localised_x": 2})                         # ... and only where listed
    assert _differences({"routes": {"localised_x": 1}}, {"routes": {}})               # a missing key is a difference
    assert _differences({"routes": {"a": {"x": 1}}}, {"routes": {"a": {"x": 1, "S_only": True, "roles": {}}}}) == []
    assert _differences({"routes": {"a": {"x": 1}}}, {"routes": {"a": {"x": 1, "other": 2}}})   # only the listed fields
    assert _differences({"a": {"x": 1}}, {"a": {"x": 1, "S_only": True}})              # ... and only in a route row
    assert _route_column("routes.direct.roles.T") and not _route_column("routes.direct.bound")
    roles = {"fixed_before_data": {"roles": ["a"]}}
    assert _differences(roles, {"fixed_before_data": {"roles": ["a", "scan_probe"]}}) == []   # the listed new item
    assert _differences(roles, {"fixed_before_data": {"roles": ["a", "other"]}})              # ... and only it


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    dest = tmp_path_factory.mktemp("golden")
    produce(dest)
    return dest


def test_demo_result_json_unchanged(fresh):
    old = json.loads((DATA / "demo_result.json").read_text())
    new = json.loads((fresh / "demo_result.json").read_text())
    assert _differences(old, new) == []


def test_sweep_results_csv_unchanged(fresh):
    assert _differences(_csv_rows(DATA / "sweep_results.csv"), _csv_rows(fresh / "sweep_results.csv")) == []


def _without_the_stated_erm_substitution(report: dict) -> dict:
    """``report`` without the two texts issue 17 (item 6) added on purpose: the note that the direct
    variants use ``delta_erm`` for ``delta_erm_S`` when it is absent (the examples do not give it),
    and the same sentence in the degenerate regime's summary. Every number stays compared."""
    from bounds._variant_inputs import ERM_SUBSTITUTION_NOTE

    out = json.loads(json.dumps(report))
    out["variants"]["notes"] = [n for n in out["variants"]["notes"] if n != ERM_SUBSTITUTION_NOTE]
    added = " The direct route (and delta_R_equal_bounds) uses Delta_ERM relative to f~_pop for the one relative"
    summary = out["degenerate_regime"]["summary"]
    out["degenerate_regime"]["summary"] = summary.split(added)[0]
    return out


@pytest.mark.parametrize("name", BOUNDS_EXAMPLES)
def test_bounds_json_unchanged(fresh, name):
    stem = Path(name).stem
    old = json.loads((DATA / f"bounds_{stem}.json").read_text())
    new = json.loads((fresh / f"bounds_{stem}.json").read_text())
    assert _differences(old, _without_the_stated_erm_substitution(new)) == []
