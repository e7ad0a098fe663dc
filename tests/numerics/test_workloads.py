"""Workloads beyond the teacher: digits (MLP, CNN), CIFAR pickles from a local folder, the char corpus;
role streams; the saturation scan runs end to end on each (light sizes)."""
import pickle

import numpy as np
import pytest

from plumbing.validation import InputError
from numerics.seeding import Streams
from numerics.studies.saturation import run, validate_config
from numerics.workloads import make_workload, seed_of

LIGHT = {"reference": {"n": 300, "steps": 20, "batch_size": 64, "anneal_steps": 0},
         "saturation": {"probe_n": 128, "n_chunks": 4, "batch_size": 64, "beta_n": 32, "width": 4}}


def _cfg(**sections):
    out = {k: dict(v) for k, v in LIGHT.items()}
    for k, v in sections.items():
        out[k] = {**out.get(k, {}), **v}
    return out


@pytest.mark.parametrize("model", [{"kind": "mlp", "width": 8, "depth": 1},
                                   {"kind": "cnn", "width": 4, "depth": 1, "norm": "group", "groups": 2},
                                   {"kind": "resnet", "width": 4, "depth": 1, "groups": 2}])
def test_digits_scan_runs_for_mlp_cnn_resnet(model, tmp_path):
    res = run(_cfg(task={"kind": "digits", "n_test": 200}, model=model), tmp_path)
    assert len(res["sites"]) == 2 and all(s["n"] == 128 for s in res["sites"])
    assert res["reference"]["L_test"] > 0


def test_cifar_pickles_from_a_local_folder(tmp_path):
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (100, 3072), dtype=np.uint8), b"labels": list(rng.integers(0, 10, 100))}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    res = run(_cfg(task={"kind": "cifar", "path": str(tmp_path), "n_test": 40},
                   model={"kind": "resnet", "width": 4, "depth": 1, "groups": 2}, saturation={"beta_n": 8}))
    assert [s["site"] for s in res["sites"]] == ["stem_out", "blocks.0"]
    with pytest.raises(InputError, match="task.path"):
        run(_cfg(task={"kind": "cifar", "path": str(tmp_path / "missing"), "n_test": 40},
                 model={"kind": "resnet", "width": 4, "depth": 1, "groups": 2}))


def test_chars_scan_runs_with_the_gpt2_model(tmp_path):
    res = run(_cfg(task={"kind": "chars", "seq_len": 16, "max_chars": 200_000, "n_test": 32, "n_population": 32},
                   model={"kind": "gpt2", "width": 16, "depth": 1, "heads": 2},
                   saturation={"families": ["linear", "affine", "readout", "block"]}), tmp_path)
    assert [s["site"] for s in res["sites"]] == ["embed_out", "blocks.0"]
    assert all(s["P_block"] is not None for s in res["sites"])
    assert any("unigram" in n for n in res["notes"])


def test_roles_probe_independent_of_training_and_sizes_checked():
    cfg = validate_config(_cfg(task={"kind": "digits", "n_test": 200}))
    w = make_workload(cfg, Streams(0, 0), 128)
    train_rows = {tuple(r) for r in w.train[0].reshape(300, -1).numpy().round(6).tolist()}
    probe_rows = {tuple(r) for r in w.probe[0].reshape(128, -1).numpy().round(6).tolist()}
    assert len(train_rows & probe_rows) <= 5          # disjoint splits (digits has a few exact duplicates)
    assert seed_of(Streams(0, 0), "probe") != seed_of(Streams(0, 0), "reference_sample")
    assert seed_of(Streams(0, 0), "probe") != seed_of(Streams(0, 1), "probe")
    assert seed_of(Streams(0, 0), "teacher") == seed_of(Streams(0, 1), "teacher")
    with pytest.raises(InputError, match="saturation.probe_n|reference.n|task.n_test"):
        make_workload(validate_config(_cfg(task={"kind": "digits", "n_test": 1500})), Streams(0, 0), 128)
