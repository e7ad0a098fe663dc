"""Every ``--help`` page's ``outputs:`` section is true (issue 26): each command of ``depthcert --help`` runs once on
the lightest input the suite has, and the files it wrote are exactly the ones its page lists for that invocation
(tests/cli/_outputs.py reads the page); stdout and the stated defaults are checked against what was written.

``saturation``, ``certify``, ``bounds`` and ``prove`` have their sentences checked in test_help_promises.py; here
their pages only go through the same outputs check. ``demo`` runs with the light config tests/cli/test_run.py
uses (monkeypatched, seconds); ``study pretrained`` needs a pretrained model and is not run.
"""
import json
import re
import shutil
from pathlib import Path

import pytest

from depthcert.cli import COMMANDS
from plumbing.config import merge_config
from tests.cli._outputs import help_text, invoke, main_page, problems, promises

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).resolve().parent / "_tiny_user.py"
USER = ["--model", f"{TINY}:model", "--data", f"{TINY}:data"]
_CACHE: dict = {}


def _light_run_config() -> dict:
    from numerics.studies.run import DEFAULT_DEMO_CONFIG

    return merge_config(DEFAULT_DEMO_CONFIG, {"sizes": {"M": 500, "K": 500, "population": 500},
                                              "reference": {"n": 500}, "block_training": {"steps": 20,
                                                                                          "batch_size": 256}})


def _tiny_suite():
    import numerics.studies.reproduce as rp

    base = {"sizes": {"M": 500, "K": 500, "population": 500}, "reference": {"n": 200, "steps": 10},
            "block_training": {"steps": 5, "batch_size": 256}}
    return rp.Suite("quick", sweeps={"depth": {"base": base, "grid": {"model.depth": [1, 2, 3]}},
                                     "rebound": {"base": base, "grid": {"model.depth": [1, 2], "model.width": [2, 4]}}},
                    growth={"config": base, "seeds": [0], "base_steps": 5, "grow_steps": 5}, n_boot=20,
                    expected="seconds (test sizes)", validity={"config": base, "draws": 1},
                    ag_max={"config": {"reference": {"steps": 10, "anneal_steps": 0}}, "quick": True,
                            "depths": [1, 2], "seeds": [0]})


def default_of(command: str, dest: str) -> str:
    """The value the page states in ``(default: X)``, ``(default X)`` or ``(default with --flag: X)``."""
    from depthcert.cli import build_parser

    sub = next(a for a in build_parser([command])._actions if a.dest == "command").choices[command]
    action = next(a for a in sub._actions if a.dest == dest)
    return re.search(r"\(default(?: with [^:]*)?:? ([^);]*)", action.help).group(1)


BUILDERS: dict = {}


def builds(name: str):
    """Registers the function that runs the case ``name`` in its own folder: ``(Ran, placeholders)``."""
    def register(f):
        BUILDERS[name] = f
        return f
    return register


def case(name: str, factory):
    """The case ``name``, run once per session in a fresh folder."""
    if name not in _CACHE:
        root = factory.mktemp(name.replace("-", "_"))
        if name in ("run", "validity", "sweep"):
            from numerics.studies.run import to_toml

            (root / "exp.toml").write_text(to_toml(_light_run_config()))
        _CACHE[name] = BUILDERS[name](root, factory)
    return _CACHE[name]


@builds("run")
def _run(root, factory):
    return invoke(["run", "--config", "exp.toml", "--out", "o", "--json"], root), {"DIR": "o"}


@builds("demo")
def _demo(root, factory):                                           # no --out: the stated default
    import numerics.studies.run as exp

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(exp, "DEFAULT_DEMO_CONFIG", _light_run_config())
        return invoke(["demo", "--estimate", "1"], root), {"DIR": default_of("demo", "out")}


@builds("validity")
def _validity(root, factory):
    return invoke(["validity", "--config", "exp.toml", "--draws", "1", "--out", "o", "--no-progress"], root), \
        {"DIR": "o"}


@builds("sweep")
def _sweep(root, factory):
    (root / "s.toml").write_text('base = "exp.toml"\nplots = ["region"]\n[grid]\nseed = [0, 1]\n')
    return invoke(["sweep", "--config", "s.toml", "--out", "o", "--no-progress"], root), {"DIR": "o"}


@builds("plot")
def _plot(root, factory):                                           # no --out: FOLDER is DIR/plots
    ran, _ = case("run", factory)
    shutil.copytree(ran.root / "o", root / "o")
    folder = default_of("plot", "out").replace("DIR", "o")
    return invoke(["plot", "o", "--kind", "region", "--n-boot", "20"], root), {"FOLDER": folder, "KIND": "region"}


