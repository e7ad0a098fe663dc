"""Fuzz round 5 (issue 39), item 2: refuse before allocating, and ``prove``'s limits.

Each case is a row ``(command line, the key the refusal must name)``; the command runs in a subprocess
under ``/usr/bin/time`` with at most 4 GiB of address space and a wall-clock limit (a hang guard, generous:
300 s), so that the code before issue 39 fails the row (an allocator's traceback, a ``MemoryError``, a hang
past the limit) instead of the machine. A refusal must be one line naming the key and the limit, exit code 2,
and cost under 1 GB of memory and at most ``CPU_RATIO`` times the CPU of a refusal that reads nothing (a
missing ``--config``: the interpreter, torch and the CLI loading, measured on the same machine), both read
from ``/usr/bin/time``: a ratio, so that a machine 3x slower or loaded passes what this one passes. No
assertion here is on wall time (printed where the issue asked for seconds).
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

import pytest

from plumbing.validation import InputError

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "cli" / "_tiny_user.py"
GNU_TIME = shutil.which("time") or "/usr/bin/time"
AS_LIMIT = 4 << 30          # address space of the command under test
MAX_KB = 1 << 20
#: **Choice**: a refusal may cost this many times the CPU of the start-up refusal (:func:`_startup_cpu`); running
#: the work first (a demo, a training, reading a 1.5 GB file) costs far more, and was 5 s against ~1 s before.
CPU_RATIO = 5.0
GUARD_S = 300           # hang guard of a subprocess: >= 10x a refusal's normal wall time on a loaded machine


def _cli(args, tmp_path: Path, timeout: float = GUARD_S) -> dict:
    """``python -m depthcert ARGS`` under /usr/bin/time; ``rc`` None when it ran past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    stats = tmp_path / "time.txt"
    cmd = [sys.executable, "-m", "depthcert", *map(str, args)]
    if os.path.exists(GNU_TIME):
        cmd = [GNU_TIME, "-o", str(stats), "-f", "%e %U %S %M", *cmd]

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))

    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                         preexec_fn=limit, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return {"rc": None, "out": out, "err": err}
    result = {"rc": p.returncode, "out": out, "err": err}
    if stats.is_file() and stats.read_text().split():
        wall, user, system, kb = stats.read_text().split()[-4:]
        result.update(wall=float(wall), cpu=float(user) + float(system), kb=int(kb))
    return result


