"""Generated bad input for every command: exit 2, one line on stderr, never a traceback.

The generators live in ``tests/cli/_bad_inputs.py`` (``BAD_INPUTS``; a new command
registers its own there).
"""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from depthcert.cli import COMMANDS, main
from tests.cli._bad_inputs import BAD_INPUTS


def test_every_command_has_a_bad_input_generator():
    missing = sorted(set(COMMANDS) - set(BAD_INPUTS))
    assert not missing, f"register a bad-input generator for {missing} in tests/cli/_bad_inputs.py"


@pytest.mark.parametrize("command", sorted(BAD_INPUTS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_bad_input_exits_2_with_one_line(command, data, tmp_path_factory, capsys):
    tmp = tmp_path_factory.mktemp(command)
    argv = data.draw(BAD_INPUTS[command](tmp), label="argv")
    capsys.readouterr()
    code = main(argv)                       # a traceback would propagate here and fail the test
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, code, err)
    lines = [ln for ln in err.splitlines() if not ln.startswith("depthcert: warning:")]
    assert len(lines) == 1 and "Traceback" not in err, (argv, err)
