"""One vocabulary of data roles (THEORY §10): every sample a study draws has exactly one of them.

A certificate needs samples independent of each other and of the reference's own sample, each
with a role; the toolkit asks for them by role and says in every result which sample fixed what.
The names here are the role streams of :mod:`numerics.seeding` (``Streams.seed_for(role)``), the
role accessors of :class:`numerics.workloads.Workload` (:data:`WORKLOAD_ROLES`), the run study's
samples and the public API's role samples (:mod:`numerics.user_network._roles`).

The remaining streams of :data:`numerics.seeding.ROLES` (``teacher``, ``reference_init``,
``reference_training``, ``insertion``, ``block_training``, ``check_population``, ``torch_global``)
draw parameters or orders, not samples.
"""
from __future__ import annotations

from typing import Mapping

__all__ = ["DATA_ROLES", "MONTE_CARLO", "POPULATION", "PROBE", "REFERENCE_SAMPLE", "S", "SCAN_PROBE", "SIGNAL", "T",
           "WORKLOAD_ROLES"]

SIGNAL = "signal"
S = "S"
T = "T"
PROBE = "probe"
MONTE_CARLO = "monte_carlo"
POPULATION = "population"
REFERENCE_SAMPLE = "reference_sample"
SCAN_PROBE = "scan_probe"

#: Data role -> what its sample does (THEORY §10); fixed before ``S`` and ``T``: signal, reference_sample.
DATA_ROLES: Mapping[str, str] = {
    SIGNAL: "fixes everything chosen before S: direction G, step, cap, beta, variance bounds (f~_pop)",
    S: "the block's training sample: f_new, the (C2) selection, Delta_ERM, the empirical terms on S",
    T: "the test sample: L_test of every candidate and its variance (independent of S)",
    PROBE: "the assumption diagnostics / saturation scores (independent of S, T and the population sample)",
    MONTE_CARLO: "Rademacher sign draws and other Monte Carlo (no data, drawn with S and T)",
    POPULATION: "the Monte-Carlo population sample: Delta_R's confidence bound (E_R), the population risks R",
    REFERENCE_SAMPLE: "f_old's own training sample (independent of every role above)",
    SCAN_PROBE: "the run's own saturation scan at its site (n_needed_improvable, a planning number: it certifies "
                "nothing); fixed with the setup, independent of every role above",
}

#: :class:`numerics.workloads.Workload` field -> the data role of its sample.
WORKLOAD_ROLES: Mapping[str, str] = {"train": REFERENCE_SAMPLE, "test": T, "probe": PROBE, "population": POPULATION}
