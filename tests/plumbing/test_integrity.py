"""plumbing: config hashes and record states, the folder lock, limits read from the configuration alone."""
import json
import os
import socket
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from plumbing.config import MAX_NESTING, loads_toml, nesting_depth
from plumbing.lock import LOCK_NAME, FolderLock, FolderLockedError, lock_owner
from plumbing.store import ItemStore, MixedRecordsError, StoredFileError, config_hash, load_json, record_hash
from plumbing.validation import INT_MAX, InputError, Interval, check_schema


# --- config hashes and record states -------------------------------------------------------------

def test_hash_depends_on_config_kind_and_format_not_on_key_order():
    a = config_hash({"x": 1, "y": [1, 2]}, "k")
    assert a == config_hash({"y": [1, 2], "x": 1}, "k")
    assert len({a, config_hash({"x": 2, "y": [1, 2]}, "k"), config_hash({"x": 1, "y": [1, 2]}, "other"),
                config_hash({"x": 1.0000001, "y": [1, 2]}, "k")}) == 4


def test_hash_depends_on_the_package_version(monkeypatch):
    import plumbing.store

    a = config_hash({"x": 1}, "k")
    monkeypatch.setattr(plumbing.store, "package_version", lambda: "999.0")   # the installed version, from metadata
    assert config_hash({"x": 1}, "k") != a


def test_store_states_current_stale_corrupt_missing(tmp_path):
    store = ItemStore(tmp_path, hashes={"a": "h1", "b": "h2", "c": "h3"})
    store.put("a", {"v": 1})
    ItemStore(tmp_path, hashes="other").put("b", {"v": 2})          # made by another config
    (tmp_path / "c.json").write_text('{"v": ')                        # truncated
    assert [store.state(k)[0] for k in "abcd"] == ["current", "stale", "corrupt", "missing"]
    assert record_hash(load_json(tmp_path / "a.json")) == "h1"
    notes = []
    assert store.pending("abcd", notes.append) == ["b", "c", "d"]
    assert any(str(tmp_path / "c.json") in n for n in notes) and any("different configuration" in n for n in notes)
    with pytest.raises(StoredFileError, match="c.json"):
        store.get("c")
    with pytest.raises(StoredFileError, match="c.json"):
        store.load("abcd")
    with pytest.raises(MixedRecordsError, match=r"1 stored record\(s\).*: b;"):
        store.load("abd")
    assert store.load("ad") == [{"v": 1, "integrity": load_json(tmp_path / "a.json")["integrity"]}]


def test_store_without_hashes_reads_as_before_but_names_a_corrupt_record(tmp_path):
    store = ItemStore(tmp_path)
    store.put("a", {"x": 1.5})
    assert store.get("a") == {"x": 1.5} and store.get("zz") is None
    (tmp_path / "b.json").write_bytes(b"\xff\xfe")
    with pytest.raises(StoredFileError, match="not UTF-8"):
        store.records()


def test_deep_json_is_named_not_a_recursion_error(tmp_path):
    (tmp_path / "d.json").write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(StoredFileError, match="nested"):
        load_json(tmp_path / "d.json")


# --- the folder lock ------------------------------------------------------------------------------

def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_record_copied_over_another_is_misplaced_recomputed_and_refused_by_load(tmp_path):
    """issue 39: a record whose own key (e.g. a stored draw index) is not its file's key is never counted twice."""
    import shutil

    store = ItemStore(tmp_path, hashes="h", own_key=lambda r: f"d{r['index']}")
    store.put("d0", {"index": 0, "x": 1.0}), store.put("d1", {"index": 1, "x": 2.0})
    assert [store.state(k)[0] for k in ("d0", "d1")] == ["current", "current"]
    shutil.copy(store.path("d0"), store.path("d1"))
    state, _, problem = store.state("d1")
    assert state == "misplaced" and "d0" in problem and "d1" in problem
    notes = []
    assert store.pending(["d0", "d1"], notes.append) == ["d1"]
    assert len(notes) == 1 and str(store.path("d1")) in notes[0] and "recomputing" in notes[0]
    with pytest.raises(StoredFileError, match="d1.json: holds the record of d0"):
        store.load(["d0", "d1"])
    with pytest.raises(StoredFileError):
        store.get("d1")
    plain = ItemStore(tmp_path, hashes="h")            # without own_key: as before (the hash alone is checked)
    assert plain.state("d1")[0] == "current"