@builds("plot-appendix-m")
def _plot_appendix_m(root, factory):
    ran, _ = case("reproduce", factory)
    shutil.copytree(ran.root / "o" / "sweeps" / "depth", root / "depth")
    return (invoke(["plot", "depth", "--kind", "appendix-m", "--out", "figs", "--n-boot", "20"], root),
            {"FOLDER": "figs", "KIND": "appendix-m"})


@builds("reproduce")
def _reproduce(root, factory):
    import numerics.studies.reproduce as rp

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(rp.SUITES, "quick", _tiny_suite())
        return invoke(["reproduce", "--suite", "quick", "--out", "o", "--workers", "1", "--no-progress"], root), \
            {"DIR": "o"}


@builds("study")
def _study(root, factory):
    return (invoke(["study", "optimizer-invariance", "--quick", "--out", "o"], root),
            {"DIR": "o", "NAME": "optimizer-invariance"})


@builds("grow-config")
def _grow_config(root, factory):
    from numerics.studies.growth import QUICK
    from tests.cli.test_saturation_grow import toml

    (root / "g.toml").write_text(toml(merge_config(QUICK, {"growth": {"max_depth": 1, "run_past_stop": True}})))
    return invoke(["grow", "--config", "g.toml", "--out", "o"], root), {"DIR": "o"}


@builds("grow-model")
def _grow_model(root, factory):                                     # no --out: the stated default
    return (invoke(["grow", *USER, "--max-blocks", "1", "--steps", "5", "--save-model", "m.pt"], root),
            {"DIR": default_of("grow", "out"), "PATH": "m.pt"})


@builds("saturation-config")
def _saturation_config(root, factory):
    from numerics.studies.growth import QUICK
    from tests.cli.test_saturation_grow import toml

    (root / "q.toml").write_text(toml(QUICK))
    return invoke(["saturation", "--config", "q.toml", "--out", "o"], root), {"DIR": "o"}


@builds("saturation-model")
def _saturation_model(root, factory):
    return invoke(["saturation", *USER, "--out", "o"], root), {"DIR": "o"}


@builds("certify")
def _certify(root, factory):
    return invoke(["certify", *USER, "--site", "blocks.1", "--B", "5", "--L-top", "3", "--out", "o"], root), \
        {"DIR": "o"}


@builds("bounds")
def _bounds(root, factory):
    return invoke(["bounds", "--config", ROOT / "examples" / "setup.toml", "--plot", "a.png", "--plot-terms",
                   "b.png"], root), {}


@builds("prove")
def _prove(root, factory):
    return invoke(["prove", "--chain", ROOT / "examples" / "chains" / "descent_lemma.toml"], root), {}


CASES = ["run", "demo", "validity", "sweep", "plot", "plot-appendix-m", "reproduce", "study", "grow-config",
         "grow-model", "saturation-config", "saturation-model", "certify", "bounds", "prove"]


def test_every_command_of_the_main_page_has_a_case():
    page = main_page()
    listed = re.findall(r"^    ([a-z]+)", page.split("\ncommands:\n")[1].split("\n\n")[0], re.M)
    assert set(listed) == set(COMMANDS) == {c.split("-")[0] for c in CASES} and set(BUILDERS) == set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_the_files_written_are_the_ones_the_help_lists(name, tmp_path_factory):
    ran, subst = case(name, tmp_path_factory)
    assert ran.code in ((0, 1) if name == "prove" else (0,)), ran.err
    assert problems(help_text(ran.argv[0]), ran, subst) == [], (ran.argv, sorted(ran.written))


def _said(command: str, *sentences: str) -> None:
    page = " ".join(help_text(command).split())
    for s in sentences:
        assert " ".join(s.split()) in page, (command, s)


# --- a page that lies is caught: the checker on planted copies of the pages --------------------------------


def test_a_planted_output_line_in_a_copy_of_an_epilog_is_rejected(tmp_path_factory):
    from depthcert._cmd_run import EPILOG

    ran, subst = case("run", tmp_path_factory)
    assert problems(EPILOG, ran, subst) == []                                   # the epilog itself is true
    planted = EPILOG.replace("outputs:\n", "outputs:\n  DIR/extra.json  every number, again\n", 1)
    assert problems(planted, ran, subst) == ["promised, not written: DIR/extra.json (o/extra.json)"]
    dropped = "\n".join(ln for ln in EPILOG.splitlines() if "DIR/bound_terms.png" not in ln)
    assert problems(dropped, ran, subst) == ["written, not promised: o/bound_terms.png"]


