"""The typed run configuration (issue 15): derived from the schema, built once, validated once per run."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

import plumbing.validation
from numerics.studies.run import CONFIG_SCHEMA, DEFAULT_DEMO_CONFIG, RunConfig, run_config, validate_config
from numerics.studies.run._config import SECTION_CLASSES, _section_class
from plumbing.validation import InputError

TINY = {"sizes": {"M": 600, "K": 600, "population": 600}, "reference": {"n": 200, "steps": 3},
        "block_training": {"steps": 5, "batch_size": 128}, "insertion": {"output_cap": 0.5, "cap_grid": 2},
        "variants": {"n_draws": 2}}


def test_every_section_and_key_of_the_schema_is_a_field():
    rc = RunConfig.from_validated(validate_config({}))
    assert {f.name for f in dataclasses.fields(rc)} - {"keys_", "notes_"} == set(CONFIG_SCHEMA[""]) | set(SECTION_CLASSES)
    for name, table in CONFIG_SCHEMA.items():
        if name:
            assert {f.name for f in dataclasses.fields(getattr(rc, name))} - {"keys_"} == set(table)


def test_a_key_added_to_a_schema_table_appears_in_its_class():
    cls = _section_class("task", (*CONFIG_SCHEMA["task"], "brand_new_key"))
    assert cls(brand_new_key=3).brand_new_key == 3 and cls().kind is None
    with pytest.raises(ValueError, match="keys"):      # a key that would shadow a Mapping method is refused
        _section_class("task", ("keys",))


def test_round_trip_to_the_validated_dict_key_order_included():
    for config in ({}, TINY, {"localised": {"cap": 0.3}, "insertion": {"seed": 4, "family": "full"}}):
        cfg = validate_config(config)
        back = RunConfig.from_validated(cfg).to_dict()
        assert back == cfg and list(back) == list(cfg)
        assert all(list(back[k]) == list(cfg[k]) for k in cfg if isinstance(cfg[k], dict))


def test_attributes_absent_keys_and_mapping_view():
    rc = run_config({"insertion": {"seed": 7}})
    assert rc.sizes.M == DEFAULT_DEMO_CONFIG["sizes"]["M"] and rc.insertion.seed == 7 and rc.level == 0.05
    assert rc.variants.delta_T_new is None and "delta_T_new" not in rc.variants     # not given: None, absent
    assert rc["sizes"]["M"] == rc.sizes.M and rc.get("localised") is None and dict(rc.insertion)["seed"] == 7
    with pytest.raises(KeyError):
        rc.variants["delta_T_new"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rc.sizes.M = 3
    other = rc.with_seeds(1, 2)
    assert (other.seed, other.data_seed, rc.seed) == (1, 2, DEFAULT_DEMO_CONFIG["seed"])
    assert other.to_dict()["seed"] == 1


def test_from_validated_refuses_an_unvalidated_key():
    with pytest.raises(ValueError, match="sizes.bogus"):
        RunConfig.from_validated({**validate_config({}), "sizes": {"bogus": 1}})
    with pytest.raises(ValueError, match="saturation"):
        RunConfig.from_validated({**validate_config({}), "saturation": {}})


def test_run_config_keeps_the_notes_of_other_commands_sections():
    rc = run_config({"growth": {}, "saturation": {}, **{k: DEFAULT_DEMO_CONFIG[k] for k in ("seed", "data_seed")},
                     "task": {**DEFAULT_DEMO_CONFIG["task"], "branch_scale": 1.0, "n_classes": 2, "logit_scale": 1.0},
                     "model": {**DEFAULT_DEMO_CONFIG["model"], "kind": "mlp", "dtype": "float64"},
                     "reference": {**DEFAULT_DEMO_CONFIG["reference"], "anneal_steps": 0}})
    assert any("[growth]" in n for n in rc.notes_) and run_config(rc) is rc
    with pytest.raises(InputError, match="sizes.M"):
        run_config({"sizes": {"M": 1}})


def _count_checks(monkeypatch) -> Counter:
    """Count the checks of ``insertion.output_cap`` (the config) and ``block.nu_V`` (the setup)."""
    counts = Counter()
    import bounds.routes._paper as paper   # Setup's module (bounds.routes re-exports it): its checks look names up there

    check_value, check_values = plumbing.validation.check_value, paper.check_values

    def counted_value(key, rule, value):
        counts[key] += 1
        return check_value(key, rule, value)

    def counted_values(key, interval, value):
        counts[key] += 1
        return check_values(key, interval, value)

    monkeypatch.setattr(plumbing.validation, "check_value", counted_value)
    monkeypatch.setattr(paper, "check_values", counted_values)
    return counts


def test_one_cli_run_validates_the_config_and_nu_V_once(tmp_path, monkeypatch):
    """``depthcert run``: the config once (not again inside run_experiment), the Setup's ``nu_V`` once
    (the variants reuse the validated setup; ``bounds_config.toml`` is written without a re-check)."""
    from depthcert.cli import main
    from plumbing.io import to_toml

    path = tmp_path / "c.toml"
    path.write_text(to_toml(TINY))
    counts = _count_checks(monkeypatch)
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "out")]) == 0
    assert counts["insertion.output_cap"] == 1 and counts["block.nu_V"] == 1, counts


def test_a_validity_config_checks_each_run_value_once(monkeypatch):
    """The validity study checks its wider schema, then merges the run part without checking it again."""
    from numerics.studies.validity import validate_validity_config

    counts = _count_checks(monkeypatch)
    cfg, opts = validate_validity_config({**TINY, "validity": {"group": 2}})
    assert counts["insertion.output_cap"] == 1 and counts["sizes.M"] == 1 and counts["validity.group"] == 1, counts
    assert cfg == validate_config(TINY) and opts["group"] == 2
    with pytest.raises(InputError, match="insertion.at"):      # the checks across keys still run
        validate_validity_config({"insertion": {"at": 5}})
