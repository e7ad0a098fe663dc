"""A sweep folder knows what made it (issue 20): mixed configs and corrupt files are named, never combined.

Every test here fails on the behaviour before the config hash: ``load_cells`` returned the
old cells beside the new ones, and a truncated ``result.json`` was dropped without a word.
"""
import json

import pytest

from depthcert.cli import main
from plumbing.config import merge_config
from plumbing.store import MixedRecordsError, StoredFileError, config_hash, record_hash
from numerics.studies.sweeps import cell_hashes, load_cells, make_spec, results_table, sweep

FAKE = "tests.numerics.studies._fake_runner:run"
STOP = "tests.numerics.studies._interrupting_runner:interrupt_on_depth_3"
TINY = {"sizes": {"M": 1000, "K": 1000, "population": 1000}, "reference": {"n": 300, "steps": 10}}
NEW = merge_config(TINY, {"reference": {"steps": 40}})


def _spec(base=TINY):
    return make_spec(base, {"model.depth": [1, 2, 3, 4]})


def _mixed(tmp_path):
    """The issue's folder: a sweep, then a re-run with a changed base, interrupted after two cells."""
    sweep(_spec(), tmp_path, runner=FAKE, progress=False, note=None)
    with pytest.raises(KeyboardInterrupt):
        sweep(_spec(NEW), tmp_path, runner=STOP, progress=False, note=None)
    return _spec(NEW)


def test_each_cell_carries_the_hash_of_its_full_config(tmp_path):
    spec = _spec()
    sweep(spec, tmp_path, runner=FAKE, progress=False)
    stored = json.loads((tmp_path / "sweep.json").read_text())
    for cell, entry in zip(spec.cells, stored["cells"]):
        rec = json.loads((tmp_path / "cells" / cell.key / "result.json").read_text())
        # expected value recomputed from the stored config itself, independently of cell_hashes
        assert record_hash(rec) == entry["config_hash"] == config_hash(rec["config"], "sweep-cell")
    assert len(set(cell_hashes(spec).values())) == 4          # cells differ in model.depth: four hashes
    assert "integrity.config_hash" not in results_table(tmp_path).columns   # results.csv columns unchanged


def test_loader_refuses_a_mixture_and_names_the_old_cells(tmp_path):
    spec = _mixed(tmp_path)
    with pytest.raises(MixedRecordsError) as exc:
        load_cells(tmp_path)
    old = [c.key for c in spec.cells if c.params["model.depth"] in (3, 4)]
    assert all(k in str(exc.value) for k in old) and "2 stored record(s)" in str(exc.value)
    assert not (tmp_path / "results.csv").exists()           # the old table is not left describing the new sweep


