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
