"""The two real-size networks of ``bench_saturation.py --real-size`` on a CUDA device (issue 38, item 5).

Run on a GPU machine: ``python benchmarks/gpu_real_size.py`` (``--cases gpt2_small resnet50``,
``--repeats 3``, ``--out DIR``). For each network (:mod:`benchmarks._real_size`, the same seeded
weights and samples as on the CPU):

1. the same ``dc.saturation`` call (``curvature="all"``, the default) on the CPU and on the device;
   every site's scan scores must agree within float32 tolerance (``--rtol``, default 1e-3; float32
   forwards in a different order of summation), and the verdict's inputs are printed side by side;
2. on the device: one forward+backward over the samples (the baseline), the scan alone, the whole
   call and ``curvature="auto"``, each the median of ``--repeats`` calls after one warm-up
   (``torch.cuda.synchronize`` around each), as ratios to the baseline, with the card's name and
   ``torch.cuda.max_memory_allocated`` of each.

Without a CUDA device it exits with status 2 and one line saying so (it imports without one).
Exit status 1 when a score differs beyond the tolerance.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: the scan's scores compared between CPU and device (float32 forwards; beta's search may branch differently)
COMPARED = ("G_sq", "G_norm", "P_all", "AG_max", "rho_phi", "sigma2", "log_wealth")


def compare(cpu_rep, dev_rep, rtol: float) -> list[str]:
    """The fields of ``COMPARED`` (every site) that differ beyond ``rtol`` (relative, ``1e-12`` absolute floor)."""
    bad = []
    for a, b in zip(cpu_rep.sites, dev_rep.sites):
        for key in COMPARED:
            x, y = float(a[key]), float(b[key])
            if abs(x - y) > rtol * max(abs(x), abs(y)) + 1e-12:
                bad.append(f"{a['site']}.{key}: cpu {x:.6g}, cuda {y:.6g}")
    return bad


def _timed(fn, repeats: int, sync) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(cases, repeats: int, rtol: float, threads: int) -> tuple[dict, bool]:
    import torch

    from benchmarks import _real_size

    torch.set_num_threads(threads)
    dev = torch.device("cuda")
    out, ok = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__}, True
    for case in cases:
        model, x, y, note = _real_size.build(case)
        cpu = _real_size.calls(case, model, x, y)["full"]()
        model = model.to(dev)
        xd, yd = x.to(dev), y.to(dev)
        fns = _real_size.calls(case, model, xd, yd)
        dev_rep = fns["full"]()
        bad = compare(cpu, dev_rep, rtol)
        ok = ok and not bad
        res = {"model": note, "n": int(x.shape[0]), "verdict": [cpu.verdict, dev_rep.verdict],
               "best_site": [cpu.best_site, dev_rep.best_site], "differences": bad,
               "beta": [[a["beta"], b["beta"]] for a, b in zip(cpu.sites, dev_rep.sites)]}
        for kind in ("plain", "scan", "full", "auto"):
            torch.cuda.reset_peak_memory_stats(dev)
            res[f"{kind}_s"] = _timed(fns[kind], repeats, torch.cuda.synchronize)
            res[f"{kind}_max_allocated_mb"] = torch.cuda.max_memory_allocated(dev) / (1 << 20)
        for kind in ("scan", "full", "auto"):
            res[f"{kind}_over_plain"] = res[f"{kind}_s"] / res["plain_s"]
        out[case] = res
        print(f"{case} on {out['device']}: " + ", ".join(f"{k} {res[k]:.3g}" for k in res if k.endswith(("_s", "_over_plain", "_mb"))),
              flush=True)
        print(f"{case}: verdict cpu/cuda {res['verdict']}, best_site {res['best_site']}; "
              + ("scores agree within rtol %g" % rtol if not bad else "DIFFER: " + "; ".join(bad)), flush=True)
    return out, ok


def main(argv=None) -> int:
    from benchmarks._real_size import CASES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=16, help="CPU threads for the CPU reference call")
    parser.add_argument("--out", help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats == {args.repeats}, must be >= 1")
    if not 0 < args.rtol < 1:
        parser.error(f"--rtol == {args.rtol}, must be in (0, 1)")
    import torch

    if not torch.cuda.is_available():
        print("gpu_real_size: no CUDA device (torch.cuda.is_available() is False); run it on a GPU machine.", file=sys.stderr)
        return 2
    out, ok = run(args.cases, args.repeats, args.rtol, args.threads)
    if args.out:
        from plumbing.io import atomic_write_text

        atomic_write_text(Path(args.out), json.dumps(out, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
