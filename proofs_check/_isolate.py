"""A user chain's solver calls in a child process with hard limits (``depthcert prove --chain``).

z3's own timeout (``solver.set("timeout", ms)``) is set on every query, but on non-linear
arithmetic of high degree a single query can run far past it (a degree-64 chain: 150 s
against 5 s), and while z3's C code runs, a SIGTERM handler of the same process cannot
act. So :func:`check_chain_limited` runs :func:`proofs_check.chain.check_chain` in a
forked child and the parent, which only waits, enforces:

* **time per query**: the child publishes the deadline of the query it runs (z3 queries,
  :mod:`proofs_check._smt`, and exact LPs, :mod:`proofs_check._farkas`); a query still
  running :data:`GRACE_S` after its ``--timeout`` is stopped with the child;
* **time per chain**: ``LIMITS.max_seconds``, and for a non-linear chain (whose queries
  may each take the whole timeout) :func:`chain_budget` (**Choice**: ``min(LIMITS.max_seconds,
  4 x --timeout + 5 s)``); the child gives the checks left over ``unknown`` itself (between
  queries), the parent stops it :data:`GRACE_S` after the chain's deadline (e.g. in an exact
  confirmation of a model);
* **memory**: the child's address space may grow by at most ``LIMITS.max_memory_bytes``
  (``RLIMIT_AS``); an allocation beyond it ends the check;
* **signals**: SIGTERM / SIGINT reach the parent (waiting in Python), which stops the
  child at once.

A chain stopped by a limit is ``unknown`` (``entailed: None``, exit code 1) and
``reason`` names the limit hit and its value.
"""
from __future__ import annotations

import faulthandler
import multiprocessing
import os
import resource
import signal
import time

from proofs_check._limits import LIMITS
from proofs_check._results import Check

#: Seconds a query or a chain may run past its limit before the child is stopped (**Choice**).
GRACE_S = 2.0


def chain_budget(timeout_s: float) -> float:
    """Wall-clock seconds for all checks of one chain: ``min(LIMITS.max_seconds, 4 * timeout_s + 5)``."""
    return min(LIMITS.max_seconds, 4.0 * timeout_s + 5.0)


def _address_space() -> int:
    """Bytes of address space this process uses now (``VmSize``; 0 where unknown)."""
    from plumbing.machine import proc_kib

    return proc_kib("/proc/self/status", "VmSize") or 0


_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def _die_with_parent() -> None:
    """Linux: the child is killed when the parent dies, however it dies (``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):   # pragma: no cover - not Linux
        pass


def _child(send, watch, chain_watch, chain, timeout_s: float, necessity: bool, budget: float, memory: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the parent decides
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    _die_with_parent()
    faulthandler.disable()    # an allocation refused under RLIMIT_AS may end z3 with SIGSEGV: no dump of our stack
    from proofs_check import _farkas, _smt
    from proofs_check.chain import check_chain

    base = _address_space()
    if base and memory:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = base + memory if hard == resource.RLIM_INFINITY else min(base + memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    _smt.WATCH = _farkas.WATCH = watch
    _smt.WATCH_CHAIN = chain_watch
    try:
        send.send(("ok", check_chain(chain, timeout_s, necessity, budget_s=budget)))
    except MemoryError:
        send.send(("memory", ""))
    except Exception as exc:   # z3 reports an allocation failure as Z3Exception("out of memory")
        kind = "memory" if "memory" in str(exc).lower() else "error"
        send.send((kind, f"{type(exc).__name__}: {exc}"))
    finally:
        send.close()
        os._exit(0)


def _stopped(chain, why: str):
    from proofs_check.chain import ChainResult

    check = Check(chain.name, "entailment/z3", "UNKNOWN", "z3", why)
    return ChainResult(chain.name, None, "unknown", (check,), None, reason=why)


def _wait(proc, recv, watch, chain_watch, end: float) -> tuple[str, object]:
    """Poll the child until it answers, dies, or passes a limit: ``(kind, value)``, kind one of the child's
    (``ok``, ``memory``, ``error``...), ``died``, ``query`` (a query past its deadline) or ``budget`` (the chain's)."""
    while True:
        if recv.poll(0.05):
            try:
                return recv.recv()
            except (EOFError, OSError):
                return "died", ""
        if not proc.is_alive() and not recv.poll(0):
            return "died", ""
        now, query = time.monotonic(), watch.value
        if query and now > query + GRACE_S:
            return "query", None
        if now > min(end, chain_watch.value + GRACE_S if chain_watch.value else end):
            return "budget", None


def check_chain_limited(chain, timeout_s: float, necessity: bool = True, memory: int | None = None):
    """:func:`proofs_check.check_chain` in a child process with the limits of the module docstring.

    Returns:
        The child's :class:`proofs_check.ChainResult`, or an ``unknown`` one whose ``reason``
        names the limit hit ("time limit per query", "time budget of the chain", "memory budget").
    """
    memory = LIMITS.max_memory_bytes if memory is None else memory
    budget = chain_budget(timeout_s)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    watch = ctx.Value("d", 0.0, lock=False)     # time.monotonic() deadline of the running query, 0: none
    chain_watch = ctx.Value("d", 0.0, lock=False)   # the chain's deadline, once the child knows it (0: not yet)
    proc = ctx.Process(target=_child, args=(send, watch, chain_watch, chain, timeout_s, necessity, budget, memory),
                       daemon=True)
    end = time.monotonic() + LIMITS.max_seconds + GRACE_S
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)    # a signal during the fork: handled after it, child stopped
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
    send.close()
    try:
        got = _wait(proc, recv, watch, chain_watch, end)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join()
        recv.close()
    kind, value = got
    if kind == "query":
        return _stopped(chain, f"time limit per query hit: a solver query ran past --timeout {timeout_s:g} s "
                        f"(+{GRACE_S:g} s grace) and was stopped")
    if kind == "budget":
        return _stopped(chain, f"time budget of the chain hit ({budget:g} s for a non-linear chain: min("
                        f"{LIMITS.max_seconds:g} s, 4 x --timeout + 5 s); {LIMITS.max_seconds:g} s for a "
                        "linear one); the solver was stopped")
    if kind == "ok":
        return value
    if kind == "memory":
        return _stopped(chain, f"memory budget hit: the solver may use at most {memory / 2**20:g} MB beyond its start")
    if kind == "died":   # z3 ends the process (SIGSEGV / abort) when an allocation fails under RLIMIT_AS
        return _stopped(chain, f"memory budget hit (most likely): the solver process ended with code {proc.exitcode} "
                        f"and may use at most {memory / 2**20:g} MB beyond its start")
    return _stopped(chain, f"the solver failed: {value}")


__all__ = ["GRACE_S", "chain_budget", "check_chain_limited"]
