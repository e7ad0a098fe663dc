"""The sizes of ``depthcert reproduce --suite quick|full`` (data; fixed before any suite was run).

The teacher task (THEORY §1) has a known depth (4) and width (8); the reference models
are trained by Adam on their own sample. ``depth``: 6 depths below and above the
teacher's x seeds (Appendix M, signal decay, covariance, local insertion gains);
``rebound``: a depth x width grid (Paper A's joint scaling; the joint path is the
diagonal); ``growth``: Paper B's growth vs scratch over seeds; ``validity``: the validity
study's draws of one setup (bound validity).
"""
from __future__ import annotations

TEACHER_BASE = {
    "seed": 0, "level": 0.05,
    "task": {"kind": "regression", "d_in": 4, "depth": 4, "width": 8, "noise_std": 0.05, "noise_clip": 3.0,
             "mean_bound": 1.0, "head_bias": False},
    "model": {"width": 8, "depth": 1, "norm": "rms", "eps_n": 0.0},
    "reference": {"n": 4000, "optimizer": "adam", "lr": 0.01, "steps": 600, "batch_size": 256},
    "insertion": {"at": -1, "family": "readout", "width": 16, "seed": 2, "output_cap": 0.5},
    "block_training": {"optimizer": "sgd", "lr": 0.5, "steps": 100, "batch_size": 4096},
    "sizes": {"M": 20000, "K": 20000, "population": 20000, "delta": 0.025, "delta_prime": 0.025},
}

_FULL_BASE = {**TEACHER_BASE, "reference": {**TEACHER_BASE["reference"], "n": 16000, "steps": 3000},
              "sizes": {**TEACHER_BASE["sizes"], "M": 200000, "K": 200000, "population": 200000}}

SUITES = {
    "quick": {
        "sweeps": {
            "depth": {"base": TEACHER_BASE, "grid": {"model.depth": [1, 2, 3, 4, 6, 8], "seed": [0, 1, 2]}},
            "rebound": {"base": TEACHER_BASE,
                        "grid": {"model.depth": [1, 2, 4, 8], "model.width": [2, 4, 8, 16], "seed": [0, 1, 2]}},
        },
        "growth": {"config": TEACHER_BASE, "seeds": [0, 1, 2, 3, 4], "base_steps": 300, "grow_steps": 300},
        "validity": {"config": {**TEACHER_BASE, "model": {**TEACHER_BASE["model"], "depth": 2}}, "draws": 100},
        # AG_max vs depth: the growth studies' teacher of known depth (light sizes), networks
        # trained independently at each depth, over seeds
        "ag_max": {"config": None, "quick": True, "depths": [1, 2, 3, 4, 6, 8], "seeds": [0, 1, 2]},
        "n_boot": 1000,
        "expected": "under 10 minutes on 2 CPU cores (measured: see the report's wall time)",
    },
    "full": {
        "sweeps": {
            "depth": {"base": _FULL_BASE,
                      "grid": {"model.depth": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32], "seed": [0, 1, 2, 3, 4]}},
            "rebound": {"base": _FULL_BASE, "grid": {"model.depth": [1, 2, 4, 8, 16, 32],
                                                     "model.width": [2, 4, 8, 16, 32, 64], "seed": [0, 1, 2, 3, 4]}},
        },
        "growth": {"config": _FULL_BASE, "seeds": list(range(20)), "base_steps": 1500, "grow_steps": 1500},
        "validity": {"config": {**_FULL_BASE, "model": {**_FULL_BASE["model"], "depth": 2}}, "draws": 400},
        "ag_max": {"config": None, "quick": False, "depths": [1, 2, 4, 8, 12, 16, 24, 32], "seeds": list(range(5))},
        "n_boot": 2000,
        "expected": ("about 5-8 CPU-core-hours (230 cells, 20 growth seeds, 400 validity draws; one thread per "
                     "cell, measured on the 2-core development machine under load: ~40 s per cell at depth 1, ~3 min "
                     "at depth 32, ~4.5 min at width 64): ~3-4 h with --workers 2 on 2 cores, ~15 min on a 32-CPU "
                     "Ray cluster for the sweeps (--backend ray; the growth and validity studies run on the driver)"),
    },
}
