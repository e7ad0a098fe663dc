"""CLI (issue 20): one writer per folder, SIGINT/SIGTERM as one line, stored files named when corrupt."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from depthcert.cli import main
from plumbing.lock import LOCK_NAME

ROOT = Path(__file__).resolve().parents[2]
#: `depthcert sweep` with the cheap test runner (each cell sleeps FAKE_RUNNER_SLEEP seconds).
DRIVER = ("import functools, sys\nimport numerics.studies.sweeps as S\n"
          "S.sweep = functools.partial(S.sweep, runner='tests.numerics.studies._fake_runner:run')\n"
          "from depthcert.cli import main\nsys.exit(main(sys.argv[1:]))\n")


def _files(tmp_path: Path, cells: int = 12) -> list[str]:
    (tmp_path / "exp.toml").write_text("[sizes]\nM = 1000\nK = 1000\npopulation = 1000\n")
    (tmp_path / "s.toml").write_text(f'base = "exp.toml"\n[grid]\nseed = {list(range(cells))}\n')
    return ["sweep", "--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-progress"]


def _start(argv: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "FAKE_RUNNER_SLEEP": "1.0"}
    return subprocess.Popen([sys.executable, "-c", DRIVER, *argv], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_default_sigint)


def _default_sigint() -> None:
    """The child gets Ctrl-C's default action, as in a terminal: a test run started in the background by a
    shell without job control (``cmd &``) ignores SIGINT, and Python keeps an ignored SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_cells(tmp_path: Path, proc: subprocess.Popen, n: int = 1) -> None:
    deadline = time.time() + 600           # a hang guard: the first cell normally lands within seconds
    while len(list((tmp_path / "o").glob("cells/*/result.json"))) < n and time.time() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_is_one_line_and_the_stored_cells_are_intact(tmp_path, signum, code, capsys, monkeypatch):
    argv = _files(tmp_path)
    proc = _start(argv)
    try:
        _wait_for_cells(tmp_path, proc)
        assert main(argv) == 2                                  # a second writer: refused, the owner named
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"is being written by pid {proc.pid}" in err[0], err
        os.kill(proc.pid, signum)
        rc, stderr = proc.wait(timeout=300), proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    lines = [ln for ln in stderr.strip().splitlines() if ": note:" not in ln]
    stored = len(list((tmp_path / "o").glob("cells/*/result.json")))
    assert rc == code and "Traceback" not in stderr, stderr
    assert lines == [f"depthcert sweep: interrupted; {stored} cells stored; re-run to continue"], stderr
    assert 1 <= stored < 12 and not (tmp_path / "o" / LOCK_NAME).exists()
    import numerics.studies.sweeps as S
    from functools import partial

    monkeypatch.setattr(S, "sweep", partial(S.sweep, runner="tests.numerics.studies._fake_runner:run"))
    assert main(argv) == 0                                        # the re-run continues: only the rest computed
    assert f"{12 - stored} computed now, {stored} reused" in capsys.readouterr().out
    cells = S.load_cells(tmp_path / "o")
    assert sorted(c["value"] for c in cells) == [10.0 + s for s in range(12)]


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path, capsys, monkeypatch):
    import socket

    import numerics.studies.sweeps as S
    from functools import partial

    argv = _files(tmp_path, cells=2)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / LOCK_NAME).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(),
                                                        "command": "sweep"}))
    monkeypatch.setattr(S, "sweep", partial(S.sweep, runner="tests.numerics.studies._fake_runner:run"))
    assert main(argv) == 0
    assert f"taking over the lock of pid {dead.pid}" in capsys.readouterr().err
    assert not (tmp_path / "o" / LOCK_NAME).exists()


def test_every_writer_takes_the_lock(tmp_path, capsys):
    """validity, grow and reproduce are refused on a folder another process writes (before any work)."""
    from plumbing.lock import FolderLock

    (tmp_path / "c.toml").write_text("seed = 0\n")
    for argv in (["validity", "--config", str(tmp_path / "c.toml"), "--draws", "2"],
                 ["grow", "--config", str(tmp_path / "c.toml")], ["reproduce", "--suite", "quick"]):
        with FolderLock(tmp_path / "o", "other"):
            assert main(argv + ["--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"being written by pid {os.getpid()}" in err[0], (argv, err)
