""""Refused before any work", checked without a clock (a test must pass on a machine 3x slower or loaded).

:func:`forbid_work` replaces the entry points every expensive step of depthcert passes through (a forward or
backward pass of a network, hence any training, scan or evaluation; a figure written; a solver query; a worker
process or subprocess started; a sweep grid enumerated past the most cells a sweep may hold) with a stub that
records the call and raises :class:`WorkStarted`. A
``BaseException``, so that the CLI's ``except Exception`` (one line, exit 1) cannot turn it into an ordinary
failure; the list returned holds every call, so a test asserts it is empty even where the exception was caught.
"""
from __future__ import annotations

import importlib

#: ``(module, attribute path)`` of each entry point of work.
WORK = (
    ("torch.nn", "Module.__call__"),                   # any forward pass: training, scan, evaluation
    ("torch.autograd", "backward"),
    ("torch.autograd", "grad"),
    ("torch", "Tensor.backward"),
    ("matplotlib.figure", "Figure.savefig"),           # a figure drawn and written
    ("z3", "Solver.check"),                            # a solver query
    ("subprocess", "Popen.__init__"),                  # a worker, an isolated solver, a sweep cell
    ("multiprocessing.process", "BaseProcess.start"),
    ("concurrent.futures", "ProcessPoolExecutor.submit"),
)


class WorkStarted(BaseException):
    """An expensive step began where the input should have been refused first."""


def forbid_work(monkeypatch) -> list[str]:
    """Stub every entry point of :data:`WORK` (through ``monkeypatch``: undone after the test); the returned list
    collects the name of each one called."""
    calls: list[str] = []
    for module, path in WORK:
        try:
            owner = importlib.import_module(module)
        except ImportError:        # an optional library not installed: nothing can call it
            continue
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        what = f"{module}.{path}"

        def stop(*args, _what=what, **kwargs):
            calls.append(_what)
            raise WorkStarted(_what)
        monkeypatch.setattr(owner, name, stop)
    _cap_sweep_cells(monkeypatch, calls)
    return calls


def _cap_sweep_cells(monkeypatch, calls: list[str]) -> None:
    """A sweep's cells are counted as they are built: one past ``MAX_CELLS`` is work (the grid enumerated before
    its size was checked), stopped there rather than after the whole grid."""
    from numerics.studies.sweeps import _spec

    built = 0

    def cell(*args, _real=_spec.Cell, **kwargs):
        nonlocal built
        built += 1
        if built > _spec.MAX_CELLS:
            calls.append("numerics.studies.sweeps._spec.Cell")
            raise WorkStarted(f"{built} sweep cells built: more than a sweep may hold ({_spec.MAX_CELLS})")
        return _real(*args, **kwargs)
    monkeypatch.setattr(_spec, "Cell", cell)