@cache
def _startup_cpu() -> float:
    """CPU seconds of ``depthcert run --config MISSING``, a refusal before anything is read: the larger of two
    runs (the first may pay for a cold disk cache)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        runs = [_cli(["run", "--config", Path(tmp) / "missing.toml", "--out", Path(tmp) / "o"], Path(tmp)) for _ in range(2)]
    assert all(r["rc"] == 2 and "--config" in r["err"] for r in runs), [r["err"][-500:] for r in runs]
    return max(r.get("cpu", 0.0) for r in runs)


def _refused(r: dict, key: str, *words: str) -> str:
    assert r["rc"] is not None, "ran past its time limit"
    lines = [ln for ln in r["err"].strip().splitlines() if ln.strip() and not ln.startswith("depthcert: warning:")
             and "cell/s]" not in ln]
    assert r["rc"] == 2 and len(lines) == 1 and "Traceback" not in r["err"], (r["rc"], r["err"][-2000:])
    line = lines[0]
    assert f"{key} ==" in line and all(w in line for w in words), line
    if "kb" in r:        # CPU against the same machine's start-up refusal, not against seconds
        assert r["kb"] < MAX_KB and r["cpu"] < CPU_RATIO * _startup_cpu(), (r["kb"], r["cpu"], _startup_cpu())
    return line


# ---- sizes in a config: refused before any allocation, naming the key and the limit -------------------------

CONFIG_SIZES = [
    ("saturation", "[saturation]\nprobe_n = 10000000000\n", "saturation.probe_n", "on this machine"),
    ("saturation", "[task]\nn_population = 4000000000\n", "task.n_population", "on this machine"),
    ("saturation", "[saturation]\nwidth = 1000000\n", "saturation.width", "on this machine"),
    ("grow", "[reference]\nn = 4000000000\n", "reference.n", "on this machine"),
    ("grow", "[model]\nwidth = 1000000\n", "model.width", "on this machine"),
    ("grow", "[reference]\nsteps = 1000000000000000\n", "reference.steps", "a week"),
    ("grow", "[growth]\nsteps_per_growth = 1000000000000000\n", "growth.steps_per_growth", "a week"),
]


@pytest.mark.parametrize("command, text, key, limit", CONFIG_SIZES, ids=[c[2] + "-" + c[0] for c in CONFIG_SIZES])
def test_a_config_size_that_cannot_fit_is_refused_before_any_work(tmp_path, command, text, key, limit):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    r = _cli([command, "--config", cfg, "--out", tmp_path / "o"], tmp_path)
    _refused(r, key, limit, "at most" if limit == "a week" or "width" not in key else "smaller")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("module, name, text, key", [
    ("numerics.studies.saturation", "validate_config", {"saturation": {"probe_n": 10**10}}, "saturation.probe_n"),
    ("numerics.studies.growth", "validate_grow_config", {"task": {"n_population": 4 * 10**9}}, "task.n_population"),
    ("numerics.studies.growth", "validate_grow_config", {"reference": {"steps": 10**15}}, "reference.steps"),
])
def test_the_api_validators_refuse_the_same_sizes(module, name, text, key):
    import importlib

    with pytest.raises(InputError, match=f"^{key} =="):
        getattr(importlib.import_module(module), name)(text)


def test_the_default_configs_pass_the_size_check():
    """The check has power both ways: the shipped defaults are accepted."""
    from numerics.studies.growth import validate_grow_config
    from numerics.studies.saturation import validate_config

    assert validate_config({})["saturation"]["probe_n"] > 0
    assert validate_grow_config({})["growth"]["max_depth"] > 0


# ---- counts given as options -----------------------------------------------------------------------------

OPTIONS = [
    (["demo", "--estimate", "1000000000000000000000", "--out", "o"], "--estimate", "a week"),
    (["demo", "--estimate", "200000", "--out", "o"], "--estimate", "the stated maximum"),   # before the heavy imports
    (["grow", "--model", f"{TINY}:model", "--data", f"{TINY}:data", "--steps", "100000000000000000000", "--out", "o"],
     "--steps", "a week"),
]


@pytest.mark.parametrize("args, key, limit", OPTIONS, ids=[o[1] for o in OPTIONS])
def test_a_count_that_can_never_finish_is_refused(tmp_path, args, key, limit):
    r = _cli(args, tmp_path)
    _refused(r, key, limit, "at most" if limit == "a week" else "[1, 100000]")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("n_boot", [10**12, 10**15])
def test_plot_n_boot_beyond_memory_is_refused_before_resampling(tmp_path, n_boot):
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").write_text("{}")
    r = _cli(["plot", run, "--kind", "appendix-m", "--n-boot", n_boot], tmp_path)
    _refused(r, "--n-boot", "on this machine", "available")
    assert not (run / "plots").exists()


def test_check_fits_and_check_work_state_the_largest_value_that_fits():
    """Independent arithmetic: 10 units of 10 bytes each against 100 bytes available, 70% of it planned:
    at most floor(70 / 10) = 7 units fit; 1000 bytes available hold all 10."""
    from plumbing.machine import MAX_PLANNED_SECONDS, MEMORY_SHARE, check_fits, check_work

    assert MEMORY_SHARE == 0.7
    check_fits({"n": (10, 100.0, True)}, available=1000)
    with pytest.raises(InputError, match=r"^n == 10, must be at most 7 on this machine: it needs 100 B"):
        check_fits({"n": (10, 100.0, True)}, available=100)
    check_work("k", MAX_PLANNED_SECONDS, 1.0, "draw")
    with pytest.raises(InputError, match=f"^k == {MAX_PLANNED_SECONDS + 1}, must be at most {MAX_PLANNED_SECONDS}:"):
        check_work("k", MAX_PLANNED_SECONDS + 1, 1.0, "draw")


def test_load_grown_with_thousands_of_insertions_is_refused_before_building_them(monkeypatch):
    import torch
    from torch import nn

    import depthcert as dc
    import depthcert.api._attach as attach

    built = []

    def no_block(*args, **kwargs):          # building a block is the work that must not start
        built.append(args[:3])
        raise AssertionError("an insertion was built before the refusal")
    monkeypatch.setattr(attach, "ProtocolBlock", no_block)

    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    rec = {"site": "1", "family": "affine", "state_shape": [8], "width": 4, "layout": None}
    with pytest.raises(InputError, match=r"^saved\['insertions'\] == '5000 insertions', must be a list of at most 4"):
        dc.load_grown(net, {"state_dict": net.state_dict(), "insertions": [dict(rec)] * 5000})
    padded = {**net.state_dict(), **{f"x{i}": torch.zeros(1) for i in range(5000)}}
    wide = {**rec, "state_shape": [4096], "width": 4096}          # 4096 * (4097 + 3 * 4096) doubles = 537 MB each
    with pytest.raises(InputError, match=r"^saved\['insertions'\] == 5000, must be smaller on this machine"):
        dc.load_grown(net, {"state_dict": padded, "insertions": [dict(wide)] * 5000})
    assert built == []


# ---- a config file larger than any config: refused by its size, never read ----------------------------------

@pytest.mark.parametrize("command", ["bounds", "run", "saturation", "grow", "sweep", "validity"])
def test_a_sparse_gigabyte_config_is_refused_by_its_size(tmp_path, command):
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:          # 1.5 GB, sparse: no disk used
        fh.truncate(1536 * 2**20)
    args = [command, "--config", big] + ([] if command == "bounds" else ["--out", tmp_path / "o"])
    args += ["--draws", "2"] if command == "validity" else []
    line = _refused(_cli(args, tmp_path), "--config", "bytes", "not read")
    assert str(1536 * 2**20) in line


# ---- prove: a FIFO, a degree-64 chain, SIGTERM, the memory budget -------------------------------------------

def _poly_chain(tmp_path: Path, links: int) -> Path:
    """``x{i+1} = x{i}^64 + x{i}``: z3's non-linear core runs far past its own timeout on it."""
    premises = ", ".join(f'"x{i + 1} = x{i}^64 + x{i}"' for i in range(links))
    path = tmp_path / f"poly{links}.toml"
    path.write_text(f'name = "poly"\nassume = ["x0 >= 1"]\npremises = [{premises}]\nconclusion = "x{links} >= 1"\n')
    return path


