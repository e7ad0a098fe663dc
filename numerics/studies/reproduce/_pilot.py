"""The pilot of the MNIST-1D suites: per-unit spreads and per-cell run times from the stored pilot cells.

``python -m numerics.studies.reproduce._pilot DIR`` prints, from ``DIR/sweeps/*`` written by
the ``mnist1d-pilot`` suite (seeds 1000+, never a suite's seeds), the ``power`` table of the
suites (per claim the per-unit standard deviation: :mod:`numerics.studies.reproduce._power`)
and the measured seconds per cell by kind and depth. The suites' sizes were fixed from this.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from numerics.studies.reproduce import _mnist1d_studies as st
from numerics.studies.reproduce import _power as pw

__all__ = ["pilot_estimates", "pilot_timings"]


def _ctx(out_dir: Path, n_boot: int):
    from numerics.studies.reproduce import SUITES, ReproduceContext

    import dataclasses

    suite = dataclasses.replace(SUITES["mnist1d-pilot"], n_boot=n_boot, power={})
    return ReproduceContext(suite, out_dir, {k: out_dir / "sweeps" / k for k in suite.sweeps}, {})


def _boot_sd(se: float, n: int) -> float:
    return float(se * math.sqrt(n))


def pilot_estimates(out_dir: str | Path, n_boot: int = 500) -> dict:
    """``{claim: {"sd", "unit", "n_pilot", "estimate"}}`` from the pilot's stored cells."""
    from numerics.studies.reproduce._studies import plateau_ratio
    from numerics.studies.sweeps import load_cells

    out = Path(out_dir)
    ctx = _ctx(out, n_boot)
    depth = [c for c in load_cells(out / "sweeps" / "depth") if c["config"]["model"]["depth"] >= 1]
    per, _ = st.covariance_per_cell(depth)
    res = st._appendix_m(ctx)
    D, log_ag, _ = st.ag_rows(depth)
    _, _, _, se_ratio = pw.bootstrap_interval(log_ag, lambda b: plateau_ratio(D, b), n_boot)
    gain, _ = st.growth_gains(load_cells(out / "sweeps" / "growth"))
    Dg, ins = st.insertion_pairs(load_cells(out / "sweeps" / "depth"))
    tau, _, _, se_tau = pw.tau_interval(Dg, ins, n_boot)
    n = len(res.depths)
    return {
        "covariance_near_diagonal": {"sd": float(per.std(ddof=1)), "unit": "cell", "n_pilot": per.size,
                                     "estimate": float(per.mean())},
        "signal_decay": {"sd": _boot_sd(res.samples[:, 0].std(ddof=1), n), "unit": "cell", "n_pilot": n,
                         "estimate": res.alpha.estimate},
        "exponent_agreement": {"sd": _boot_sd((res.samples[:, 1] - res.samples[:, 2]).std(ddof=1), n), "unit": "cell",
                               "n_pilot": n, "estimate": res.difference.estimate},
        "joint_scaling_rebound": _rebound_spread(load_cells(out / "sweeps" / "rebound")),
        "ag_max_plateau": _plateau_spread(D, log_ag, se_ratio),
        "ag_max_plateau_level": {"sd": float(log_ag[:, -1].std(ddof=1)), "unit": "seed", "scale": "on log AG_max",
                                 "n_pilot": log_ag.shape[0], "estimate": float(np.exp(log_ag[:, -1].mean()))},
        "growth_vs_scratch": {"sd": float(gain.std(ddof=1)), "unit": "seed", "n_pilot": gain.size,
                              "estimate": float(gain.mean())},
        "local_insertion_shrinking": {"sd": _boot_sd(se_tau, Dg.size), "unit": "cell", "n_pilot": Dg.size,
                                      "estimate": tau},
    }


def _plateau_spread(D, log_ag, se_ratio: float) -> dict:
    """The plateau ratio's spread; none when the pilot's AG_max never drops early (the ratio is censored)."""
    from numerics.studies.reproduce._studies import NO_EARLY_DROP, plateau_ratio

    est = plateau_ratio(D, log_ag)
    out = {"sd": _boot_sd(se_ratio, log_ag.shape[0]), "unit": "seed", "n_pilot": log_ag.shape[0], "estimate": est}
    if est >= NO_EARLY_DROP:
        out.update(sd=None, why="in the pilot AG_max does not drop over the first depths: the ratio is censored")
    return out


def _rebound_spread(cells, width: int = 8) -> dict:
    """The spread of the paired difference R(deepest) - R(shallowest) at ``width`` (the suites' narrowest; the
    pilot's width 4 stays at chance, ln 10, at every depth), per seed."""
    W = width
    D = sorted({c["config"]["model"]["depth"] for c in cells})
    by = {(c["config"]["seed"], c["config"]["model"]["depth"]): c["R_old"] for c in cells
          if c["config"]["model"]["width"] == W}
    seeds = sorted({s for s, _ in by})
    diff = np.array([by[(s, D[-1])] - by[(s, D[0])] for s in seeds])
    return {"sd": float(diff.std(ddof=1)), "unit": "seed", "n_pilot": diff.size, "estimate": float(diff.mean())}


def pilot_timings(out_dir: str | Path) -> dict:
    """Mean seconds per cell, ``{sweep: {"D=<depth>,W=<width>": s}}`` (the cells' own ``sweep.wall_s``)."""
    from numerics.studies.sweeps import load_cells

    out = {}
    for folder in sorted((Path(out_dir) / "sweeps").iterdir()):
        t: dict = {}
        for c in load_cells(folder):
            m = c["config"]["model"]
            t.setdefault(f"D={m['depth']},W={m['width']}", []).append(c["sweep"]["wall_s"])
        out[folder.name] = {k: float(np.mean(v)) for k, v in t.items()}
    return out


if __name__ == "__main__":   # pragma: no cover - the pilot's one-off report
    print(json.dumps({"power": pilot_estimates(sys.argv[1]), "timings": pilot_timings(sys.argv[1])}, indent=1))
