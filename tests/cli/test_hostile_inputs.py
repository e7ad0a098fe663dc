"""Hostile input for every command (issue 20): exit 2, one line on stderr, never a traceback, before any work.

Huge integers, wrong types and scalars where tables belong come through the generators of
``tests/cli/_bad_inputs.py`` (``invalid_values``, ``bad_study_config``, run by
``test_bad_input.py``); here: nesting no reader can follow, symlink loops, grids of too many
cells and stored files cut short (``HOSTILE``).
"""
import pytest
from hypothesis import HealthCheck, find, given, settings, strategies as st

from depthcert.cli import main
from tests.cli._bad_inputs import HOSTILE, invalid_values
from plumbing.validation import Interval
from tests._no_work import forbid_work


@pytest.mark.parametrize("command", sorted(HOSTILE))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hostile_input_exits_2_with_one_line(command, data, tmp_path_factory, capsys, monkeypatch):
    tmp = tmp_path_factory.mktemp(command)
    argv = data.draw(HOSTILE[command](tmp), label="argv")
    capsys.readouterr()
    work = forbid_work(monkeypatch)         # refused before any work: no training, figure, solver or process
    code = main(argv)                       # a traceback would propagate here and fail the test
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv[:3], code, err[:300])
    lines = [ln for ln in err.splitlines() if not ln.startswith("depthcert: warning:")]
    assert len(lines) == 1 and "Traceback" not in err, (argv[:3], err[:300])
    assert work == [], (argv[:3], work)


def test_the_generators_hold_what_the_issue_lists():
    """The hostile values exist in the generators (a test that cannot silently lose them)."""
    for rule, value in [(Interval(1, integer=True), 2**63), (Interval(1, integer=True), 10**30), (Interval(0), 10**400)]:
        assert find(invalid_values(rule), lambda v, value=value: v == value) == value
    assert {"bounds", "run", "validity", "sweep", "saturation", "grow", "study", "plot", "prove"} <= set(HOSTILE)
