"""Benchmark: deciding a long entailed chain, incremental necessity vs one solver per premise.

Run: ``python benchmarks/bench_proofs.py [--links 62 125 250 500] [--baseline-max 500]``.

For each length ``n`` the chain ``x0 <= x1 + 1, ..., x{n-1} <= x{n} + 1  =>  x0 <= x{n} + n``
(every link needed) is decided by :func:`proofs_check.check_chain` -- consistency,
entailment (z3 and the exact Farkas LP) and the necessity of every premise on **one** z3
solver with assumption literals and unsat cores. The baseline, measured in the same run,
is the previous approach to necessity: a fresh solver per premise holding the other
``n - 1`` premises (:func:`proofs_check._smt.entails`, the same encoding). Printed: seconds
for both, their ratio, and the growth factor per doubling of ``n``.
"""
from __future__ import annotations

import argparse
import time

from proofs_check import _smt, check_chain, parse_chain


def link_chain(n: int):
    return parse_chain({"name": f"links{n}", "premises": [f"x{i} <= x{i + 1} + 1" for i in range(n)],
                        "conclusion": f"x0 <= x{n} + {n}"})


def incremental(n: int) -> float:
    """Seconds for the full chain check (consistency, entailment, Farkas, necessity of each link)."""
    chain = link_chain(n)
    t0 = time.perf_counter()
    r = check_chain(chain)
    seconds = time.perf_counter() - t0
    needed = [c for c in r.checks if c.name.startswith("necessity/") and c.status == "PASS"]
    assert r.entailed is True and len(needed) == n, (r.status, len(needed))
    return seconds


def per_premise(n: int) -> float:
    """Baseline: one fresh solver per dropped premise (the necessity checks alone)."""
    chain = link_chain(n)
    relations = [p.relation for p in chain.premises]
    t0 = time.perf_counter()
    for i in range(n):
        out = _smt.entails(relations[:i] + relations[i + 1:], chain.conclusion)
        assert out.status == "sat"
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, nargs="+", default=[62, 125, 250, 500])
    ap.add_argument("--baseline-max", type=int, default=500, help="skip the baseline above this length")
    args = ap.parse_args()
    print(f"{'links':>6} {'incremental (s)':>16} {'per-premise (s)':>16} {'ratio':>7} {'growth/doubling':>16}")
    previous = None
    for n in args.links:
        t_new = incremental(n)
        t_old = per_premise(n) if n <= args.baseline_max else float("nan")
        growth = "" if previous is None else f"{t_new / previous:.2f}x"
        ratio = f"{t_old / t_new:.1f}x" if t_old == t_old else "-"
        print(f"{n:>6} {t_new:>16.2f} {t_old:>16.2f} {ratio:>7} {growth:>16}", flush=True)
        previous = t_new
    print("incremental = consistency + entailment + exact Farkas + necessity of every link on one solver; "
          "per-premise = necessity alone, a fresh solver per link (the previous approach). Machine shared: "
          "compare the ratio, not the seconds.")


if __name__ == "__main__":
    main()