def test_a_wrong_condition_or_folder_is_rejected(tmp_path_factory):
    sat, sat_subst = case("saturation-config", tmp_path_factory)
    text = help_text("saturation")
    assert "DIR/sites.csv        with --model:" in text
    flipped = text.replace("DIR/sites.csv        with --model:", "DIR/sites.csv        with --config:")
    assert problems(flipped, sat, sat_subst) == ["promised, not written: DIR/sites.csv (o/sites.csv)"]
    sweep, subst = case("sweep", tmp_path_factory)
    no_plots = "\n".join(ln for ln in help_text("sweep").splitlines() if not ln.startswith("  DIR/plots/"))
    assert sorted(problems(no_plots, sweep, subst)) == [f"written, not promised: o/plots/region.{e}"
                                                        for e in ("json", "pdf", "png")]
    demo, demo_subst = case("demo", tmp_path_factory)
    assert demo_subst["DIR"] == "./depthcert_demo"
    moved = help_text("demo").replace("(default: ./depthcert_demo)", "(default: ./demo_out)")
    assert problems(moved, demo, {"DIR": default_of_text(moved)}) != []        # another default: caught


def default_of_text(page: str) -> str:
    return re.search(r"\(default: (\./[\w]+)\)", " ".join(page.split())).group(1)


def test_outputs_lines_are_parsed_with_their_conditions():
    rows = {p.names: p.condition for p in promises(help_text("grow"))}
    assert rows[("PATH",)] == "with --model --save-model PATH" and rows[("DIR/checkpoint.pt",)] == "with --config"
    rows = {p.names: p.condition for p in promises(help_text("study"))}
    assert rows[("DIR/study.json", "DIR/report.md")] == "pretrained" and rows[("DIR/NAME.png",)] == ""
    from tests.cli._outputs import applies

    assert applies("with --suite quick or full", ["--suite", "full"])
    assert not applies("with --suite quick or full", ["--suite", "mnist1d"])
    assert not applies("with --model --save-model PATH", ["--model", "m.py:f"]) and not applies("pretrained", ["x"])


# --- stdout and defaults, against what the same runs wrote ----------------------------------------------------


def test_run_json_on_stdout_is_result_json(tmp_path_factory):
    _said("run", "stdout the table of measured quantities and certificates (JSON with --json)")
    ran, _ = case("run", tmp_path_factory)
    assert json.loads(ran.out) == json.loads((ran.root / "o" / "result.json").read_text())


def test_demo_prints_the_draw_and_the_rates_and_writes_to_its_default_folder(tmp_path_factory):
    _said("demo", "--out DIR output folder (default: ./depthcert_demo)",
          "stdout the table of the draw and the certification rates (JSON with --json)")
    ran, _ = case("demo", tmp_path_factory)
    assert {"depthcert_demo/result.json", "depthcert_demo/validity/validity.json"} <= ran.written
    res = json.loads((ran.root / "depthcert_demo" / "result.json").read_text())
    assert "quick estimate from 1 draws run now" in ran.out
    assert all(route in ran.out for route in ("population", "direct")) and str(res["routes"]["direct"]["certified"])


def test_validity_prints_its_verdict_and_json_is_validity_json_with_the_stated_defaults(tmp_path_factory):
    _said("validity", "stdout the summary tables and the verdict (validity.json with --json)",
          "--level LEVEL level of the statistical tests (default 0.05)",
          "data: new samples (S, T) for a fixed setup (default)")
    ran, _ = case("validity", tmp_path_factory)
    stored = json.loads((ran.root / "o" / "validity.json").read_text())
    assert (stored["test_level"], stored["vary"]) == (0.05, "data")
    assert ("no guarantee failed" in ran.out) != stored["significant"]
    again = invoke([*ran.argv, "--json"], ran.root)                            # resumes: nothing recomputed
    assert again.written == {"o/validity.json", "o/slack.png"} and again.out.count("\n") == 1
    assert json.loads(again.out) == json.loads((ran.root / "o" / "validity.json").read_text())


