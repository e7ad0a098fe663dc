"""A fresh probe for every growth step (THEORY §8, §10: every sample has one role, used once).

The stop rule's level is a statement about one scan on a probe independent of everything that
chose the network. Step ``k``'s network was chosen by the probes of steps ``0 .. k-1`` (their
best sites and ``G``), so step ``k`` needs its own probe:

* generated data (the teachers, MNIST-1D, the character corpus's held-out text): step 0 keeps
  the workload's probe (role ``probe``), step ``k >= 1`` draws ``probe_n`` new samples from the
  per-step role stream ``seed_of(streams, "probe", k)``;
* a fixed split (digits, CIFAR): no fresh samples exist, so **Choice** (ours): the probe split
  is cut into ``n_steps`` disjoint contiguous folds, fold ``k`` for step ``k`` (each step's
  probe is ``probe_n // n_steps`` samples).

:func:`probe_source` says which, for the trajectory.
"""
from __future__ import annotations

import dataclasses

import torch

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


def _fold(probe, k: int, n_steps: int):
    x, y = probe
    size = x.shape[0] // n_steps
    if size < 2:
        raise ValueError(f"saturation.probe_n == {x.shape[0]}, must be >= {2 * n_steps} to give each of the "
                         f"{n_steps} growth steps its own probe fold of >= 2 samples.")
    return x[k * size:(k + 1) * size], y[k * size:(k + 1) * size]


def step_workload(w, cfg, streams, k: int, n_steps: int):
    """The workload ``w`` with step ``k``'s own probe (module docstring); ``w`` itself at ``k = 0``
    for generated data."""
    if w.kind in GENERATED:
        return w if k == 0 else dataclasses.replace(w, probe=_fresh(w, cfg, streams, k))
    with torch.no_grad():
        return dataclasses.replace(w, probe=_fold(w.probe, k, n_steps))


def probe_source(kind: str, n_steps: int) -> str:
    """One line for the trajectory's notes: where each step's probe came from."""
    if kind in GENERATED:
        return ("each scan has its own probe: step 0 the role 'probe', step k >= 1 a fresh sample from the role "
                "stream 'probe/k' (disjoint draws), so the stop rule's level holds at every step")
    return (f"each scan has its own probe: the probe split cut into {n_steps} disjoint folds, fold k for step k "
            "(a fixed split has no fresh samples), so the stop rule's level holds at every step")
