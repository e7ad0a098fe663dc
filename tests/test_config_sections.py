"""One config file for several commands, one world per config (issue 15).

A command sets aside, with a note, the sections and keys only other commands read
(:data:`numerics.builders.SECTION_READERS`); a key no command knows is still an error naming
its table; and the same config gives the same reference network under ``run`` and under
``saturation`` (the same teacher, sample, initialisation and training: one builder).
"""
from __future__ import annotations

import json

import pytest
import torch

from numerics.builders import SECTION_READERS, own_part
from numerics.seeding import Streams
from numerics.studies import run as run_study
from numerics.studies import saturation, validity
from numerics.studies.growth._loop import GROW_SCHEMA
from plumbing.validation import InputError

SCHEMAS = {"run": run_study.CONFIG_SCHEMA, "validity": validity.VALIDITY_SCHEMA,
           "saturation": saturation.CONFIG_SCHEMA, "grow": GROW_SCHEMA}


def _parts(schema) -> set[str]:
    """Every section, top-level key and ``section.key`` of shared sections in ``schema``."""
    out = set(schema.get("", {}))
    for section, table in schema.items():
        if section:
            out |= {section} | {f"{section}.{k}" for k in table}
    return out


def test_readers_table_matches_every_schema():
    """A part one command reads and another does not is in the table, with the commands that read it."""
    every = set().union(*map(_parts, SCHEMAS.values()))
    for part in sorted(every):
        readers = {name for name, schema in SCHEMAS.items() if part in _parts(schema)}
        missing = set(SCHEMAS) - readers
        parent = part.split(".")[0]
        if not missing or (part != parent and parent in SECTION_READERS):
            continue           # read by all of them, or inside a section that is set aside whole
        assert part in SECTION_READERS, f"{part} is read by {sorted(readers)} only; add it to SECTION_READERS"
        assert readers <= set(SECTION_READERS[part]), (part, readers, SECTION_READERS[part])


def test_another_commands_sections_are_noted_and_an_unknown_key_is_refused():
    config = {"seed": 3, "level": 0.1, "insertion": {"width": 8}, "saturation": {"probe_n": 64},
              "task": {"n_test": 50, "d_in": 4}}
    own, notes = own_part(config, saturation.CONFIG_SCHEMA)
    assert own == {"seed": 3, "task": {"n_test": 50, "d_in": 4}, "saturation": {"probe_n": 64}}
    assert any("[insertion] is read by run" in n for n in notes) and any("'level'" in n for n in notes)
    own, notes = own_part(config, run_study.CONFIG_SCHEMA)
    assert "saturation" not in own and own["task"] == {"d_in": 4}
    assert any("task.n_test is read by saturation" in n for n in notes)
    with pytest.raises(InputError, match=r"saturation\.probe_nn"):
        saturation.validate_config({"saturation": {"probe_nn": 1}})
    with pytest.raises(InputError, match="nonsense"):
        run_study.validate_config({"nonsense": {"a": 1}})
    with pytest.raises(InputError, match=r"model\.kind"):      # a different network is refused, not ignored
        run_study.validate_config({"model": {"kind": "cnn"}})


SHARED = {"seed": 5, "data_seed": 9,
          "task": {"kind": "regression", "d_in": 3, "depth": 2, "width": 4, "noise_std": 0.05, "noise_clip": 3.0,
                   "mean_bound": 1.0, "head_bias": False, "branch_scale": 2.0, "n_test": 3000},
          "model": {"width": 6, "depth": 1, "norm": "rms", "eps_n": 0.0},
          "reference": {"n": 800, "optimizer": "adam", "lr": 0.01, "steps": 60, "batch_size": 128, "anneal_steps": 20},
          "sizes": {"M": 2000, "K": 3000, "population": 2000},
          "saturation": {"probe_n": 256}}


