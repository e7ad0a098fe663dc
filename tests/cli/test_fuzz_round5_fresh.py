"""Fuzz round 5 (issue 39), acceptance: 30 fresh hostile inputs across every command and the public API.

Each row is ``(id, kind, build, expect, words)``: ``build(tmp)`` writes what the input needs under ``tmp``
and returns the command line (``kind == "cli"``) or the Python source of one API call (``kind == "api"``,
run after :data:`PRELUDE`). ``expect`` is the exit code the row must end with: 2 for a refusal (one line
on stderr naming each of ``words``: the argument, and where useful the value or range), 0 for a correct
result. No row may print a Python traceback, print more than one error line, or run past its time limit.

The rows run in-process under pytest (fast). ``python tests/cli/test_fuzz_round5_fresh.py [ID ...]`` runs every
row (or those named) in its own process under ``/usr/bin/time`` and prints the table of the issue's closing
note (outcome, exit code, wall and CPU seconds, peak memory); ``FUZZ_CODE=/other/checkout`` runs the same rows
against another checkout's code (the "before" column). The starting point of the next round: add rows.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "cli" / "_tiny_user.py"
SETUP = ROOT / "examples" / "setup.toml"

#: The user's module of the rows: factories and data functions that are wrong in one way each.
USER = '''\
import sys
sys.path.insert(0, {tiny_dir!r})
import torch
from torch import nn
from _tiny_user import model as good_model, data as good_data, Tiny


def not_a_module():
    return "a string, not a network"


def no_parameters():
    return nn.Sequential(nn.Identity())


def half_model():
    torch.manual_seed(0)
    return Tiny().half()


def meta_model():
    with torch.device("meta"):
        return Tiny()


def data_list():
    return [1, 2, 3]


def data_generator():
    for role, xy in good_data().items():
        yield role, xy


def data_empty():
    return {{role: (x[:0], y[:0]) for role, (x, y) in good_data().items()}}


def data_mismatched():
    return {{role: (x, y[:-7]) for role, (x, y) in good_data().items()}}


def data_float_labels():
    return {{role: (x, y.double() + 0.5) for role, (x, y) in good_data().items()}}


def data_wrong_width():
    return {{role: (torch.cat([x, x], 1), y) for role, (x, y) in good_data().items()}}


def data_missing_roles():
    return {{"probe": good_data()["probe"]}}


data_not_callable = 7
'''

#: What an API row runs first (in-process and in the measurement's subprocess alike).
PRELUDE = f'''\
import sys
sys.path.insert(0, {str(TINY.parent)!r})
import torch
from torch import nn
import depthcert as dc
from _tiny_user import model as _m, data as _d
model, data = _m(), _d()
'''


def _user(t: Path) -> Path:
    path = t / "user_code.py"
    if not path.exists():
        path.write_text(USER.format(tiny_dir=str(TINY.parent)))
    return path


def _own(command: str, model: str = "good_model", data: str = "good_data", *extra: str):
    """``depthcert COMMAND --model user_code.py:MODEL --data user_code.py:DATA EXTRA``."""
    def build(t: Path) -> list[str]:
        u = _user(t)
        return [command, "--model", f"{u}:{model}", "--data", f"{u}:{data}", *extra]
    return build


def _file(name: str, content: bytes | str, command: str, option: str, *extra: str, out: bool = False):
    """A file ``name`` holding ``content``, given as ``command OPTION name EXTRA`` (``--out t/o`` when ``out``)."""
    def build(t: Path) -> list[str]:
        p = t / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        return [command, option, str(p), *extra, *(["--out", str(t / "o")] if out else [])]
    return build


def _argv(*args: str, out: bool = False):
    def build(t: Path) -> list[str]:
        return [*(a.replace("{t}", str(t)) for a in args), *(["--out", str(t / "o")] if out else [])]
    return build


def _symlink_loop(t: Path) -> list[str]:
    (t / "a").symlink_to(t / "b")
    (t / "b").symlink_to(t / "a")
    return ["demo", "--out", str(t / "a")]


def _out_under_a_file(t: Path) -> list[str]:
    """An ``--out`` below a regular file (a read-only folder proves nothing when the tests run as root)."""
    (t / "afile").write_text("x")
    return ["run", "--config", str(_light_run(t)), "--out", str(t / "afile" / "o")]


def _sweep(grid: str, *extra: str):
    def build(t: Path) -> list[str]:
        _light_run(t)
        (t / "sw.toml").write_text('base = "c.toml"\n' + grid)
        return ["sweep", "--config", str(t / "sw.toml"), *extra, "--out", str(t / "o"), "--no-progress"]
    return build


def _validity(*extra: str):
    def build(t: Path) -> list[str]:
        return ["validity", "--config", str(_light_run(t)), *extra, "--out", str(t / "o"), "--no-progress"]
    return build


def _weights_empty(t: Path) -> list[str]:
    (t / "empty.pt").write_bytes(b"")
    return [*_own("saturation")(t), "--weights", str(t / "empty.pt")]


def _light_run(t: Path) -> Path:
    cfg = t / "c.toml"
    cfg.write_text("[sizes]\nM = 2000\nK = 2000\npopulation = 2000\n[reference]\nn = 500\n"
                   "[block_training]\nsteps = 40\nbatch_size = 256\n")
    return cfg


def _plot_empty(t: Path) -> list[str]:
    (t / "results").mkdir()
    return ["plot", str(t / "results"), "--kind", "bound-vs-M", "--out", str(t / "plots")]


def _model_not_python(t: Path) -> list[str]:
    (t / "model.txt").write_text("this is not python (\n")
    return ["certify", "--model", f"{t / 'model.txt'}:model", "--data", f"{TINY}:data"]


def _load_grown_file(t: Path) -> str:
    (t / "grown.bin").write_bytes(b"\x00garbage\xff" * 10)
    return f"dc.load_grown(model, {str(t / 'grown.bin')!r})"


def _api(source: str):
    return lambda t: source


# (id, kind, build, expected exit code, words the refusal must hold)
ROWS = [
    # -- bounds: config files that are not configs, values that are not numbers, outputs in new folders
    ("bounds-empty-config", "cli", _file("empty.toml", b"", "bounds", "--config"), 2, ["L_test_old", "missing"]),
    ("bounds-binary-config", "cli", _file("bin.toml", bytes(range(256)) * 4, "bounds", "--config"), 2,
     ["--config", "utf-8"]),
    ("bounds-M-nan", "cli", _file("nan.toml", SETUP.read_text().replace("M = 200000", "M = nan"), "bounds", "--config"),
     2, ["M == nan"]),
    ("bounds-M-string", "cli", _file("s.toml", SETUP.read_text().replace("M = 200000", 'M = "many"'), "bounds",
                                     "--config"), 2, ["M == 'many'"]),
    ("bounds-level-nan", "cli", _argv("bounds", "--config", str(SETUP), "--level", "nan"), 2, ["level == nan"]),
    ("bounds-plot-in-a-new-folder", "cli", _argv("bounds", "--config", str(SETUP), "--plot", "{t}/new/p.png"), 0, []),
    # -- prove
    ("prove-chain-is-a-folder", "cli", _argv("prove", "--chain", "{t}"), 2, ["--chain", "regular"]),
    ("prove-chain-wrong-types", "cli", _file("ch.toml", 'name = 3\nassume = "x > 0"\nshow = [1, 2]\n', "prove",
                                             "--chain"), 2, ["show"]),
    ("prove-timeout-nan", "cli", _argv("prove", "--timeout", "nan"), 2, ["--timeout == nan"]),
    # -- run / demo: outputs that cannot be written, sizes that are not sizes
    ("demo-out-symlink-loop", "cli", _symlink_loop, 2, ["--out", "symbolic"]),
    ("run-out-under-a-file", "cli", _out_under_a_file, 2, ["--out", "Not a directory"]),
    ("run-negative-size", "cli", _file("neg.toml", "[sizes]\nM = -5\n", "run", "--config", out=True), 2,
     ["sizes.M == -5"]),
    ("run-unknown-section", "cli", _file("unk.toml", "[sizez]\nM = 2000\n", "run", "--config", out=True), 2,
     ["sizez"]),
    ("demo-estimate-zero", "cli", _argv("demo", "--estimate", "0", out=True), 2, ["--estimate == 0"]),
    # -- sweep / plot / reproduce / validity / study
    ("sweep-empty-grid", "cli", _sweep("[grid]\n"), 2, ["grid"]),
    ("sweep-workers-zero", "cli", _sweep('[grid]\n"sizes.M" = [2000]\n', "--workers", "0"), 2, ["--workers == 0"]),
    ("plot-empty-folder", "cli", _plot_empty, 2, ["DIR"]),
    ("reproduce-workers-negative", "cli", _argv("reproduce", "--suite", "quick", "--workers", "-3", out=True), 2,
     ["--workers == -3"]),
    ("validity-draws-zero", "cli", _validity("--draws", "0"), 2, ["--draws == 0"]),
    ("validity-group-zero", "cli", _validity("--draws", "2", "--group", "0"), 2, ["--group == 0"]),
    ("study-binary-config", "cli", _file("st.toml", b"\xff\xfe\x00\x00" * 64, "study", "--config",
                                         "growth-vs-scratch", out=True), 2, ["--config", "TOML"]),
    ("saturation-config-kind-a-list", "cli", _file("sl.toml", "[task]\nkind = []\n", "saturation", "--config",
                                                   out=True), 2, ["kind"]),
    # -- saturation / certify / grow on a user's own network, weights and data
    ("certify-model-not-python", "cli", _model_not_python, 2, ["--model", "FILE.py"]),
    ("certify-model-missing-attr", "cli", _own("certify", "no_such_factory"), 2, ["--model", "no_such_factory"]),
    ("saturation-factory-not-module", "cli", _own("saturation", "not_a_module"), 2, ["--model", "str"]),
    ("saturation-no-parameters", "cli", _own("saturation", "no_parameters"), 2, ["model", "no parameters"]),
    ("saturation-meta-model", "cli", _own("saturation", "meta_model"), 2, ["--model", "meta"]),
    ("grow-float16-model", "cli", _own("grow", "half_model", "good_data", "--steps", "2", "--max-blocks", "1",
                                       "--out", "g"), 2, ["model", "float16"]),
    ("saturation-weights-empty-file", "cli", _weights_empty, 2, ["--weights", "EOFError"]),
    ("saturation-output-key-on-a-tensor", "cli", _own("saturation", "good_model", "good_data", "--output", "logits"), 2,
     ["output == 'logits'"]),
    ("saturation-layout-nchw-on-2d", "cli", _own("saturation", "good_model", "good_data", "--layout", "NCHW"), 2,
     ["layout == 'NCHW'"]),
    ("saturation-data-list", "cli", _own("saturation", "good_model", "data_list"), 2, ["--data", "list"]),
    ("saturation-data-generator", "cli", _own("saturation", "good_model", "data_generator"), 2, ["--data", "generator"]),
    ("saturation-data-not-callable", "cli", _own("saturation", "good_model", "data_not_callable"), 2, ["--data", "int"]),
    ("saturation-data-wrong-width", "cli", _own("saturation", "good_model", "data_wrong_width"), 2, ["--data", "mat1"]),
    ("certify-data-missing-roles", "cli", _own("certify", "good_model", "data_missing_roles"), 2, ["--data", "signal"]),
    ("certify-data-empty", "cli", _own("certify", "good_model", "data_empty"), 2, ["data", "0 samples"]),
    ("certify-data-mismatched", "cli", _own("certify", "good_model", "data_mismatched"), 2, ["data", "same n"]),
    ("certify-data-float-labels", "cli", _own("certify", "good_model", "data_float_labels"), 2, ["y ==", "float labels"]),
    ("certify-sites-match-nothing", "cli", _own("certify", "good_model", "good_data", "--sites", "nowhere.*"), 2,
     ["sites == 'nowhere"]),
    ("certify-B-nan", "cli", _own("certify", "good_model", "good_data", "--B", "nan"), 2, ["B == nan"]),
    ("certify-kappa-inf", "cli", _own("certify", "good_model", "good_data", "--kappa", "inf"), 2, ["kappa == inf"]),
    # -- the public API (its error path: a ValueError / TypeError naming the argument, InputError a ValueError)
    ("api-insert-block-without-scan", "api", _api("dc.insert_block(model, 'nowhere.0')"), 2, ["scan"]),
    ("api-load-grown-a-path", "api", _load_grown_file, 2, ["saved"]),
    ("api-saturation-level-nan", "api", _api("dc.saturation(model, data['probe'], level=float('nan'))"), 2,
     ["level == nan"]),
    ("api-new-parameters-not-module", "api", _api("dc.new_parameters('model')"), 2, ["model"]),
    ("api-constants-data-none", "api", _api("dc.constants(model, 'blocks.0', None)"), 2, ["data"]),
    ("api-grow-float16", "api", _api("dc.grow(model.half(), data['train'], data['probe'], max_blocks=1, steps=2)"), 2,
     ["float16"]),
]


# ---- running a row ----------------------------------------------------------------------------------------

def _run_cli_in_process(argv: list[str], capsys) -> tuple[int, str]:
    from depthcert.cli import main

    try:
        code = main(argv)
    except SystemExit as exc:          # argparse
        code = exc.code
    return code, capsys.readouterr().err


def _run_api_in_process(source: str) -> tuple[int, str]:
    scope: dict = {}
    exec(PRELUDE, scope)
    try:
        exec(source, scope)
    except (ValueError, TypeError) as exc:      # InputError is a ValueError
        return 2, f"{type(exc).__name__}: {exc}\n"
    return 0, ""


def _error_lines(err: str) -> list[str]:
    return [ln for ln in err.strip().splitlines() if ln.strip() and not ln.startswith("depthcert: warning:")
            and "it/s]" not in ln and "cell/s]" not in ln and not ln.startswith("usage:") and not ln.startswith("  ")]


def _check(code: int, err: str, expect: int, words: list[str]) -> None:
    assert "Traceback" not in err, err[-3000:]
    assert code == expect, (code, err[-2000:])
    if expect == 2:
        lines = _error_lines(err)
        assert len(lines) == 1, lines
        assert all(w in lines[0] for w in words), (words, lines[0])


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_a_fresh_hostile_input_is_refused_in_one_line(row, tmp_path, capsys, monkeypatch):
    name, kind, build, expect, words = row
    monkeypatch.chdir(tmp_path)
    what = build(tmp_path)
    code, err = _run_cli_in_process(what, capsys) if kind == "cli" else _run_api_in_process(what)
    _check(code, err, expect, words)


def test_the_harness_flags_a_traceback_and_a_missing_argument_name():
    """The row check can fail: a traceback, a second line, a wrong code or an unnamed argument are each caught."""
    for code, err, words in [(2, "Traceback (most recent call last):\n", []), (2, "a\nb\n", []), (1, "x\n", []),
                             (2, "depthcert run: error: something.\n", ["--out"])]:
        with pytest.raises(AssertionError):
            _check(code, err, 2, words)
    _check(2, "depthcert run: error: --out == 'x', must be a folder.\n", 2, ["--out"])


# ---- the table of the closing note: every row in its own process, measured ---------------------------------

API_RUNNER = '''
try:
    exec(SOURCE)
except (ValueError, TypeError) as exc:
    print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
    sys.exit(2)
'''


def measure(row, tmp: Path, timeout: float = 60) -> dict:
    """One row in a fresh process under ``/usr/bin/time``: exit code, wall and CPU seconds, peak MB, stderr."""
    name, kind, build, expect, words = row
    tmp.mkdir(parents=True, exist_ok=True)
    what = build(tmp)
    stats = tmp / "time.txt"
    env = {**os.environ, "PYTHONPATH": os.environ.get("FUZZ_CODE", str(ROOT)), "OMP_NUM_THREADS": "1"}
    if kind == "cli":
        cmd = [sys.executable, "-m", "depthcert", *what]
    else:
        cmd = [sys.executable, "-c", PRELUDE + f"SOURCE = {what!r}\n" + API_RUNNER]
    cmd = ["timeout", str(timeout), "/usr/bin/time", "-o", str(stats), "-f", "%e %U %S %M", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    row_out = {"id": name, "kind": kind, "rc": r.returncode, "err": r.stderr}
    fields = stats.read_text().split()[-4:] if stats.is_file() else []
    if len(fields) == 4:
        row_out.update(wall=float(fields[0]), cpu=float(fields[1]) + float(fields[2]), mb=int(fields[3]) / 1024)
    try:
        _check(r.returncode, r.stderr, expect, words)
        row_out["outcome"] = "refusal" if expect == 2 else "result"
    except AssertionError:
        row_out["outcome"] = ("hang" if r.returncode == 124 else "traceback" if "Traceback" in r.stderr
                              else f"exit {r.returncode}" if r.returncode != expect else "not one line / unnamed")
    return row_out


def _main(argv: list[str]) -> int:
    import tempfile

    only = set(argv)
    rows = [r for r in ROWS if not only or r[0] in only]
    base = Path(tempfile.mkdtemp(prefix="fuzz30_"))
    print("| # | input | kind | outcome | exit | wall s | cpu s | peak MB | first error line |")
    print("|---|---|---|---|---|---|---|---|---|")
    bad = 0
    for i, row in enumerate(rows, 1):
        m = measure(row, base / row[0])
        lines = _error_lines(m["err"]) or [""]
        line = textwrap.shorten(lines[-1 if "Traceback" in m["err"] else 0], 150).replace("|", "/")
        bad += m["outcome"] not in ("refusal", "result")
        print(f"| {i} | {m['id']} | {m['kind']} | {m['outcome']} | {m['rc']} | {m.get('wall', float('nan')):.2f} | "
              f"{m.get('cpu', float('nan')):.2f} | {m.get('mb', float('nan')):.0f} | {line} |", flush=True)
    shutil.rmtree(base, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


def test_an_exception_without_a_message_does_not_break_the_line_that_reports_it(tmp_path):
    """The empty-``--weights`` row's cause, in the other places that quote an exception's first line: an empty
    ``checkpoint.pt`` (``EOFError()``, no message) was an ``IndexError`` inside the except clause."""
    from numerics.studies.growth._stored import _checkpoint
    from plumbing.io import WriteFailed
    from plumbing.store import StoredFileError
    from plumbing.validation import first_line

    (tmp_path / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(StoredFileError, match="EOFError"):
        _checkpoint(tmp_path / "checkpoint.pt")
    assert "could not be written (OSError:" in str(WriteFailed(tmp_path / "x", OSError(), existed=False))
    assert first_line(RuntimeError("\n  \nsecond\nthird")) == "second"
    assert first_line(KeyError()) == "KeyError" and len(first_line(ValueError("x" * 999), 50)) == 50


def test_the_stored_idle_measurement_is_what_its_readme_quotes():
    """docs/fuzz-round5-fresh/after_main_idle.md (``python tests/cli/test_fuzz_round5_fresh.py``) has a row for every
    case of ``ROWS``, and its README quotes its largest wall time and peak memory; both under the issue's limits."""
    import re

    folder = Path(__file__).resolve().parents[2] / "docs" / "fuzz-round5-fresh"
    rows = [line.split("|") for line in (folder / "after_main_idle.md").read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| #")]
    assert len(rows) == len(ROWS)
    wall, mb = max(float(r[6]) for r in rows), max(float(r[8]) for r in rows)
    readme = " ".join((folder / "README.md").read_text().split())
    m = re.search(r"every refusal at most ([\d.]+) s wall and ([\d.]+) MB peak", readme)
    assert m is not None and (m.group(1), m.group(2)) == (f"{wall:.2f}", f"{mb:.0f}"), (m and m.groups(), wall, mb)
    assert wall < 5 and mb < 1024