@pytest.mark.parametrize("outputs,inputs,fragment", [
    ([("--o", "IN")], [("--model", "IN")], "--o == '{t}/IN', must be a path that is not an input of this command (--model"),
    ([("--o", "LINK")], [("--model", "IN")], "not an input of this command (--model"),
    ([("--o", "HARD")], [("--model", "IN")], "not an input of this command (--model"),
    ([("--o", "DIR")], [], "must be a file path, not a directory"),
    ([("--o", "FIFO")], [], "must be a regular file path (not a device, FIFO or socket)"),
    ([("--a", "new.png"), ("--b", "sub/../new.png")], [], "--b == '{t}/sub/../new.png', must be a path other than --a's"),
])
def test_check_output_paths_refuses_inputs_folders_devices_and_shared_outputs(tmp_path, outputs, inputs, fragment):
    from plumbing.io import check_output_paths

    (tmp_path / "IN").write_text("user's file")
    (tmp_path / "LINK").symlink_to(tmp_path / "IN")
    os.link(tmp_path / "IN", tmp_path / "HARD")
    (tmp_path / "DIR").mkdir(), (tmp_path / "sub").mkdir()
    os.mkfifo(tmp_path / "FIFO")
    t = str(tmp_path)
    with pytest.raises(InputError) as exc:
        check_output_paths([(f, f"{t}/{p}") for f, p in outputs], [(f, f"{t}/{p}") for f, p in inputs])
    assert fragment.format(t=t) in str(exc.value) and "\n" not in str(exc.value)
    assert (tmp_path / "IN").read_text() == "user's file"
    # what is allowed: a new file, an existing regular file that is no input, no output at all
    (tmp_path / "old.json").write_text("{}")
    check_output_paths([("--o", f"{t}/new"), ("--p", f"{t}/old.json"), ("--q", None)], [("--model", f"{t}/IN"), ("--x", None)])


def test_a_second_writer_is_refused_naming_the_owner(tmp_path):
    with FolderLock(tmp_path, "sweep"):
        with pytest.raises(FolderLockedError) as exc:
            FolderLock(tmp_path, "grow").acquire()
        assert f"pid {os.getpid()}" in str(exc.value) and "(sweep," in str(exc.value)
        assert lock_owner(tmp_path)["command"] == "sweep"
    assert not (tmp_path / LOCK_NAME).exists()
    with FolderLock(tmp_path, "grow"):                     # released: the next writer gets it
        assert lock_owner(tmp_path)["command"] == "grow"


def test_lock_is_released_on_an_exception(tmp_path):
    with pytest.raises(RuntimeError):
        with FolderLock(tmp_path, "sweep"):
            raise RuntimeError
    assert lock_owner(tmp_path) is None


def test_a_stale_lock_is_taken_over_with_a_note(tmp_path):
    pid = _dead_pid()
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "command": "sweep"}))
    notes = []
    with FolderLock(tmp_path, "validity", note=notes.append):
        assert lock_owner(tmp_path)["pid"] == os.getpid()
    assert len(notes) == 1 and f"pid {pid}" in notes[0] and "no longer running" in notes[0]


def test_a_lock_of_another_host_is_not_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": _dead_pid(), "host": "elsewhere", "command": "sweep"}))
    with pytest.raises(FolderLockedError, match="on elsewhere"):
        FolderLock(tmp_path, "sweep").acquire()


def test_only_one_of_many_concurrent_writers_gets_the_lock(tmp_path):
    """The winner holds the lock until every writer has tried (it waits for its stdin to close), not for a fixed
    time: a writer started late on a slow or loaded machine still finds the lock held."""
    code = ("import sys; from plumbing.lock import FolderLock, FolderLockedError\n"
            "try:\n    l = FolderLock(sys.argv[1], 'w').acquire()\nexcept FolderLockedError:\n    print('refused', flush=True); sys.exit(3)\n"
            "print('held', flush=True); sys.stdin.read(); l.release()")
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        said = sorted(p.stdout.readline().strip() for p in procs)     # every writer has tried
    finally:
        for p in procs:
            p.stdin.close()
    codes = sorted(p.wait(timeout=300) for p in procs)
    assert said == ["held", "refused", "refused", "refused"] and codes == [0, 3, 3, 3], (said, codes)


# --- limits from the configuration alone ----------------------------------------------------------

@given(st.integers(min_value=INT_MAX + 1, max_value=10**400) | st.integers(max_value=-INT_MAX - 1, min_value=-10**400))
@settings(max_examples=30, deadline=None)
def test_integers_beyond_int64_are_refused_by_integer_rules(value):
    with pytest.raises(InputError, match="at most 9223372036854775807"):
        Interval(None, None, integer=True).check("k", value)


def test_integers_beyond_float_range_are_refused_by_real_rules():
    with pytest.raises(InputError, match=r"k == 100000\.\.\.\(401 digits\).*float range"):
        Interval(0).check("k", 10**400)
    assert Interval(0).check("k", 10**300) == 1e300
    assert Interval(1, integer=True).check("k", INT_MAX) == float(INT_MAX)
    with pytest.raises(InputError, match="sec.n == 100000"):
        check_schema({"sec": {"n": 10**30}}, {"": {}, "sec": {"n": Interval(8, integer=True)}})


@pytest.mark.parametrize("text", ["x = " + "[" * 20000 + "]" * 20000, "x = " + "{a = " * 3000 + "1" + "}" * 3000,
                                  "a." * 3000 + "b = 1", "[" + "a." * 40 + "b]\nc = 1",
                                  "x = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)])
def test_deeply_nested_toml_is_refused_naming_the_file(text):
    with pytest.raises(InputError, match=r"--config == 'f\.toml: nested.*at most 32 deep"):
        loads_toml(text, "--config", "f.toml")


def test_nesting_at_the_limit_is_accepted():
    text = "x = " + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1)
    assert nesting_depth(loads_toml(text, "--config", "f.toml")) == MAX_NESTING