def test_prove_on_a_fifo_is_refused_not_blocked(tmp_path):
    fifo = tmp_path / "chain.toml"
    os.mkfifo(fifo)
    _refused(_cli(["prove", "--chain", fifo], tmp_path), "--chain", "FIFO")


@pytest.mark.parametrize("links, timeout", [(6, 1), pytest.param(40, 5, marks=pytest.mark.slow)])
def test_prove_a_degree_64_chain_stops_within_seconds_of_timeout_and_names_the_limit(tmp_path, links, timeout):
    """z3 alone runs far past the query limit on this chain: the limit is enforced (the query stops as UNKNOWN
    naming it, exit 1) before the hang guard (GUARD_S); the wall time is printed, not asserted."""
    r = _cli(["prove", "--chain", _poly_chain(tmp_path, links), "--timeout", timeout], tmp_path, timeout=GUARD_S + timeout)
    assert r["rc"] == 1, (r["rc"], r["err"][-2000:])
    assert "UNKNOWN: time limit per query hit" in r["out"] and f"--timeout {timeout} s" in r["out"], r["out"][-800:]
    if "wall" in r:        # the query limit + 2 s grace + start-up: reported; memory asserted
        print(f"prove with --timeout {timeout}: {r['wall']:.1f} s wall")
        assert r["kb"] < MAX_KB, r["kb"]


def test_prove_stops_within_seconds_of_sigterm(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    """SIGTERM inside a solver query whose limit is an hour: the command ends (143) well before the query would
    (the hang guard GUARD_S is 12x shorter than the query limit), and no solver process is left."""
    p = subprocess.Popen([sys.executable, "-m", "depthcert", "prove", "--chain", str(_poly_chain(tmp_path, 6)),
                          "--timeout", "3600"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=tmp_path, start_new_session=True)
    time.sleep(6)            # started and inside a solver query (on a slow machine perhaps still starting: also 143)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=GUARD_S)          # past it: TimeoutExpired fails the test (waited for the query)
    finally:
        os.killpg(p.pid, signal.SIGKILL) if p.poll() is None else None
    print(f"prove ended {time.monotonic() - t0:.1f} s after SIGTERM")
    assert p.returncode == 143, (p.returncode, err[-500:])
    leftover = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert not leftover, f"solver processes left: {leftover}"


def test_prove_memory_budget_is_enforced_and_named():
    """In a fresh interpreter (what ``depthcert prove`` is): inside the full test run the parent has most of what
    the solver needs already mapped, and the child can then prove within even 1 MB more."""
    code = """
import sys
from pathlib import Path
from proofs_check import load_chain
from proofs_check._isolate import check_chain_limited

chain = load_chain(Path(sys.argv[1]) / "examples" / "chains" / "descent_lemma.toml")
assert check_chain_limited(chain, timeout_s=5).entailed is True          # the default budget holds a real chain
starved = check_chain_limited(chain, timeout_s=5, memory=1 << 20)        # 1 MB: not even z3 fits
assert starved.entailed is None and starved.reason.startswith("memory budget hit"), starved.reason
assert "1 MB" in starved.reason
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=300, env=env,
                       cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


# ---- sweep --address: seconds, not minutes ------------------------------------------------------------------

@pytest.mark.parametrize("address, words", [("127.0.0.1:1", ("reachable", "refused")), ("not-an-address", ("HOST:PORT",))],
                         ids=["nobody-listens", "garbage"])
def test_sweep_on_an_unreachable_ray_address_fails_within_seconds(tmp_path, address, words):
    """Refused by the address check (its words, one line, exit 2, the CPU ratio of ``_refused``), not by Ray's own
    connection retries (minutes, another message); the wall time is printed, not asserted."""
    pytest.importorskip("ray")
    (tmp_path / "exp.toml").write_text((ROOT / "depthcert" / "configs" / "demo.toml").read_text())
    (tmp_path / "s.toml").write_text('base = "exp.toml"\n[grid]\nseed = [0]\n')
    r = _cli(["sweep", "--config", tmp_path / "s.toml", "--out", tmp_path / "o", "--backend", "ray",
              "--address", address], tmp_path)
    _refused(r, "--address", *words)
    if "wall" in r:
        print(f"sweep --address {address}: refused after {r['wall']:.1f} s wall")
