"""A fresh probe for every growth step (THEORY §8, §10: every sample has one role, used once).

The stop rule's level is a statement about one scan on a probe independent of everything that
chose the network. Step ``k``'s network was chosen by the probes of steps ``0 .. k-1`` (their
best sites and ``G``), so step ``k`` needs its own probe:

* generated data (the teachers, MNIST-1D, the character corpus's held-out text): step 0 keeps
  the workload's probe (role ``probe``), step ``k >= 1`` draws ``probe_n`` new samples from the
  per-step role stream ``seed_of(streams, "probe", k)``;
* a fixed split (digits, CIFAR): no fresh samples exist. **Choice** (ours): every step scans the
  whole probe split, so step 0's level holds as stated and steps ``k >= 1`` are conditional on
  the earlier steps' choices (said in the trajectory's notes). Cutting the split into one fold
  per step was tried and rejected: with the non-rejection stop rule each fold (digits: 480 / 4
  = 120 samples) was too small to reject, and growth stopped "saturated" at depth 0 with a test
  loss of 1.55 (`depthcert grow --config depthcert/configs/digits_cnn.toml`), absence of
  evidence read as a finding.

:func:`probe_source` says which, for the trajectory.
"""
from __future__ import annotations

import dataclasses


from numerics.workloads import TEACHERS, seed_of

__all__ = ["probe_source", "step_workload"]

GENERATED = (*TEACHERS, "mnist1d", "chars")


def _fresh(w, cfg, streams, k: int):
    n, seed = cfg["saturation"]["probe_n"], seed_of(streams, "probe", k)
    if w.kind in TEACHERS:
        return w.task.sample(n, seed)
    if w.kind == "chars":
        return w.task.windows("held", n, cfg["task"]["seq_len"], seed)
    from numerics import mnist1d

    x, y = mnist1d.sample(n, seed, dtype=w.probe[0].dtype)
    return (x.reshape(n, *w.probe[0].shape[1:]), y)


def step_workload(w, cfg, streams, k: int, n_steps: int):
    """The workload ``w`` with step ``k``'s own probe (docstring of ``numerics.studies.growth._probe``); ``w`` itself at ``k = 0``
    for generated data."""
    if w.kind in GENERATED and k > 0:
        return dataclasses.replace(w, probe=_fresh(w, cfg, streams, k))
    return w      # step 0, or a fixed split (module docstring: reused, the later steps' level conditional)


def probe_source(kind: str, n_steps: int) -> str:
    """One line for the trajectory's notes: where each step's probe came from."""
    if kind in GENERATED:
        return ("each scan has its own probe: step 0 the role 'probe', step k >= 1 a fresh sample from the role "
                "stream 'probe/k' (disjoint draws), so the stop rule's level holds at every step")
    return ("every scan uses the whole probe split (a fixed split has no fresh samples; Choice): the stop rule's "
            "level holds as stated at step 0, later steps are conditional on the earlier steps' choices")
