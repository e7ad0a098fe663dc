"""Coverage of ``dc.trial_insertion``'s held-out interval on the planted problem.

World: :mod:`tests.api._planted` (``blocks.0`` is the best site by construction). Per draw ``k``:
``train`` = 600 fresh samples, ``heldout`` = ``n_heldout`` fresh samples, ``steps = 60``, ``eta = 2``,
Adam ``lr = 0.02``; the chosen arm's true gain is its mean per-sample loss drop on 40 000 independent
samples. Variants: the bounded target (light-tailed per-sample gains; the one the tests use) and the
plain product ``x_2 x_3`` (heavy-tailed), at 400 and 1500 held-out samples. Prints and stores, per
variant, the coverage of the nominal 95 % Student-t interval with its Clopper-Pearson interval, how
often ``blocks.0`` was chosen, the mean cost ratio, and the standardised errors' mean and sd.

    OMP_NUM_THREADS=1 python benchmarks/bench_trial_coverage.py [--draws 50] [--out docs/trial-coverage/coverage.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # run as a script: the repository's packages

VARIANTS = (("light", 400), ("heavy", 400), ("heavy", 1500))


def run_variant(heavy: bool, n_heldout: int, draws: int) -> dict:
    """One variant's coverage over ``draws`` draws (module docstring)."""
    from scipy import stats

    import depthcert as dc
    from depthcert.api._gain import per_sample_losses
    from tests.api._planted import Planted, draw, squared

    net = Planted()
    xb, yb = draw(40000, 10**6, heavy)
    old = per_sample_losses(net, xb, yb, squared)
    covered, picks, z, costs = 0, 0, [], []
    for k in range(draws):
        r = dc.trial_insertion(net, draw(600, 2 * k + 1, heavy), draw(n_heldout, 2 * k + 2, heavy), sites="blocks.*",
                               steps=60, lr=2e-2, loss=squared, eta=2, seed=k, scan_kwargs={"curvature_n": 64})
        true = 0.0 if r.model is None else float((old - per_sample_losses(r.model, xb, yb, squared)).mean())
        covered += int(r.gain_lo <= true <= r.gain_hi)
        picks += int(r.chosen == "block@blocks.0")
        costs.append(r.cost_ratio)
        half = r.gain_hi - r.gain
        if half > 0:
            z.append((r.gain - true) / (half / stats.t.ppf(0.975, n_heldout - 1)))
    from benchmarks.bench_saturation_power import clopper_pearson

    lo, hi = clopper_pearson(covered, draws)
    return {"target": "x2 x3 (heavy tails)" if heavy else "2 tanh(x2) tanh(x3) (light tails)", "n_heldout": n_heldout,
            "draws": draws, "covered": covered, "coverage": covered / draws, "coverage_cp95": [lo, hi],
            "chose_blocks0": picks, "mean_cost_ratio": float(np.mean(costs)), "z_mean": float(np.mean(z)),
            "z_sd": float(np.std(z, ddof=1))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--out", default="docs/trial-coverage/coverage.json")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = []
    for kind, n in VARIANTS:
        rows.append(run_variant(kind == "heavy", n, a.draws))
        r = rows[-1]
        print(f"{r['target']:36s} n_heldout={n:5d}: covered {r['covered']}/{r['draws']} "
              f"(CP95 [{r['coverage_cp95'][0]:.3f}, {r['coverage_cp95'][1]:.3f}]), chose blocks.0 {r['chose_blocks0']}, "
              f"cost {r['mean_cost_ratio']:.2f}x, z mean {r['z_mean']:.2f} sd {r['z_sd']:.2f}", flush=True)
    from plumbing.io import atomic_write_text

    out = {"command": "OMP_NUM_THREADS=1 python benchmarks/bench_trial_coverage.py" + ("" if a.draws == 50 else f" --draws {a.draws}"),
           "level": 0.05, "variants": rows, "seconds": time.perf_counter() - t0}
    atomic_write_text(Path(a.out), json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
