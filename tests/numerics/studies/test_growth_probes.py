"""Every growth step scans on its own probe (the stop rule's level holds at every step, not only the first).

The checks fail if one probe sample serves two steps: the probes the scans actually saw are
recorded (a spy on the scan) and no sample may appear in two of them.
"""
import torch

from plumbing.config import merge_config
from numerics.seeding import Streams
from numerics.studies.growth import QUICK, grow
from numerics.studies.growth import _loop
from numerics.studies.growth._probe import step_workload
from numerics.workloads import Workload


def _rows(x: torch.Tensor) -> set:
    return {tuple(r) for r in x.reshape(x.shape[0], -1).tolist()}


def _assert_disjoint(probes):
    seen = [_rows(x) for x in probes]
    for i in range(len(seen)):
        for j in range(i + 1, len(seen)):
            assert not seen[i] & seen[j], f"steps {i} and {j} share {len(seen[i] & seen[j])} probe samples"


def test_built_in_growth_scans_each_step_on_a_fresh_probe(tmp_path, monkeypatch):
    seen = []
    real = _loop.scan_with_state

    def spy(net, w, *a, **kw):
        seen.append(w.probe[0].clone())
        return real(net, w, *a, **kw)

    monkeypatch.setattr(_loop, "scan_with_state", spy)
    cfg = merge_config(QUICK, {"growth": {"max_depth": 2, "run_past_stop": True, "steps_per_growth": 5},
                               "saturation": {"probe_n": 256}})
    traj = grow(cfg, tmp_path, progress=False)
    assert len(seen) == len(traj["steps"]) == 3 and all(x.shape[0] == 256 for x in seen)
    _assert_disjoint(seen)
    assert any("its own probe" in n for n in traj["notes"])


def test_a_fixed_probe_split_is_scanned_whole_at_every_step_and_said_so():
    """Choice: a fixed split has no fresh samples; folds left each scan powerless, so every step scans it whole
    (the level of steps >= 1 conditional) and the trajectory's note says so instead of claiming a fresh probe."""
    from numerics.studies.growth._probe import probe_source

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(30, 1, 4, 4, generator=g), torch.randint(0, 3, (30,), generator=g)
    w = Workload("digits", "cross_entropy", (x, y), (x, y), (x, y), (x, y), 3, (1, 4, 4))
    assert all(step_workload(w, {}, Streams(0, 0), k, 3).probe[0] is x for k in range(3))
    note = probe_source("digits", 3)
    assert "whole probe split" in note and "conditional" in note and "own probe" not in note
    assert "own probe" in probe_source("mnist1d", 3)


def test_the_check_catches_a_shared_probe():
    x = torch.randn(8, 3)
    try:
        _assert_disjoint([x, x[4:]])
    except AssertionError as exc:
        assert "share 4 probe samples" in str(exc)
    else:
        raise AssertionError("a shared probe was not caught")


def test_generated_data_draws_each_later_step_from_its_own_role_stream():
    from numerics import mnist1d

    streams = Streams(0, 0)
    x0, y0 = mnist1d.sample(16, 3)
    w = Workload("mnist1d", "cross_entropy", (x0, y0), (x0, y0), (x0.reshape(16, -1), y0), (x0, y0), 10, (40,))
    cfg = {"saturation": {"probe_n": 16}}
    probes = [step_workload(w, cfg, streams, k, 3).probe for k in range(3)]
    assert probes[0][0] is w.probe[0] and all(p[0].shape == (16, 40) for p in probes)   # flattened as the workload's
    _assert_disjoint([p[0] for p in probes])
    assert torch.equal(step_workload(w, cfg, streams, 2, 3).probe[0], probes[2][0])    # deterministic (resumable)