def test_plot_on_a_mixed_folder_exits_2_naming_the_cells(tmp_path, capsys):
    spec = _mixed(tmp_path)
    assert main(["plot", str(tmp_path), "--kind", "appendix-m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and spec.cells[3].key in err[0] and "different configuration" in err[0]


def test_resume_recomputes_exactly_the_cells_that_differ_and_says_so(tmp_path):
    spec, notes = _mixed(tmp_path), []
    out = sweep(spec, tmp_path, runner=FAKE, progress=False, note=notes.append)
    assert (out.computed, out.reused) == (2, 2)
    assert len(notes) == 1 and notes[0].startswith("2 stored record(s)")
    assert [c["quantities"]["M"] for c in load_cells(tmp_path)] == [1000] * 4
    assert {c["config"]["reference"]["steps"] for c in load_cells(tmp_path)} == {40}


@pytest.mark.parametrize("text, what", [("", "empty"), ('{"config": {"a": 1', "truncated"), ("[1, 2] x", "not JSON")])
def test_a_corrupt_cell_is_named_by_the_loader_and_recomputed_on_resume(tmp_path, text, what):
    spec = _spec()
    sweep(spec, tmp_path, runner=FAKE, progress=False)
    bad = tmp_path / "cells" / spec.cells[1].key / "result.json"
    bad.write_text(text)
    with pytest.raises(StoredFileError, match=what) as exc:
        load_cells(tmp_path)
    assert str(bad) in str(exc.value)
    notes = []
    out = sweep(spec, tmp_path, runner=FAKE, progress=False, note=notes.append)
    assert out.computed == 1 and len(notes) == 1 and str(bad) in notes[0] and "recomputing" in notes[0]
    assert len(load_cells(tmp_path)) == 4


def test_plot_on_truncated_files_exits_2_naming_them(tmp_path, capsys):
    spec = _spec()
    sweep(spec, tmp_path, runner=FAKE, progress=False)
    cell = tmp_path / "cells" / spec.cells[0].key / "result.json"
    cell.write_text(cell.read_text()[:40])
    assert main(["plot", str(tmp_path), "--kind", "appendix-m"]) == 2
    assert str(cell) in capsys.readouterr().err
    (tmp_path / "sweep.json").write_text((tmp_path / "sweep.json").read_text()[:30])
    assert main(["plot", str(tmp_path), "--kind", "appendix-m"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path / "sweep.json") in err[0] and "truncated" in err[0]


def test_a_cell_without_a_hash_is_not_combined_with_hashed_ones(tmp_path):
    """A cell written before hashes (or by hand) is stale: named by the loader, recomputed by a re-run."""
    spec = _spec()
    sweep(spec, tmp_path, runner=FAKE, progress=False)
    path = tmp_path / "cells" / spec.cells[2].key / "result.json"
    rec = json.loads(path.read_text())
    del rec["integrity"]
    path.write_text(json.dumps(rec))
    with pytest.raises(MixedRecordsError, match=spec.cells[2].key):
        load_cells(tmp_path)
    assert sweep(spec, tmp_path, runner=FAKE, progress=False, note=None).computed == 1


def test_a_section_only_another_command_reads_changes_no_hash():
    """[saturation] and [growth] are read by saturation/grow, not by run: editing them keeps every cell current;
    editing what run reads changes the hash."""
    from numerics.studies.growth import validate_grow_config
    from numerics.studies.growth._stored import grow_hash

    from numerics.studies.run import validate_config

    # a file for several commands gives every world key (one file, one world): run's, in full
    full = validate_config(TINY)
    world = merge_config(TINY, {k: full[k] for k in ("seed", "data_seed", "task", "model", "reference")})
    world = merge_config(world, {"task": {"branch_scale": 1.0, "n_classes": 2, "logit_scale": 1.0},
                                 "model": {"kind": "mlp", "dtype": "float64"}, "reference": {"anneal_steps": 0}})
    a = make_spec(merge_config(world, {"saturation": {"probe_n": 64}, "growth": {"max_depth": 2}}), {"seed": [0]})
    b = make_spec(merge_config(world, {"saturation": {"probe_n": 128}}), {"seed": [0]})
    c = make_spec(merge_config(world, {"sizes": {"K": 1001}}), {"seed": [0]})
    assert cell_hashes(a) == cell_hashes(b) != cell_hashes(c)
    g = {"growth": {"max_depth": 2}}
    grow_world = validate_grow_config(g)
    g_world = merge_config(g, {k: grow_world[k] for k in ("seed", "data_seed", "task", "model", "reference")})
    assert grow_hash(validate_grow_config({**g_world, "sizes": {"M": 10}})) == grow_hash(validate_grow_config(g))
    assert grow_hash(validate_grow_config(g)) != grow_hash(validate_grow_config({"growth": {"max_depth": 3}}))


def test_a_folder_written_before_hashes_is_still_read_and_checked(tmp_path):
    """sweep.json and cells without hashes (an older depthcert): read, unless a cell contradicts sweep.json."""
    def strip_hashes(folder):
        spec = json.loads((folder / "sweep.json").read_text())
        for c in spec["cells"]:
            del c["config_hash"]
        (folder / "sweep.json").write_text(json.dumps(spec))
        for p in folder.glob("cells/*/result.json"):
            rec = json.loads(p.read_text())
            del rec["integrity"]
            p.write_text(json.dumps(rec))

    _mixed(tmp_path)
    strip_hashes(tmp_path)
    with pytest.raises(MixedRecordsError, match="hold a config other than sweep.json describes"):
        load_cells(tmp_path)
    sweep(_spec(NEW), tmp_path / "clean", runner=FAKE, progress=False)
    strip_hashes(tmp_path / "clean")
    assert len(load_cells(tmp_path / "clean")) == 4
