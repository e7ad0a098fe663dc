"""The sizes of ``depthcert reproduce --suite quick|full`` (data; fixed before any suite was run).

The teacher task (THEORY §1) has a known depth (4) and width (8); the reference models
are trained by Adam on their own sample. ``depth``: 6 depths below and above the
teacher's x seeds (Appendix M, signal decay, covariance, local insertion gains);
``rebound``: a depth x width grid (Paper A's joint scaling; the joint path is the
diagonal); ``growth``: Paper B's growth vs scratch over seeds; ``validity``: the validity
study's draws of one setup (bound validity).
"""
from __future__ import annotations

from plumbing.config import merge_config

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

# ----------------------------------------------------------------------------- MNIST-1D
#: The MNIST-1D cells' runner and validator (numerics.studies.reproduce._mnist1d_cells).
MNIST1D_RUNNER = "numerics.studies.reproduce._mnist1d_cells:run_cell"
MNIST1D_VALIDATE = "numerics.studies.reproduce._mnist1d_cells:validate_cell"

#: **Choice**: the fixed recipe. Width 16 (width 32 costs ~3.5x per step on one core), group
#: norm with 4 groups, Adam at 3e-3 on an i.i.d. sample of 4000, batch 128, then annealing;
#: the scan on 1024 probe samples with the linear, affine and readout families.
MNIST1D_BASE = {
    "seed": 0, "data_seed": 0,
    "task": {"kind": "mnist1d", "n_test": 2000, "n_population": 4000},
    "model": {"kind": "cnn1d", "width": 16, "depth": 4, "norm": "group", "groups": 4, "dtype": "float32"},
    "reference": {"n": 4000, "optimizer": "adam", "lr": 0.003, "steps": 300, "batch_size": 128, "anneal_steps": 100},
    "saturation": {"level": 0.05, "probe_n": 1024, "families": ["linear", "affine", "readout"], "width": 16,
                   "batch_size": 512, "n_chunks": 8, "beta_n": 512},
    "growth": {"max_depth": 3, "level": 0.05, "init": "jumpboard", "steps_per_growth": 200, "eps_stop": False,
               "run_past_stop": True},
}
_M_FULL = {**MNIST1D_BASE, "task": {**MNIST1D_BASE["task"], "n_population": 10000},
           "reference": {**MNIST1D_BASE["reference"], "steps": 1000, "anneal_steps": 300},
           "growth": {**MNIST1D_BASE["growth"], "max_depth": 4, "steps_per_growth": 400}}


def _m(base, kind: str, **model) -> dict:
    """One sweep's base: the depth cells in the stored-cell format 2 (the per-convention statistics; a new format is a
    new config, hence a new hash: cells of another format are never mixed in), the others in format 1."""
    cell = {"kind": kind, "format": 2} if kind == "depth" else {"kind": kind}
    return {**base, "model": {**base["model"], **model}, "cell": cell}


def _seeds(seeds) -> dict:
    return {"seed": list(seeds), "data_seed": list(seeds)}