def test_sweep_prints_the_cell_counts_and_the_files_with_the_stated_defaults(tmp_path_factory):
    import os

    from plumbing.machine import available_cores

    _said("sweep", "stdout the cell counts (computed now, reused, failed) and the files",
          "--backend BACKEND local (default)", "local: worker processes (default 1)",
          "(default: cores // workers, at most $OMP_NUM_THREADS when it is set; ray: 1)")
    ran, _ = case("sweep", tmp_path_factory)
    threads = min(available_cores(), int(os.environ.get("OMP_NUM_THREADS") or available_cores()))
    assert re.search(rf"^2 cells: 2 computed now, 0 reused, 0 failed \(local, 1 worker\(s\) x {threads} thread",
                     ran.out, re.M), ran.out
    wrote = ran.out.strip().splitlines()[-1]
    assert wrote.startswith("wrote ") and "results.csv" in wrote and "region.png" in wrote
    again = invoke([*ran.argv, "--json"], ran.root)
    assert (json.loads(again.out)["computed"], json.loads(again.out)["reused"]) == (0, 2)


def test_plot_prints_the_files_it_wrote_and_appendix_m_its_exponent_table(tmp_path_factory):
    _said("plot", "stdout the files written (appendix-m: the exponent table first)",
          "--out FOLDER folder for the files (default DIR/plots)")
    for name in ("plot", "plot-appendix-m"):
        ran, _ = case(name, tmp_path_factory)
        wrote = ran.out.strip().splitlines()[-1]
        assert wrote.startswith("wrote ") and set(wrote[len("wrote "):].split(", ")) == ran.written, wrote
    md = (ran.root / "figs" / "appendix-m_exponents.md").read_text()
    assert md.strip() and md.strip() in ran.out


def test_reproduce_prints_one_line_per_claim_with_its_verdict(tmp_path_factory):
    _said("reproduce", "stdout one line per claim with its verdict, then where the report is")
    ran, _ = case("reproduce", tmp_path_factory)
    claims = json.loads((ran.root / "o" / "claims.json").read_text())["claims"]
    lines = ran.out.strip().splitlines()
    assert [ln.split(None, 1) for ln in lines[:-1]] == [[c["id"], c["verdict"]] for c in claims]
    assert lines[-1].startswith("wrote o/report.md")


def test_study_prints_its_result_as_indented_json_or_one_line(tmp_path_factory):
    _said("study", "stdout the result as JSON", "--json print the result on one line (default: indented JSON)")
    ran, _ = case("study", tmp_path_factory)
    stored = json.loads((ran.root / "o" / "optimizer-invariance.json").read_text())
    assert json.loads(ran.out) == stored and ran.out.count("\n") > 10
    again = invoke([*ran.argv, "--json"], ran.root)
    assert json.loads(again.out) == stored and again.out.count("\n") == 1


def test_grow_prints_one_row_per_step_with_config_and_one_line_with_model(tmp_path_factory):
    _said("grow", "with --config: one row per step (depth, site, losses, AG_max) and why it stopped",
          "with --model: one line (why it stopped, how many blocks, the folder)",
          "--out DIR output folder (default with --model: ./grow_out)")
    ran, _ = case("grow-config", tmp_path_factory)
    traj = json.loads((ran.root / "o" / "trajectory.json").read_text())
    for step in traj["steps"]:
        assert re.search(rf"^\s*{step['depth']}\s.*{re.escape(step['site'] or '-')}", ran.out, re.M), (step, ran.out)
    assert traj["stopped_because"] in ran.out
    ran, _ = case("grow-model", tmp_path_factory)
    res = json.loads((ran.root / "grow_out" / "grow.json").read_text())
    assert ran.out.count("\n") == 1, ran.out
    assert f"stopped: {res['stop']} after {len(res['trajectory']) - 1} blocks" in ran.out
    assert "grow_out" in ran.out and "m.pt" in ran.out


@pytest.mark.slow
def test_the_real_demo_writes_what_its_page_lists(tmp_path):
    """The shipped demo config (~25 s idle; the default run above uses the light config of test_run.py)."""
    ran = invoke(["demo", "--out", "d"], tmp_path)
    assert ran.code == 0 and problems(help_text("demo"), ran, {"DIR": "d"}) == [], sorted(ran.written)
    assert "certification rate of this setup over" in ran.out or "no stored" in ran.out.lower(), ran.out


def test_grow_model_json_is_grow_json(tmp_path):
    _said("grow", "--json: the result as JSON")
    ran = invoke(["grow", *USER, "--max-blocks", "1", "--steps", "5", "--out", "o", "--json"], tmp_path)
    assert ran.code == 0 and ran.out.count("\n") == 1, ran.err
    assert json.loads(ran.out) == json.loads((tmp_path / "o" / "grow.json").read_text())
