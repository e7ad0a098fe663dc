"""``dc.saturation`` under ``torch.distributed`` (issue 38, item 4): 2 ``gloo`` ranks launched by ``torchrun``
each scan their own shard; both reports equal the one-process report on the union of the shards (in rank
order) -- verdicts, ``best_site`` and every numeric field to 1e-6 relative -- and wrong variants (sums not
reduced, betting scalars out of the global order) are caught by the same comparison. The one-process
reports are computed here, in this process (no process group), by the unchanged one-process code.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.api import _dist_scan_script as script

ROOT = Path(__file__).resolve().parents[2]
RTOL = 1e-6
#: strings that say where the sample came from (they name the ranks): not part of the comparison
WORDING = ("curvature_source", "notes")
#: seconds of each part of the call (``SaturationReport.costs``): differ run to run, never compared
TIMINGS = ("costs",)


def _flat(o, path=""):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _flat(v, f"{path}.{k}")
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _flat(v, f"{path}[{i}]")
    else:
        yield path, o


def differences(got: dict, want: dict, rtol: float = RTOL) -> list:
    """Every field of two ``to_dict()`` reports that differs: numbers beyond ``rtol`` relative, anything else unequal."""
    a, b = dict(_flat(got)), dict(_flat(want))
    out = [("fields", sorted(set(a) ^ set(b)))] if set(a) != set(b) else []
    for key in sorted(set(a) & set(b)):
        if any(key == f".{w}" or key.startswith(f".{w}[") for w in WORDING):
            continue
        if any(key.startswith(f".{w}.") for w in TIMINGS):
            continue
        x, y = a[key], b[key]
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
        if numbers and not abs(x - y) <= rtol * max(abs(x), abs(y)):
            out.append((key, x, y))
        elif not numbers and x != y:
            out.append((key, x, y))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> Path:
    """The folder of both ranks' JSON files, from one ``torchrun`` launch of ``_dist_scan_script.py``."""
    dist = pytest.importorskip("torch.distributed")
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with the gloo backend is not available in this torch build")
    out = tmp_path_factory.mktemp("dist38")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
           str(ROOT / "tests" / "api" / "_dist_scan_script.py"), str(out)]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def one_process() -> dict:
    """The one-process reports on the union of the shards (without and with ``curvature_data``)."""
    import depthcert as dc

    net = script.model()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)    # as the ranks (OMP_NUM_THREADS=1): another split of the float reductions changes the
    try:                        # ill-conditioned fields (certified_gain) by more than 1e-6, whatever the data split
        return {"": dc.saturation(net, script.union(), **script.KW).to_dict(),
                "_curv": dc.saturation(net, script.union(), curvature_data=script.curvature(), **script.KW).to_dict()}
    finally:
        torch.set_num_threads(threads)


def _load(ranks: Path, name: str) -> dict:
    return json.loads((ranks / f"{name}.json").read_text())


@pytest.mark.parametrize("variant", ["", "_pass2", "_curv", "_local"])
@pytest.mark.parametrize("rank", [0, 1])
def test_every_rank_reports_the_one_process_scan_of_the_union(ranks, one_process, rank, variant):
    """Kept bets' factors (""), a second pass for the bets ("_pass2"), curvature_data given ("_curv"), and the
    whole union on each rank alone inside ``local_only()`` ("_local": the escape hatch, no collective)."""
    want = one_process["_curv" if variant == "_curv" else ""]
    got = _load(ranks, f"rank{rank}{variant}")
    assert differences(got, want) == []
    assert (got["verdict"], got["best_site"], got["n"]) == (want["verdict"], want["best_site"], sum(script.SIZES) - 64
                                                            if variant != "_curv" else sum(script.SIZES))
    assert (f"2 ranks' shards {list(script.SIZES)}" in got["curvature_source"]) == (variant != "_local")


def test_the_ranks_agree_with_each_other(ranks):
    assert differences(_load(ranks, "rank0"), _load(ranks, "rank1"), rtol=0.0) == []


@pytest.mark.parametrize("variant", ["_unreduced", "_reversed"])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_wrong_combination_is_caught(ranks, one_process, rank, variant):
    """Sums left per rank change G and every score; the betting scalars out of the union's order change the wealth."""
    bad = differences(_load(ranks, f"rank{rank}{variant}"), one_process[""])
    keys = {d[0] for d in bad}
    if variant == "_unreduced":
        assert {".sites[0].G_norm", ".sites[0].P_all"} <= keys
    else:
        assert ".sites[0].log_wealth" in keys and ".sites[0].G_norm" not in keys


def test_the_comparison_rejects_a_small_change(one_process):
    rep = json.loads(json.dumps(one_process[""]))
    rep["sites"][1]["sigma2"] *= 1 + 3 * RTOL
    assert [d[0] for d in differences(rep, one_process[""])] == [".sites[1].sigma2"]


@pytest.mark.parametrize("rank", [0, 1])
def test_what_cannot_be_combined_is_refused_on_every_rank(ranks, rank):
    said = _load(ranks, f"rank{rank}_errors")
    assert said["same_data"].startswith("ValueError: data on ranks 0 and 1 starts with the same samples")
    assert "rank 0's data has 10 samples, must hold the curvature sample" in said["small_rank0"]
    assert "curvature_data is given on ranks [0] only" in said["curvature_on_rank0_only"]
    assert said["different_model"].startswith("ValueError: model's weights on ranks [1] differ from rank 0's")
    if rank == 1:   # its own error, raised where its data is read ...
        assert said["nan_on_rank1"].startswith("ValueError: data x == nan at sample")
    else:           # ... and on rank 0, which would otherwise wait for rank 1 in the next collective
        assert said["nan_on_rank1"].startswith("RuntimeError: rank 1 stopped the data-parallel scan: ValueError: data x == nan")
    for what in ("grow", "certify_insertion"):
        assert said[what].startswith(f"RuntimeError: dc.{what} does not run under torch.distributed (a process group "
                                     f"of 2 ranks is initialised; this is rank {rank})")


def test_nothing_changes_without_a_process_group():
    import numerics.distributed as nd

    assert not nd.active()
    nd.refuse("dc.grow", "nothing")   # a no-op outside a process group


@pytest.mark.parametrize("name", ["trial_insertion", "predicted_vs_observed", "first_order_check"])
def test_the_trained_studies_refuse_under_a_process_group(monkeypatch, name):
    """Under a process group of several ranks the functions that train arms (not reduced across ranks) refuse with
    one message naming themselves, before any work (a group is simulated: active, 2 ranks, this is rank 1)."""
    import depthcert as dc
    import numerics.distributed as nd

    monkeypatch.setattr(nd, "active", lambda: True)
    monkeypatch.setattr(nd, "world_size", lambda: 2)
    monkeypatch.setattr(nd, "rank", lambda: 1)
    args = (script.model(), script.union(), script.union()) if name == "trial_insertion" else (script.model(), script.union())
    with pytest.raises(RuntimeError, match=rf"dc\.{name} does not run under torch\.distributed .* 2 ranks .*rank 1"):
        getattr(dc, name)(*args)