def mnist1d_suite(base, depths, rebound_depths, widths, depth_seeds, rebound_seeds, growth_seeds, *,
                  validity_draws: int, n_boot: int, expected: str, power: dict, own_block: dict | None = None) -> dict:
    """The data of one MNIST-1D suite: four sweeps of MNIST-1D cells (depth, rebound, growth, own_block);
    ``own_block``: config overrides of the own-block growth sweep (default: the suite's growth sizes)."""
    sweep = {"runner": MNIST1D_RUNNER, "validate": MNIST1D_VALIDATE}
    return {
        "sweeps": {
            "depth": {"base": _m(base, "depth"), "grid": {"model.depth": list(depths)}, "zip": _seeds(depth_seeds),
                      **sweep},
            "rebound": {"base": _m(base, "risk"), "grid": {"model.depth": list(rebound_depths),
                                                          "model.width": list(widths)},
                        "zip": _seeds(rebound_seeds), **sweep},
            "growth": {"base": _m(base, "growth", depth=1), "grid": {}, "zip": _seeds(growth_seeds), **sweep},
            # growth vs scratch as Paper B ran it (the network's own block; _growth_own_block)
            "own_block": {"base": merge_config(_m(base, "own_block", depth=1), own_block or {}), "grid": {},
                          "zip": _seeds(growth_seeds), **sweep},
        },
        "growth": {}, "ag_max": {}, "claims": "mnist1d", "power": power, "n_boot": n_boot, "expected": expected,
        # bound validity: the validity study on an MNIST-1D run config (the readout block at the head input)
        "validity": {"config": {**{k: v for k, v in base.items() if k not in ("saturation", "growth")},
                                "model": {**base["model"], "depth": 2},
                                "insertion": {"at": -1, "family": "readout", "width": 16, "seed": 2},
                                "sizes": {"M": 4000, "K": 4000, "population": 4000}}, "draws": validity_draws},
    }


#: The pilot (seeds 1000+, never used by a suite): effect sizes, variances and per-cell run
#: times, from which the sizes below were fixed (``_power``).
PILOT = mnist1d_suite(MNIST1D_BASE, depths=[0, 1, 2, 4, 8], rebound_depths=[1, 2, 4], widths=[4, 8, 16],
                      depth_seeds=range(1000, 1003), rebound_seeds=range(1000, 1002), growth_seeds=range(1000, 1004),
                      validity_draws=0, n_boot=500, expected="about 13 minutes on one core", power={})

#: Pilot findings that fixed the sizes (``python -m numerics.studies.reproduce._pilot DIR`` on the pilot's
#: output, seeds 1000+): per claim the per-unit spread (``_power.mde``), and per cell the seconds (one thread,
#: measured under a load average of ~8 on the 2-core development machine, about 2x an idle core).
#: Width 4 stays at chance (ln 10) at every depth: with 4 groups the norm centres each channel over the positions,
#: so the mean-pooled features are constant. The narrowest width is 8.
PILOT_POWER: dict = {'covariance_near_diagonal': {'sd': 0.0196, 'unit': 'cell', 'n_pilot': 12, 'estimate': 0.7925},
     'signal_decay': {'sd': 0.5998, 'unit': 'cell', 'n_pilot': 12, 'estimate': 0.2351},
     'exponent_agreement': {'sd': 1.8622, 'unit': 'cell', 'n_pilot': 12, 'estimate': 1.7824},
     'joint_scaling_rebound': {'sd': 0.1188, 'unit': 'seed', 'n_pilot': 2, 'estimate': -0.3754},
     'ag_max_plateau': {'sd': None,
                        'unit': 'seed',
                        'n_pilot': 3,
                        'estimate': 1000000.0,
                        'why': 'in the pilot AG_max does not drop over the first depths: the ratio is censored'},
     'ag_max_plateau_level': {'sd': 0.2314,
                              'unit': 'seed',
                              'scale': 'on log AG_max',
                              'n_pilot': 3,
                              'estimate': 13.2633},
     'growth_vs_scratch': {'sd': 0.4181, 'unit': 'seed', 'n_pilot': 4, 'estimate': -0.5382},
     'local_insertion_shrinking': {'sd': 0.8356, 'unit': 'cell', 'n_pilot': 15, 'estimate': -0.0411},
     # growth_own_block: `python -m numerics.studies.reproduce._growth_own_block OUT.json 4` (the mnist1d-quick
     # own_block cell on seeds 1000-1003); sd, estimate: the relative test-loss gain vs scratch_phases
     'growth_own_block': {'sd': 0.3578, 'unit': 'seed', 'n_pilot': 4, 'estimate': -0.1983,
                          'sd_by_convention': {'scratch_phases/test': 0.3578, 'scratch_phases/train': 0.4775,
                                               'scratch_pooled/test': 0.4109, 'scratch_pooled/train': 0.5501}}}