def test_run_and_saturation_build_the_same_reference_and_report_the_same_test_loss():
    """One config, two commands: the same f_old (parameters equal) and the same L_test(f_old) on T."""
    from numerics.workloads import make_workload

    cfg_run = run_study.validate_config(SHARED)
    fixed = run_study.prepare_fixed(cfg_run, run_study.streams_of(cfg_run))
    cfg_sat = saturation.validate_config(SHARED)
    streams = Streams(cfg_sat["seed"], cfg_sat["data_seed"])
    net, _ = saturation.reference_network(cfg_sat, make_workload(cfg_sat, streams, 256), streams)
    for (name, a), (_, b) in zip(fixed.net.state_dict().items(), net.state_dict().items()):
        assert torch.equal(a, b), name
    L_run = run_study.run_experiment(SHARED)["L_test_old"]
    L_sat = saturation.run(SHARED)["reference"]["L_test"]
    assert L_sat == pytest.approx(L_run, rel=1e-9)


def test_a_file_for_two_commands_must_set_every_world_key_whose_defaults_differ():
    """Left to the defaults, run and saturation would build different teachers: refused, both defaults named."""
    with pytest.raises(InputError, match=r"keys are missing \(seed, data_seed, .*given explicitly in a file that "
                                         r"`saturation` reads too"):
        run_study.validate_config({"saturation": {"probe_n": 64}})
    with pytest.raises(InputError, match=r"task\.d_in: saturation 4, run 3"):
        saturation.validate_config({"seed": 1, "data_seed": 2, "sizes": {"M": 100}})
    with pytest.raises(InputError, match=r"seed, .*given explicitly in a file that `saturation` reads too"):
        validity.validate_validity_config({"growth": {"max_depth": 2}})
    run_study.validate_config(SHARED)            # every world key given: accepted
    saturation.validate_config(SHARED)


def test_a_file_for_two_commands_names_every_missing_key_in_one_message():
    """Issue 26: not one key at a time. Setting every key the one message names (to saturation's defaults)
    is accepted by both commands; a file missing exactly one key names that key alone."""
    from numerics.builders import _effective
    from numerics.workloads import DEFAULT_WORKLOAD as SAT_DEFAULTS

    cfg = {"saturation": {"probe_n": 64}}
    with pytest.raises(InputError) as exc:
        run_study.validate_config(cfg)
    names = str(exc.value).split("(", 1)[1].split(")", 1)[0].split(", ")
    assert {"data_seed", "task.branch_scale", "reference.anneal_steps"} <= set(names), names
    for key in names:                               # fill in every named key at once
        section, _, name = key.rpartition(".")
        (cfg.setdefault(section, {}) if section else cfg)[name] = _effective(SAT_DEFAULTS, key)
    run_study.validate_config(cfg)
    saturation.validate_config(cfg)
    del cfg["task"]["d_in"]
    with pytest.raises(InputError, match=r"^task\.d_in is missing, must be given explicitly"):
        run_study.validate_config(cfg)


def test_grow_takes_the_scan_level_from_either_table_and_refuses_two():
    from numerics.studies.growth._loop import validate_grow_config

    assert validate_grow_config({"saturation": {"level": 0.01}})["saturation"]["level"] == 0.01
    assert validate_grow_config({"growth": {"level": 0.02}})["saturation"]["level"] == 0.02
    with pytest.raises(InputError, match=r"growth\.level"):
        validate_grow_config({"saturation": {"level": 0.01}, "growth": {"level": 0.05}})


def test_grow_records_what_it_set_aside(tmp_path):
    from numerics.studies.growth import QUICK
    from numerics.studies.growth._loop import grow
    from plumbing.config import merge_config

    traj = grow(merge_config(QUICK, {"growth": {"max_depth": 1}, "validity": {"group": 2}}), tmp_path, progress=False)
    assert any("[validity] is read by validity" in n for n in traj["notes"])
    assert any("[validity]" in n for n in json.loads((tmp_path / "trajectory.json").read_text())["notes"])
