"""Fuzz round 5 (issue 39), item 0: nothing runs from data, nothing of the user's is overwritten, one writer
per folder, a record counted once.

Each case is a row of a table ``(command line, expected exit, what must hold afterwards)``; the command
lines are built in a fresh folder by the fixtures below. Every row fails on the code before issue 39:
a crafted CIFAR batch ran its payload (the marker file appeared), ``grow --save-model`` replaced the
``--model`` file, ``bounds --plot DIR`` wrote ``DIR.png``, ``run`` / ``saturation`` / ``demo`` / ...
wrote a folder another process held, and a draw file copied over another was counted twice.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from depthcert.cli import main
from plumbing.lock import LOCK_NAME
from tests._no_work import forbid_work

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "cli" / "_tiny_user.py"
SETUP = ROOT / "examples" / "setup.toml"
LIGHT_RUN = ("[sizes]\nM = 2000\nK = 2000\npopulation = 2000\n[reference]\nn = 500\n"
             "[block_training]\nsteps = 40\nbatch_size = 256\n")


def _one_line(capsys) -> str:
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("depthcert: warning:")]
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


# ---- 1. Code from a data file: a crafted CIFAR batch is refused and its payload never runs -------------------

class _Payload:
    """Unpickled by plain ``pickle.load``, this creates ``marker``."""

    def __init__(self, marker: Path, how: str):
        self.marker, self.how = str(marker), how

    def __reduce__(self):
        if self.how == "open":
            return open, (self.marker, "w")
        return os.system, (f"touch '{self.marker}'",)


def _crafted_cifar(folder: Path, marker: Path, how: str, protocol: int) -> None:
    folder.mkdir()
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (20, 3072), dtype=np.uint8), b"labels": [int(v) for v in rng.integers(0, 10, 20)]}
        if name == "data_batch_3":
            batch[b"data"] = _Payload(marker, how)
        (folder / name).write_bytes(pickle.dumps(batch, protocol=protocol))


@pytest.mark.parametrize("how", ["open", "system"])
@pytest.mark.parametrize("protocol", [2, pickle.HIGHEST_PROTOCOL])
def test_saturation_on_crafted_cifar_batches_exits_2_and_runs_nothing(tmp_path, capsys, how, protocol):
    marker = tmp_path / "marker"
    _crafted_cifar(tmp_path / "cifar", marker, how, protocol)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'seed = 0\n[task]\nkind = "cifar"\npath = "{tmp_path / "cifar"}"\nn_test = 40\n'
                   '[model]\nkind = "mlp"\nwidth = 4\ndepth = 1\n[reference]\nn = 40\nsteps = 2\nbatch_size = 20\n'
                   'anneal_steps = 0\n[saturation]\nprobe_n = 20\nn_chunks = 2\nbatch_size = 20\nbeta_n = 8\nwidth = 4\n')
    code = main(["saturation", "--config", str(cfg), "--out", str(tmp_path / "o")])
    line = _one_line(capsys)
    assert not marker.exists(), "the pickle payload ran"
    assert code == 2 and "data_batch_3" in line and "refused" in line, (code, line)


def _crafted_torch_file(path: Path, marker: Path) -> Path:
    """A ``torch.save`` file (zip + pickle) whose unpickling by plain ``torch.load`` would create ``marker``."""
    import torch

    torch.save({"state_dict": {"w": _Payload(marker, "open")}, "step": 0}, path)
    return path


def _load_weights(t: Path, marker: Path):
    return main(["saturation", "--model", f"{TINY}:model", "--data", f"{TINY}:data",
                 "--weights", str(_crafted_torch_file(t / "w.pt", marker))])


def _load_checkpoint(t: Path, marker: Path):
    from numerics.studies.growth._stored import _checkpoint

    return _checkpoint(_crafted_torch_file(t / "checkpoint.pt", marker))


def _load_hf_dir(t: Path, marker: Path):
    from transformers import GPT2Config

    from numerics.interop.hf import HFCausalLM

    folder = t / "hf"
    folder.mkdir()
    GPT2Config(n_embd=8, n_layer=1, n_head=2, vocab_size=16, n_positions=8).save_pretrained(folder)
    _crafted_torch_file(folder / "pytorch_model.bin", marker)
    return HFCausalLM(str(folder))


def _load_cifar(t: Path, marker: Path):
    from numerics.data import load_cifar

    _crafted_cifar(t / "cifar", marker, "open", pickle.HIGHEST_PROTOCOL)
    return load_cifar(t / "cifar")


#: Every loader of a file a user names (or a folder they point at): ``(loader(tmp, marker), CLI exit or None)``.
#: The marker file is what the crafted file's pickle payload would create, were it run.
LOADERS = {
    "CIFAR batches (load_cifar)": (_load_cifar, None),
    "--weights (saturation --model)": (_load_weights, 2),
    "growth checkpoint.pt (resume)": (_load_checkpoint, None),
    "Hugging Face pytorch_model.bin (model.kind = hf)": (_load_hf_dir, None),
}


@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_no_loader_runs_a_pickle_payload(tmp_path, capsys, loader):
    load, cli_exit = LOADERS[loader]
    if "Hugging Face" in loader:
        pytest.importorskip("transformers")
    marker = tmp_path / "marker"
    if cli_exit is None:
        with pytest.raises(Exception) as exc:     # refused: the exception type is the loader's (named file)
            load(tmp_path, marker)
        assert not isinstance(exc.value, (SystemExit, KeyboardInterrupt))
    else:
        assert load(tmp_path, marker) == cli_exit
        _one_line(capsys)
    assert not marker.exists(), f"{loader}: the pickle payload ran"


def test_the_payloads_do_run_under_plain_pickle(tmp_path):
    """Power of the rows above: read with plain ``pickle`` / ``torch.load(weights_only=False)``, each crafted file
    creates its marker (so a marker's absence means the loader refused, not that the payload was inert)."""
    import torch

    for how in ("open", "system"):
        marker = tmp_path / f"m-{how}"
        _crafted_cifar(tmp_path / f"c-{how}", marker, how, 2)
        pickle.loads((tmp_path / f"c-{how}" / "data_batch_3").read_bytes())
        assert marker.exists()
    marker = tmp_path / "m-torch"
    torch.load(_crafted_torch_file(tmp_path / "w.pt", marker), weights_only=False)
    assert marker.exists()


def test_no_code_path_reaches_plain_pickle_on_a_file():
    """Static audit of the package: no ``pickle.load``/``loads``, ``np.load(allow_pickle=True)``, ``joblib.load``
    or ``torch.load`` without ``weights_only=True``; the CIFAR loader's restricted unpickler is the one Unpickler."""
    import re

    bad = []
    for pkg in ("bounds", "numerics", "plumbing", "proofs_check", "depthcert"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for m in re.finditer(r"pickle\.loads?\(|allow_pickle\s*=\s*True|joblib\.load|dill\.load|torch\.load\(([^)]*)\)"
                                 r"|pickle\.Unpickler\b", text):
                line = text[:m.start()].count("\n") + 1
                if m.group(0).startswith("torch.load") and "weights_only=True" in (m.group(1) or ""):
                    continue
                if m.group(0) == "pickle.Unpickler" and path == ROOT / "numerics" / "_pickled_batch.py":
                    continue                      # _BatchUnpickler: find_class refuses every other global
                bad.append(f"{path.relative_to(ROOT)}:{line}: {m.group(0)}")
    assert not bad, bad


# ---- 2. A user's file destroyed: outputs that are inputs, directories, devices, or each other ----------------

def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.py"
    shutil.copy(TINY, victim)
    return victim


def _grow(tmp_path: Path, *extra: str) -> list[str]:
    v = _victim(tmp_path)
    return ["grow", "--model", f"{v}:model", "--data", f"{v}:data", "--max-blocks", "1", "--steps", "2",
            "--out", str(tmp_path / "o"), *extra]


def _weights(tmp_path: Path) -> Path:
    import torch

    sys.path.insert(0, str(TINY.parent))
    try:
        import _tiny_user
    finally:
        sys.path.pop(0)
    path = tmp_path / "w.pt"
    torch.save(_tiny_user.model().state_dict(), path)
    return path


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _run_cfg(tmp_path: Path) -> Path:
    (tmp_path / "o").mkdir()
    cfg = tmp_path / "o" / "bounds_config.toml"
    cfg.write_text(LIGHT_RUN)
    return cfg


#: ``(case, argv(tmp_path), exit, the files that must be unchanged (path -> bytes read before) or absent, words of
#: the one line)``; a file listed as unchanged that the command replaced, or an absent one it wrote, fails the row.
OUTPUT_CASES = [
    ("save-model over the --model file", lambda t: _grow(t, "--save-model", str(t / "victim.py")), 2,
     ["victim.py"], [], ["--save-model", "--model"]),
    ("save-model over the --data file", lambda t: _grow(t, "--data", f"{shutil.copy(TINY, t / 'd.py')}:data",
                                                       "--save-model", str(t / "d.py")), 2,
     ["d.py"], [], ["--save-model", "--data"]),
    ("save-model over --weights", lambda t: _grow(t, "--weights", str(_weights(t)), "--save-model", str(t / "w.pt")), 2,
     ["w.pt"], [], ["--save-model", "--weights"]),
    ("save-model via a symlink to the --model file",
     lambda t: _grow(t, "--save-model", str(os.symlink(t / "victim.py", t / "link.pt") or t / "link.pt")), 2,
     ["victim.py"], [], ["--save-model", "--model"]),
    ("save-model is a directory", lambda t: _grow(t, "--save-model", str(Path(t / "adir").mkdir() or t / "adir")), 2,
     [], ["adir/grow.json"], ["--save-model", "directory"]),
    ("save-model is a FIFO", lambda t: _grow(t, "--save-model", str(_fifo(t))), 2,
     [], ["o/grow.json"], ["--save-model", "regular file"]),
    ("save-model over grow's own grow.json", lambda t: _grow(t, "--save-model", str(t / "o" / "grow.json")), 2,
     [], ["o/grow.json"], ["--save-model", "two outputs"]),
    ("bounds --plot DIR", lambda t: ["bounds", "--config", str(SETUP), "--plot", str(Path(t / "pics").mkdir() or t / "pics")],
     2, [], ["pics.png"], ["--plot", "directory"]),
    ("bounds --plot X --plot-terms X", lambda t: ["bounds", "--config", str(SETUP), "--plot", str(t / "x.png"),
                                                  "--plot-terms", str(t / "x.png")], 2,
     [], ["x.png"], ["--plot-terms", "two outputs"]),
    ("bounds --plot X --plot-terms X.png (X without suffix is X.png)",
     lambda t: ["bounds", "--config", str(SETUP), "--plot", str(t / "x"), "--plot-terms", str(t / "x.png")], 2,
     [], ["x.png"], ["--plot-terms", "two outputs"]),
    ("bounds --plot over its --config", lambda t: ["bounds", "--config", str(shutil.copy(SETUP, t / "s.png")),
                                                   "--plot", str(t / "s.png")], 2,
     ["s.png"], [], ["--plot", "--config"]),
    ("run --config inside --out with the name of a file run writes",
     lambda t: ["run", "--config", str(_run_cfg(t)), "--out", str(t / "o")], 2,
     ["o/bounds_config.toml"], ["o/result.json"], ["--out", "bounds_config.toml", "--config"]),
]


@pytest.mark.parametrize("case,argv,code,unchanged,absent,words", OUTPUT_CASES, ids=[c[0] for c in OUTPUT_CASES])
def test_an_output_that_would_destroy_an_input_or_another_output_is_refused(tmp_path, capsys, monkeypatch, case, argv,
                                                                            code, unchanged, absent, words):
    args = argv(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in unchanged}
    work = forbid_work(monkeypatch)          # refused before any work: no training, figure, solver or process
    got = main(args)
    line = _one_line(capsys)
    assert got == code, (case, got, line)
    assert work == [], f"refused only after the work: {work}"
    for name, content in before.items():
        assert (tmp_path / name).read_bytes() == content, f"{name} was overwritten"
    for name in absent:
        assert not (tmp_path / name).exists(), f"{name} was written"
    assert all(w in line for w in words), (case, line)


def test_bounds_plot_without_suffix_reports_the_file_it_wrote(tmp_path, capsys):
    assert main(["bounds", "--config", str(SETUP), "--json", "--plot", str(tmp_path / "fig")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plot"] == str(tmp_path / "fig.png") and Path(out["plot"]).is_file()


def test_a_device_as_an_output_is_refused_before_any_work(capsys):
    assert main(["bounds", "--config", str(SETUP), "--plot", "/dev/null"]) == 2
    line = _one_line(capsys)
    assert "--plot" in line and "regular file" in line and "/dev/null" in line


# ---- 3. Two writers, one folder: every command writing a folder takes its lock -------------------------------

@pytest.fixture(scope="module")
def live_pid():
    """A live process of this host that is not this one (the lock's holder)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _locked(folder: Path, pid: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / LOCK_NAME).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "command": "other",
                                                "started": "2026-01-01T00:00:00Z"}))
    return folder


def _plot_dir(t: Path) -> Path:
    (t / "res").mkdir()
    return t / "res"


#: ``(command line, the folder it writes)``: each must refuse a folder another live process holds.
LOCK_CASES = {
    "run": (lambda t: ["run", "--config", str(t / "c.toml"), "--out", str(t / "o")], "o"),
    "saturation": (lambda t: ["saturation", "--config", str(t / "c.toml"), "--out", str(t / "o")], "o"),
    "saturation --model": (lambda t: ["saturation", "--model", f"{TINY}:model", "--data", f"{TINY}:data",
                                      "--out", str(t / "o")], "o"),
    "demo": (lambda t: ["demo", "--out", str(t / "o")], "o"),
    "study": (lambda t: ["study", "agmax-depth", "--quick", "--out", str(t / "o")], "o"),
    "certify": (lambda t: ["certify", "--model", f"{TINY}:model", "--data", f"{TINY}:data", "--out", str(t / "o")], "o"),
    "plot --out": (lambda t: ["plot", str(_plot_dir(t)), "--kind", "region", "--out", str(t / "o")], "o"),
    "plot (default DIR/plots)": (lambda t: ["plot", str(_plot_dir(t)), "--kind", "region"], "res/plots"),
    "grow --model (default ./grow_out)": (lambda t: ["grow", "--model", f"{TINY}:model", "--data", f"{TINY}:data"],
                                          "grow_out"),
    "grow --config": (lambda t: ["grow", "--config", str(t / "c.toml"), "--out", str(t / "o")], "o"),
    "validity": (lambda t: ["validity", "--config", str(t / "c.toml"), "--draws", "2", "--out", str(t / "o")], "o"),
    "sweep": (lambda t: ["sweep", "--config", str(t / "c.toml"), "--out", str(t / "o")], "o"),
    "reproduce": (lambda t: ["reproduce", "--suite", "quick", "--out", str(t / "o")], "o"),
}


@pytest.mark.parametrize("case", sorted(LOCK_CASES))
def test_every_command_writing_a_folder_refuses_one_another_process_holds(tmp_path, capsys, monkeypatch, live_pid, case):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text(LIGHT_RUN)
    argv, folder = LOCK_CASES[case]
    args = argv(tmp_path)
    held = _locked(tmp_path / folder, live_pid)
    work = forbid_work(monkeypatch)          # refused before any work: no training, figure, solver or process
    code = main(args)
    line = _one_line(capsys)
    named = str(held) in line or f"--out {folder} " in line      # as given: absolute, or ./grow_out relative
    assert code == 2 and f"pid {live_pid}" in line and named, (case, code, line)
    assert work == [], f"refused only after the work: {work}"
    assert sorted(p.name for p in held.iterdir()) == [LOCK_NAME], "the command wrote into a held folder"


def test_a_second_run_on_a_folder_a_running_process_holds_exits_2(tmp_path, capsys):
    """A real holder: another process has taken the lock with :class:`FolderLock` and is still running."""
    code = ("import sys, time\nfrom plumbing.lock import FolderLock\nFolderLock(sys.argv[1], 'run').acquire()\n"
            "print('held', flush=True)\ntime.sleep(3600)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "o")], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        (tmp_path / "c.toml").write_text(LIGHT_RUN)
        assert main(["run", "--config", str(tmp_path / "c.toml"), "--out", str(tmp_path / "o")]) == 2
        line = _one_line(capsys)
        assert f"pid {holder.pid}" in line and str(tmp_path / "o") in line
        assert not (tmp_path / "o" / "result.json").exists()
    finally:
        holder.kill()
        holder.wait()


# ---- 4. A record counted twice: a draw file copied over another is recomputed, with a note naming it ---------

def test_validity_recomputes_a_draw_file_copied_over_another(tmp_path, capsys):
    cfg = tmp_path / "exp.toml"
    cfg.write_text("[sizes]\nM = 500\nK = 500\npopulation = 500\n[reference]\nn = 200\n[block_training]\nsteps = 10\n"
                   "batch_size = 128\n[validity]\ngroup = 1\npopulation = 5000\n")
    out = tmp_path / "v"
    argv = ["validity", "--config", str(cfg), "--draws", "2", "--out", str(out), "--no-progress", "--json"]
    assert main(argv) in (0, 1)
    first = json.loads(capsys.readouterr().out)
    d0, d1 = out / "draws" / "draw_000000.json", out / "draws" / "draw_000001.json"
    own = json.loads(d1.read_text())
    assert json.loads(d0.read_text())["index"] == 0 and own["index"] == 1
    shutil.copy(d0, d1)                                     # the copy's own index says 0
    assert main(argv) in (0, 1)
    captured = capsys.readouterr()
    again = json.loads(captured.out)
    assert str(d1) in captured.err and "draw_000000" in captured.err and "recomputing" in captured.err, captured.err
    assert json.loads(d1.read_text())["index"] == 1
    kept = ("integrity", "seconds")                         # the same draw as before the copy: recomputed, not kept
    assert {k: v for k, v in json.loads(d1.read_text()).items() if k not in kept} == \
        {k: v for k, v in own.items() if k not in kept}
    assert again["routes"] == first["routes"]


def test_a_sweep_cell_copied_over_another_is_recomputed(tmp_path):
    """Sweep cells carry the hash of their own full config (per key): a copied cell is stale, recomputed, named."""
    from numerics.studies.sweeps import load_cells, make_spec, sweep

    spec = make_spec({"sizes": {"M": 1000, "K": 1000, "population": 1000}}, {"model.depth": [1, 2]})
    sweep(spec, tmp_path, runner="tests.numerics.studies._fake_runner:run", progress=False, note=None, workers=1)
    a, b = (tmp_path / "cells" / c.key / "result.json" for c in spec.cells)
    own = json.loads(b.read_text())
    shutil.copy(a, b)
    notes = []
    sweep(spec, tmp_path, runner="tests.numerics.studies._fake_runner:run", progress=False, note=notes.append,
          workers=1)
    assert any(spec.cells[1].key in n and "recomputing" in n for n in notes), notes
    assert json.loads(b.read_text())["value"] == own["value"]
    cells = load_cells(tmp_path)                          # each value recomputed from the cell's own config
    assert [c["value"] for c in cells] == [10.0 * c["config"]["model"]["depth"] + c["config"]["seed"] for c in cells]
    assert len({c["value"] for c in cells}) == 2


def test_a_reproduce_seed_record_copied_over_another_is_recomputed(tmp_path, capsys):
    """``reproduce``'s per-seed records are keyed by hashes of (settings, seed): a copy is recomputed, with a note."""
    from numerics.studies.reproduce._studies import _stored_rows

    settings = {"seeds": [0, 1], "n": 3}
    assert _stored_rows(tmp_path, settings, lambda seed: {"seed": seed}) == [{"seed": 0}, {"seed": 1}]
    shutil.copy(tmp_path / "seed=0.json", tmp_path / "seed=1.json")
    capsys.readouterr()
    assert _stored_rows(tmp_path, settings, lambda seed: {"seed": seed}) == [{"seed": 0}, {"seed": 1}]
    assert "seed=1" in capsys.readouterr().err


def test_a_refused_command_leaves_no_folder_it_created(tmp_path, capsys):
    """The lock is taken on a folder made for it; a command refused before writing removes what it made."""
    out = tmp_path / "a" / "b" / "o"
    assert main(["run", "--config", str(tmp_path / "missing.toml"), "--out", str(out)]) == 2
    assert "--config" in _one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_crafted_kept_seed_of_the_pretrained_study_runs_nothing(tmp_path):
    """The pretrained study's resumable ``work_dir`` (``seed{k}.pkl``) is read by the restricted unpickler: a
    crafted file is refused by name and its payload never runs; a genuine record (numpy arrays, dicts) reads back."""
    import pickle

    import numpy as np

    from depthcert._study_pretrained import _pickle, _read_kept

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (Path.touch, (marker,))

    crafted = tmp_path / "seed0.pkl"
    crafted.write_bytes(pickle.dumps(({"config": {}}, Payload())))
    with pytest.raises(ValueError, match="not a seed record this study wrote"):
        _read_kept(crafted)
    assert not marker.exists()
    genuine = tmp_path / "seed1.pkl"
    _pickle(genuine, ({"config": {"steps": 40}, "gains": np.arange(6.0)}, None))
    rec, first = _read_kept(genuine)
    assert first is None and rec["config"] == {"steps": 40} and np.array_equal(rec["gains"], np.arange(6.0))