PILOT_SECONDS = {'depth': {'D=0,W=16': 4.4, 'D=1,W=16': 12.3, 'D=2,W=16': 27.2, 'D=4,W=16': 86.8, 'D=8,W=16': 157.2},
 'growth': {'D=1,W=16': 161.4},
 'own_block': {'D=1->2,W=16 (mnist1d-quick recipe)': 182.7},
 'rebound': {'D=1,W=4': 7.9,
             'D=1,W=8': 8.8,
             'D=1,W=16': 14.3,
             'D=2,W=4': 13.2,
             'D=2,W=8': 16.6,
             'D=2,W=16': 23.3,
             'D=4,W=4': 21.0,
             'D=4,W=8': 22.8,
             'D=4,W=16': 40.7}}

SUITES["mnist1d-pilot"] = PILOT
SUITES["mnist1d-quick"] = mnist1d_suite(
    {**MNIST1D_BASE, "growth": {**MNIST1D_BASE["growth"], "max_depth": 2}}, depths=[0, 1, 2, 3, 4],
    rebound_depths=[1, 2, 4], widths=[8, 16], depth_seeds=[0, 1], rebound_seeds=[0, 1], growth_seeds=[0, 1, 2],
    validity_draws=20, n_boot=1000, power=PILOT_POWER,
    expected="under 10 minutes on 2 idle CPU cores with --workers 2 (about 1000 core-seconds under load), plus "
             "about 550 core-seconds for the own_block sweep (the pilot: 183 s per seed)")
SUITES["mnist1d"] = mnist1d_suite(
    _M_FULL, depths=[0, 1, 2, 4, 8, 12, 16], rebound_depths=[1, 2, 4, 8], widths=[8, 12, 16],
    depth_seeds=range(4), rebound_seeds=range(3), growth_seeds=range(10), validity_draws=100, n_boot=2000,
    power=PILOT_POWER, own_block={"growth": {"max_depth": 2}},   # Choice: depth 1 -> 2 (cost, below)
    expected=("about 73 min on 2 idle CPU cores with --workers 2: ~8800 core-seconds, from the pilot's per-cell times "
              "scaled to this recipe (1300 steps: x3.25 for training) and halved (the pilot ran under load ~2x); about "
              "twice that on the shared development machine; plus about 1.5 core-hours for the own_block sweep (10 seeds "
              "x ~540 s, grown from depth 1 to 2: estimated from the pilot's 183 s per mnist1d-quick cell scaled by "
              "sample-gradients; to depth 4 it would be ~4.6 core-hours). Measured on 2 idle cores with --workers 2, "
              "own_block sweep and validity included: 42.7 min (the own_block sweep 8.1 min, ~97 s per seed)"))
SUITES["mnist1d-full"] = mnist1d_suite(
    {**_M_FULL, "task": {**_M_FULL["task"], "n_population": 20000},
     "reference": {**_M_FULL["reference"], "steps": 1500, "anneal_steps": 500}},
    depths=[0, 1, 2, 3, 4, 6, 8, 12, 16], rebound_depths=[1, 2, 4, 8, 16], widths=[8, 16, 32, 64],
    depth_seeds=range(8), rebound_seeds=range(5), growth_seeds=range(101), validity_draws=400,
    n_boot=2000, power=PILOT_POWER,
    expected=("about 30-35 CPU-core-hours (from the pilot's per-cell times: depth 8 seeds x 9 depths ~4 h, the "
              "depth x width grid with widths to 64 ~18 h, 101 growth seeds ~11 h): for a Ray cluster, --backend ray; "
              "101 growth seeds give 80% power for the paper's +11.8% at the pilot's spread; plus about 75 CPU-core-hours for "
              "the own_block sweep, 101 seeds x ~2700 s, estimated as for mnist1d)"))
