"""Sweep files (numerics.studies.sweeps.load_sweep / make_spec): cells, and every bad input named."""
import pytest

from plumbing.validation import InputError
from numerics.studies.run import validate_config
from numerics.studies.sweeps import load_sweep, make_spec, point_key

BASE = {"sizes": {"M": 1000, "K": 1000, "population": 1000}}


def _write(tmp_path, text, base="seed = 0\n[sizes]\nM = 1000\n"):
    (tmp_path / "exp.toml").write_text(base)
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_grid_is_cartesian_and_zip_varies_together(tmp_path):
    path = _write(tmp_path, 'base = "exp.toml"\n[grid]\n"model.depth" = [1, 2, 3]\nseed = [0, 1]\n'
                            '[zip]\n"model.width" = [4, 8]\n"insertion.width" = [8, 16]\n')
    spec = load_sweep(path)
    assert len(spec.cells) == 3 * 2 * 2
    pairs = {(c.config["model"]["width"], c.config["insertion"]["width"]) for c in spec.cells}
    assert pairs == {(4, 8), (8, 16)}                          # zipped, not crossed
    c = spec.cells[0]
    assert c.config == validate_config(c.config)               # full, validated configs
    assert c.config["sizes"]["M"] == 1000                      # base file read relative to the sweep file
    assert len({c.key for c in spec.cells}) == len(spec.cells)
    assert c.key == point_key(c.params)


def test_toml_dotted_keys_without_quotes(tmp_path):
    spec = load_sweep(_write(tmp_path, 'base = "exp.toml"\n[grid]\nmodel.depth = [1, 2]\n'))
    assert [c.config["model"]["depth"] for c in spec.cells] == [1, 2]


@pytest.mark.parametrize("text, match", [
    ('base = "exp.toml"\n[grid]\n"model.widht" = [1, 2]\n', r"model.widht == 1, must be one of"),
    ('base = "exp.toml"\n[grid]\n', r"\[grid\] is missing|\[grid\] == \{\}, must be at least one dotted key"),
    ('base = "exp.toml"\n', r"\[grid\] == \{\}, must be at least one dotted key"),
    ('base = "exp.toml"\n[grid]\n"model.depth" = []\n', r"\[grid\] model.depth == \[\], must be a non-empty list"),
    ('base = "exp.toml"\n[grid]\n"model.depth" = 3\n', r"\[grid\] model.depth == 3, must be a non-empty list"),
    ('base = "exp.toml"\n[grid]\n"model.depth" = [1, -1]\n',
     r"\[grid\] model.depth == -1, must be an integer in \[0, inf\)"),
    ('base = "exp.toml"\n[grid]\n"sizes.delta" = [0.1, 1.5]\n', r"\[grid\] sizes.delta == 1.5, must be a finite"),
    ('base = "exp.toml"\n[grid]\nseed = [0, 0]\n', r"\[grid\] seed == \[0, 0\], must be a list of distinct"),
    ('base = "exp.toml"\n[zip]\nseed = [0, 1]\n"model.depth" = [1]\n', r"\[zip\] == \{.*\}, must be lists of equal"),
    ('base = "exp.toml"\n[grid]\nseed = [0]\n[zip]\nseed = [1]\n', r"\[zip\] seed == \[1\], must be a key that is not"),
    ('base = "missing.toml"\n[grid]\nseed = [0]\n', r"base == .*missing.toml', must be an existing TOML file"),
    ('[grid]\nseed = [0]\n', r"base is missing, must be a path"),
    ('base = "exp.toml"\ngird = 1\n[grid]\nseed = [0]\n', r"gird == 1, must be one of \['base', 'grid', 'zip', 'plots'\]"),
    ('base = "exp.toml"\nplots = ["appendix"]\n[grid]\nseed = [0]\n', r"plots == 'appendix', must be a list of kinds"),
    ('base = "exp.toml"\n[grid]\n"insertion.at" = [-1, 3]\n"model.depth" = [1]\n',
     r"\[grid\] insertion.at == 3, must be an integer in \[-1, 1\]"),
    ('base = "exp.toml"\n[grid]\n"model.depth" = [1, 2]\n"insertion.at" = [0]\n',
     r"model.eps_n == 0.0, must be > 0 when insertion.at is below the top .*\(in the cell model.depth=1, insertion.at=0\)"),
    ('base = = 1\n', r"--config == .*, must be valid TOML"),
])
def test_bad_sweep_files_are_one_input_error(tmp_path, text, match):
    with pytest.raises(InputError, match=match):
        load_sweep(_write(tmp_path, text))


def test_bad_value_in_the_base_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"sizes.M == 1, must be an integer in \[2, inf\)"):
        load_sweep(_write(tmp_path, 'base = "exp.toml"\n[grid]\nseed = [0]\n', base="[sizes]\nM = 1\n"))


def test_make_spec_from_python_data():
    spec = make_spec(BASE, {"model.depth": [1, 2]})
    assert [c.params for c in spec.cells] == [{"model.depth": 1}, {"model.depth": 2}]
    assert spec.to_dict()["grid"] == {"model.depth": [1, 2]}


def test_example_sweeps_load_and_match_the_quick_suite():
    """examples/sweeps/teacher_depth.toml is the quick suite's depth sweep (6 depths x 3 seeds)."""
    from pathlib import Path

    from numerics.studies.reproduce import SUITES

    folder = Path(__file__).resolve().parents[3] / "examples" / "sweeps"
    depth = load_sweep(folder / "teacher_depth.toml")
    suite = SUITES["quick"].sweeps["depth"]
    assert [c.config for c in depth.cells] == [c.config for c in make_spec(suite["base"], suite["grid"]).cells]
    assert len({c.config["model"]["depth"] for c in depth.cells}) >= 6 and len(depth.cells) >= 18
    rebound = load_sweep(folder / "teacher_rebound.toml")
    suite = SUITES["quick"].sweeps["rebound"]
    assert [c.config for c in rebound.cells] == [c.config for c in make_spec(suite["base"], suite["grid"]).cells]
    assert len(load_sweep(folder / "teacher_data.toml").cells) == 4 * 5 * 3
