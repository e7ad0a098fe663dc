"""Running sweeps (numerics.studies.sweeps.sweep): store, resume, results.csv, parallel, Ray, kill/resume."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from plumbing.validation import InputError
from plumbing.config import merge_config
from numerics.studies.sweeps import available_cores, load_cells, load_sweep, make_spec, results_table, sweep

FAKE = "tests.numerics.studies._fake_runner:run"
TINY = {"sizes": {"M": 1000, "K": 1000, "population": 1000}, "reference": {"n": 300, "steps": 10},
        "block_training": {"steps": 10, "batch_size": 256}}
ROOT = Path(__file__).resolve().parents[3]


def _spec(depths=(1, 2, 3), seeds=(0, 1), base=TINY):
    return make_spec(base, {"model.depth": list(depths), "seed": list(seeds)})


def _strip(record):
    """A cell's result without what legitimately differs between two runs (times, process)."""
    return {k: v for k, v in record.items() if k not in ("timings", "sweep", "versions", "pid")}


def test_cells_written_and_table_is_tidy(tmp_path):
    spec = _spec()
    out = sweep(spec, tmp_path, runner=FAKE, progress=False)
    assert (out.cells, out.computed, out.reused, out.failed) == (6, 6, 0, 0)
    for c in spec.cells:
        rec = json.loads((tmp_path / "cells" / c.key / "result.json").read_text())
        assert rec["value"] == 10.0 * c.params["model.depth"] + c.params["seed"]
        assert rec["sweep"]["params"] == c.params and rec["config"] == c.config
    table = pd.read_csv(tmp_path / "results.csv")
    assert len(table) == 6 and list(table.columns[:4]) == ["cell", "status", "model.depth", "seed"]
    assert {"config.sizes.M", "config.model.depth", "value", "quantities.M"} <= set(table.columns)
    assert (table["value"] == 10 * table["model.depth"] + table["seed"]).all()
    assert results_table(tmp_path).shape == table.shape
    assert not list(tmp_path.rglob(".*.tmp"))


def test_rerun_computes_only_missing_and_stale_cells(tmp_path):
    sweep(_spec(depths=(1, 2)), tmp_path, runner=FAKE, progress=False)
    again = sweep(_spec(depths=(1, 2, 3)), tmp_path, runner=FAKE, progress=False)
    assert (again.computed, again.reused) == (2, 4)
    stale = sweep(_spec(depths=(1, 2, 3), base=merge_config(TINY, {"sizes": {"M": 2000}})), tmp_path,
                  runner=FAKE, progress=False)
    assert stale.computed == 6                      # another base config: nothing silently reused
    assert all(c["quantities"]["M"] == 2000 for c in load_cells(tmp_path))


def test_failed_cells_are_recorded_not_fatal(tmp_path):
    out = sweep(_spec(), tmp_path, runner="tests.numerics.studies._fake_runner:fail_on_depth_3", progress=False)
    assert out.failed == 2 and len(load_cells(tmp_path)) == 4
    table = pd.read_csv(tmp_path / "results.csv")
    assert sorted(table["status"]) == ["failed"] * 2 + ["ok"] * 4
    assert table.loc[table["status"] == "failed", "error"].str.contains("C1").all()
    assert sweep(_spec(), tmp_path, runner=FAKE, progress=False).computed == 0   # deterministic failures kept


@pytest.mark.skipif(available_cores() < 2, reason="needs 2 cores")
def test_process_pool_matches_in_process(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)     # default threads: cores // workers
    spec = _spec(depths=range(1, 11))
    serial = sweep(spec, tmp_path / "a", runner=FAKE, progress=False)
    monkeypatch.setenv("FAKE_DRIVER_PID", str(os.getpid()))   # the driver takes 1 s per cell: the spawned
    monkeypatch.setenv("FAKE_DRIVER_SLEEP", "1.0")            # worker takes the rest once it is ready
    pool = sweep(spec, tmp_path / "b", runner=FAKE, workers=2, progress=False)
    assert (serial.workers, serial.threads) == (1, available_cores())
    assert (pool.workers, pool.threads) == (2, available_cores() // 2)
    a, b = load_cells(tmp_path / "a"), load_cells(tmp_path / "b")
    assert [_strip(r) for r in a] == [_strip(r) for r in b]
    # workers x threads <= cores: a spawned worker's cells on cores // 2 threads; the driver runs
    # its first cells alone on every core, then on cores // 2 once the pool exists
    assert {r["sweep"]["threads"] for r in b if r["pid"] != os.getpid()} == {available_cores() // 2}
    assert all(r["sweep"]["threads"] <= available_cores() for r in b)
    assert b[-1]["sweep"]["threads"] == available_cores() // 2 or b[-1]["pid"] != os.getpid()
    pids = [r["pid"] for r in b]
    assert len(set(pids)) == 2 and os.getpid() in pids       # the driver and one spawned worker both ran cells


def test_default_threads_respect_the_users_omp_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert sweep(_spec(), tmp_path / "a", runner=FAKE, progress=False).threads == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "junk")
    assert sweep(_spec(), tmp_path / "b", runner=FAKE, progress=False).threads == available_cores()


def test_short_sweep_never_spawns(tmp_path):
    """Work below the spawn threshold stays in the driver: --workers 2 is never slower than 1."""
    out = sweep(_spec(), tmp_path, runner=FAKE, workers=2, progress=False)
    assert out.workers == 2 and {r["pid"] for r in load_cells(tmp_path)} == {os.getpid()}


@pytest.mark.parametrize("kw, match", [
    ({"workers": 0}, r"--workers == 0, must be an integer >= 1"),
    ({"workers": 10_000}, r"--workers == 10000, must be an integer in \[1, \d+\] \(cores available\)"),
    ({"workers": 1, "threads": 10_000}, r"--threads == 10000, must be an integer with workers x threads <="),
    ({"backend": "dask"}, r"--backend == 'dask', must be one of \['local', 'ray'\]"),
])
def test_bad_parallelism_rejected(tmp_path, kw, match):
    with pytest.raises(InputError, match=match):
        sweep(_spec(), tmp_path, runner=FAKE, progress=False, **kw)
    assert not (tmp_path / "cells").exists()


def test_ray_missing_names_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)          # simulates `import ray` failing
    with pytest.raises(InputError, match=r"--backend == 'ray', must be 'local', or 'ray' once Ray is installed "
                                         r"\(pip install \"depthcert\[ray\]\"\)"):
        sweep(_spec(), tmp_path, runner=FAKE, backend="ray", progress=False)
    assert not (tmp_path / "cells").exists()               # failed before anything ran


