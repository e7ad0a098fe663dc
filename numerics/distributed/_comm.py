"""The few collectives a data-parallel scan needs, on the process group's device.

``gloo`` reduces CPU tensors, ``nccl`` CUDA tensors: :func:`comm_device` picks the device from the
backend (the model's own device where the backend serves both), and every helper moves its tensors
there and back. Everything here is called only where :func:`active` is true.
"""
from __future__ import annotations

import contextlib
import threading

import torch

__all__ = ["active", "all_gather_cat", "all_gather_ints", "all_max", "all_sum", "broadcast_object", "comm_device", "gather_objects",
           "local_only", "raise_together", "rank", "together", "world_size"]

_LOCAL = threading.local()


def _dist():
    import torch.distributed as dist

    return dist


def active() -> bool:
    """True where ``torch.distributed`` is available and initialised with more than one rank, outside :func:`local_only`."""
    if getattr(_LOCAL, "depth", 0):
        return False
    dist = _dist()
    return bool(dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1)


@contextlib.contextmanager
def local_only():
    """Inside this context every call runs in its own process, as if ``torch.distributed`` were not initialised
    (for code that calls ``dc.saturation`` on the same data on every rank, or on one rank only)."""
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1


def rank() -> int:
    """This process's rank in the default group."""
    return _dist().get_rank()


def world_size() -> int:
    """Number of ranks in the default group."""
    return _dist().get_world_size()


def comm_device(model_device: torch.device) -> torch.device:
    """Where collective tensors live: CPU for ``gloo``, CUDA for ``nccl``, the model's device for a mixed backend."""
    backend = str(_dist().get_backend()).lower()
    if "nccl" in backend and "gloo" not in backend:
        return model_device if model_device.type == "cuda" else torch.device("cuda", torch.cuda.current_device())
    if "nccl" not in backend:
        return torch.device("cpu")
    return model_device


def all_sum(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Elementwise sum of ``t`` over the ranks (a new tensor on ``t``'s device)."""
    buf = t.detach().to(device, copy=True)
    _dist().all_reduce(buf, op=_dist().ReduceOp.SUM)
    return buf.to(t.device)


def all_max(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Elementwise maximum of ``t`` over the ranks."""
    buf = t.detach().to(device, copy=True)
    _dist().all_reduce(buf, op=_dist().ReduceOp.MAX)
    return buf.to(t.device)


def all_gather_cat(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Every rank's 1-D ``t`` (lengths may differ), concatenated in rank order: the same tensor on every rank."""
    dist = _dist()
    counts = all_gather_ints(int(t.numel()), device)
    width = max(counts)
    buf = torch.zeros(width, dtype=t.dtype, device=device)
    buf[: t.numel()] = t.detach().to(device)
    out = [torch.empty_like(buf) for _ in counts]
    dist.all_gather(out, buf)
    return torch.cat([o[:c] for o, c in zip(out, counts)]).to(t.device)


def all_gather_ints(v: int, device: torch.device) -> list[int]:
    """Every rank's integer ``v``, in rank order."""
    dist = _dist()
    mine = torch.tensor([int(v)], dtype=torch.int64, device=device)
    out = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(out, mine)
    return [int(o) for o in out]


def gather_objects(obj) -> list:
    """Every rank's picklable ``obj``, in rank order (small objects only: fingerprints, flags, messages)."""
    dist = _dist()
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj):
    """Rank 0's picklable ``obj`` on every rank (tensors travel on the CPU; small objects only)."""
    box = [obj if rank() == 0 else None]
    _dist().broadcast_object_list(box, src=0)
    return box[0]


def raise_together(error: BaseException | None) -> None:
    """Every rank raises if any rank's ``error`` is not None (no rank is left waiting in a later collective):
    that rank its own error, every other a RuntimeError naming the rank and its message."""
    said = gather_objects(None if error is None else f"{type(error).__name__}: {error}")
    if error is not None:
        raise error
    failed = [(r, m) for r, m in enumerate(said) if m is not None]
    if failed:
        raise RuntimeError("; ".join(f"rank {r} stopped the data-parallel scan: {m}" for r, m in failed))


@contextlib.contextmanager
def together():
    """Inside this context any error (an ``Exception``: a user's data, collate or loss may raise any kind) is raised
    on every rank at the end of the block (:func:`raise_together`): use around work without collectives."""
    error = None
    try:
        yield
    except Exception as e:   # noqa: BLE001 -- re-raised on this rank; the others raise a RuntimeError naming it
        error = e
    raise_together(error)
