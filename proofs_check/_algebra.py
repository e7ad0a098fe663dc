"""Helpers of the side-algebra checks (:mod:`proofs_check.side_algebra` and its THEORY §6 companion).

* :func:`timed` -- turns a body returning ``(status, detail, countermodel)`` into a :class:`Check`;
* :func:`is_zero` -- ``simplify(expr) == 0``;
* :func:`witness_point` -- a point (distinct values per symbol) with the residual there.
"""
from __future__ import annotations

import functools
import time
from typing import Callable

import sympy as sp

from proofs_check._results import Check

SUBJECT = "side_algebra"


def timed(name: str, engine: str):
    """Run the wrapped body; turn its ``(status, detail, countermodel)`` into a :class:`Check`."""
    def wrap(fn: Callable):
        @functools.wraps(fn)
        def run(*args, **kw) -> Check:
            t0 = time.perf_counter()
            status, detail, cm = fn(*args, **kw)
            label = name.format(*args, **kw) if "{" in name else name
            return Check(SUBJECT, label, status, engine, detail, countermodel=cm, seconds=time.perf_counter() - t0)
        return run
    return wrap


def is_zero(expr: sp.Expr) -> bool:
    """``simplify(expr) == 0``."""
    return sp.simplify(expr) == 0


_VALUES = (0.7, 0.2, 1.3, 0.45, 2.5, 0.9, 3.0, 0.35)


def witness_point(expr: sp.Expr) -> dict:
    """A witness point (distinct values per symbol, 2 for sizes) with the residual there."""
    names = sorted(expr.free_symbols, key=lambda x: x.name)
    subs = {x: (2 if x.name in ("M", "K", "n", "D") else _VALUES[i % len(_VALUES)]) for i, x in enumerate(names)}
    value = sp.N(expr.subs(subs))
    residual = float(value) if value.is_real else str(value)  # log of a negative: complex
    return {**{x.name: float(v) for x, v in subs.items()}, "residual": residual}