def test_ray_backend_gives_the_local_results(tmp_path):
    """A local Ray instance (2 CPUs, no dashboard) and the local backend, one thread per cell: same results."""
    pytest.importorskip("ray")
    spec = make_spec(TINY, {"model.depth": [1, 2]})
    local = sweep(spec, tmp_path / "local", threads=1, progress=False)
    remote = sweep(spec, tmp_path / "ray", backend="ray", threads=1, progress=False)
    assert remote.backend == "ray" and remote.computed == 2 and local.computed == 2
    a, b = load_cells(tmp_path / "local"), load_cells(tmp_path / "ray")
    assert [_strip(r) for r in a] == [_strip(r) for r in b]
    assert {r["sweep"]["backend"] for r in b} == {"ray"} and {r["sweep"]["pid"] for r in b} != {os.getpid()}


def _cli(args, **kw):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "depthcert", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, **kw)


def test_killed_sweep_resumes_to_the_uninterrupted_result(tmp_path):
    """A real `depthcert sweep` subprocess is killed mid-way (SIGKILL); the re-run computes only the
    missing cells, and every cell equals that of an uninterrupted sweep."""
    (tmp_path / "exp.toml").write_text("[sizes]\nM = 1000\nK = 1000\npopulation = 1000\n"
                                       "[reference]\nn = 300\nsteps = 10\n[block_training]\nsteps = 10\n")
    (tmp_path / "s.toml").write_text('base = "exp.toml"\nplots = ["covariance"]\n'
                                     '[grid]\n"model.depth" = [1, 2]\nseed = [0, 1]\n')
    cells = tmp_path / "killed" / "cells"
    proc = _cli(["sweep", "--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "killed"),
                 "--threads", "1", "--no-progress"])
    deadline = time.time() + 600           # a hang guard: the first cell normally lands within seconds
    while not list(cells.glob("*/result.json")) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)                       # the process group this test started
    proc.wait()
    done = {p.parent.name: p.stat().st_mtime_ns for p in cells.glob("*/result.json")}
    assert 1 <= len(done) < 4, f"kill came too late or too early: {len(done)} cells"
    rc = _cli(["sweep", "--config", str(tmp_path / "s.toml"), "--out", str(tmp_path / "killed"),
               "--threads", "1", "--no-progress"]).wait()
    assert rc == 0
    sweep(load_sweep(tmp_path / "s.toml"), tmp_path / "fresh", threads=1, progress=False)   # uninterrupted
    assert all((cells / k / "result.json").stat().st_mtime_ns == t for k, t in done.items())   # not recomputed
    resumed, fresh = load_cells(tmp_path / "killed"), load_cells(tmp_path / "fresh")
    assert len(resumed) == 4 and [_strip(r) for r in resumed] == [_strip(r) for r in fresh]
    assert len(pd.read_csv(tmp_path / "killed" / "results.csv")) == 4
    assert (tmp_path / "killed" / "plots" / "covariance.pdf").is_file()       # the sweep file's `plots`


def test_sweep_over_task_kind_and_insertion_site(tmp_path):
    """What run accepts today, varied by a sweep: the classification teacher, insertion below the top."""
    base = merge_config(TINY, {"model": {"eps_n": 1e-3, "depth": 2}, "task": {"n_classes": 3, "width": 4}})
    spec = make_spec(base, {"task.kind": ["regression", "classification"], "insertion.at": [0, -1]})
    out = sweep(spec, tmp_path, threads=1, progress=False)
    assert out.failed == 0 and out.computed == 4
    table = results_table(tmp_path)
    assert set(table["task.kind"]) == {"regression", "classification"} and set(table["insertion.at"]) == {0, -1}
    cls = table[table["task.kind"] == "classification"]
    assert (cls["quantities.L_loss"] - 2 ** 0.5).abs().max() < 1e-12          # cross-entropy: L_l = sqrt(2)
    assert (table["quantities.L_top_certified"] >= table["quantities.L_top_empirical"] * (1 - 1e-9)).all()


def test_a_local_cell_that_cannot_fit_is_bad_input_before_any_cell_runs(tmp_path):
    """Memory is checked for every local cell (its share of the machine) before the first runs;
    the error names the cell."""
    from plumbing.validation import InputError
    from numerics.studies.sweeps import make_spec

    spec = make_spec({"sizes": {"M": 2000, "K": 2000, "population": 2000}}, {"sizes.M": [2000, 10**13]})
    with pytest.raises(InputError, match=r"sizes.M == 10000000000000, must be at most .* \(in the cell sizes.M="
                                         r"10000000000000, 1 worker\(s\)\)"):
        sweep(spec, tmp_path, progress=False)
    assert not (tmp_path / "cells").exists() or not any((tmp_path / "cells").iterdir())
