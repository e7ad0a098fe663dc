"""Data adapters: whatever a user holds, as a stream of ``(x, y)`` batches on the model's device.

Accepted (:func:`as_stream`): a ``torch.utils.data.DataLoader``, a map-style ``Dataset`` of
``(x, y)`` items, a tuple ``(x, y)`` of tensors or numpy arrays (first dimensions equal), or
any re-iterable of ``(x, y)`` batches. Every source is re-cut into batches of ``batch_size``
samples in its own order (**Choice**: a fixed re-batching, so that the same samples in the
same order give bitwise the same statistics whatever the source's batching), and only one
batch (plus the remainder of one source batch) is held at a time: memory does not grow with
the size of the data. Floating inputs are cast to the model's dtype; every tensor is moved to
the model's device. The i.i.d. unit is the sample (THEORY §10). A NaN or an infinite value in a
floating ``x`` or ``y`` is refused where it is read, naming the argument and the sample's index
(:func:`check_finite`: one vectorised test per batch, on the model's device) -- never a scan whose
statistics are NaN.
"""
from __future__ import annotations

import itertools
from typing import Iterable, Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

__all__ = ["DataStream", "as_stream", "check_finite", "model_device_dtype"]


def model_device_dtype(model: torch.nn.Module) -> tuple[torch.device, torch.dtype]:
    """The device and floating dtype of the model's first parameter (CPU/float32 if it has none)."""
    p = next(model.parameters(), None)
    return (p.device, p.dtype) if p is not None else (torch.device("cpu"), torch.float32)


def check_finite(t: torch.Tensor, arg: str, first: int = 0) -> None:
    """Raises ValueError naming ``arg``, the sample index (``first`` + row) and the value if the floating
    tensor ``t`` (samples along axis 0) holds a NaN or an inf; one vectorised test, where ``t`` lives."""
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return
    finite = torch.isfinite(t)
    if bool(finite.all()):
        return
    bad = (~finite).reshape(t.shape[0], -1).any(dim=1).nonzero()[:, 0]
    i = int(bad[0])
    value = float(t[i].reshape(-1)[~finite[i].reshape(-1)][0])
    raise ValueError(f"{arg} == {value} at sample {first + i} ({bad.numel()} of the {t.shape[0]} samples read there "
                     "hold NaN or inf), must be finite: depthcert refuses NaN and inf in data (clean or drop them).")


def _tensor(v, arg: str) -> torch.Tensor:
    if isinstance(v, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(v))
    if isinstance(v, torch.Tensor):
        return v
    if isinstance(v, (int, float, np.number)):
        return torch.as_tensor(v)
    raise TypeError(f"{arg} holds a {type(v).__name__}, must hold tensors or numpy arrays.")


def _pair(batch, arg: str) -> tuple[torch.Tensor, torch.Tensor]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        raise TypeError(f"{arg} yields {type(batch).__name__} items, must yield (x, y) pairs.")
    x, y = _tensor(batch[0], arg), _tensor(batch[1], arg)
    if x.dim() == 0 or y.dim() == 0 or x.shape[0] != y.shape[0]:
        raise ValueError(f"{arg}: expected x (n, ...) and y (n, ...) with the same n, "
                         f"got {tuple(x.shape)} and {tuple(y.shape)}.")
    return x, y


def _is_pair_of_arrays(data) -> bool:
    return (isinstance(data, tuple) and len(data) == 2
            and all(isinstance(v, (torch.Tensor, np.ndarray)) for v in data))


class DataStream:
    """A re-iterable stream of ``(x, y)`` batches of ``batch_size`` samples, ``n`` samples in all.

    Attributes:
        n: number of samples.
        arg: the argument name used in errors.
    """

    def __init__(self, source, n: int, arg: str, batch_size: int, device, dtype, start: int = 0,
                 stop: int | None = None):
        self._source, self.n, self.arg, self.batch_size = source, int(n), arg, int(batch_size)
        self.device, self.dtype, self.start, self.stop = device, dtype, start, (n if stop is None else stop)

    def part(self, start: int, stop: int) -> "DataStream":
        """The samples ``start:stop`` of this stream (same source, same order)."""
        return DataStream(self._source, self.n, self.arg, self.batch_size, self.device, self.dtype,
                          self.start + start, self.start + stop)

    def __len__(self) -> int:
        return self.stop - self.start

    def _move(self, x, y, first: int):
        x = x.to(self.device, self.dtype if x.is_floating_point() else x.dtype)
        y = y.to(self.device, self.dtype if y.is_floating_point() else y.dtype)
        check_finite(x, f"{self.arg} x", first), check_finite(y, f"{self.arg} y", first)
        return x, y

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        pending, held, seen, first = [], 0, 0, self.start
        for bx, by in self._source():
            lo, hi = max(self.start - seen, 0), min(self.stop - seen, bx.shape[0])
            seen += bx.shape[0]
            if hi > lo:
                pending.append((bx[lo:hi], by[lo:hi]))
                held += hi - lo
            while held >= self.batch_size:
                held -= self.batch_size
                yield self._move(*_pop(pending, self.batch_size), first)
                first += self.batch_size
            if seen >= self.stop:
                break
        if held:
            yield self._move(*_pop(pending, held), first)

    def take(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The first ``k`` samples, concatenated (for the small curvature and example samples)."""
        xs, ys = zip(*self.part(0, min(k, len(self)))) if k > 0 and len(self) else ((), ())
        if not xs:
            raise ValueError(f"{self.arg} has no samples, must have at least 1.")
        return torch.cat(xs), torch.cat(ys)


def _pop(pending: list, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The first ``k`` rows of the pending chunks (views where possible; O(k) work, never O(n))."""
    xs, ys = [], []
    while k:
        x, y = pending[0]
        take = min(k, x.shape[0])
        xs.append(x[:take]), ys.append(y[:take])
        if take == x.shape[0]:
            pending.pop(0)
        else:
            pending[0] = (x[take:], y[take:])
        k -= take
    return (xs[0], ys[0]) if len(xs) == 1 else (torch.cat(xs), torch.cat(ys))


def _sources(data, arg: str):
    """``(source callable yielding (x, y) pairs, n)`` for each accepted kind of data."""
    if _is_pair_of_arrays(data):
        x, y = _pair(data, arg)
        return (lambda: iter([(x, y)])), x.shape[0]
    if isinstance(data, DataLoader):
        return (lambda: (_pair(b, arg) for b in data)), _loader_size(data, arg)
    if isinstance(data, Dataset) and hasattr(data, "__len__"):
        loader = DataLoader(data, batch_size=256, shuffle=False)
        return (lambda: (_pair(b, arg) for b in loader)), len(data)
    if isinstance(data, (str, bytes, dict)) or not isinstance(data, Iterable):
        raise TypeError(f"{arg} is a {type(data).__name__}, must be a DataLoader, a Dataset, a tuple (x, y) "
                        "of tensors or numpy arrays, or an iterable of (x, y) batches.")
    if iter(data) is data:
        raise TypeError(f"{arg} is a one-shot iterator ({type(data).__name__}), must be re-iterable "
                        "(a list of batches, a DataLoader or a Dataset): the data are read more than once.")
    return (lambda: (_pair(b, arg) for b in data)), _count(lambda: (_pair(b, arg) for b in data))


def _loader_size(loader: DataLoader, arg: str) -> int:
    """Samples per pass of a loader in a fixed order (a shuffled one would make the parts of two passes overlap)."""
    from torch.utils.data import RandomSampler, SequentialSampler

    sampler = getattr(loader.batch_sampler, "sampler", None) if loader.batch_sampler is not None else loader.sampler
    fixed = isinstance(sampler, (SequentialSampler, range, list, tuple))
    if not fixed:
        what = "shuffle=True" if isinstance(sampler, RandomSampler) else f"a {type(sampler).__name__}"
        raise ValueError(f"{arg} is a DataLoader with {what}, must iterate in a fixed order "
                         "(a SequentialSampler, shuffle=False, or a list of indices): the probe and the curvature "
                         "sample are disjoint parts of one order, which a random sampler changes between passes.")
    if isinstance(sampler, SequentialSampler) and not loader.drop_last and hasattr(loader.dataset, "__len__"):
        return len(loader.dataset)
    return _count(lambda: (_pair(b, arg) for b in loader))


def _count(source) -> int:
    return sum(x.shape[0] for x, _ in source())


def as_stream(data, arg: str, model: torch.nn.Module, batch_size: int = 256) -> DataStream:
    """``data`` as a :class:`DataStream` on the model's device and dtype (docstring of ``numerics.user_network._data``).

    Raises:
        TypeError: an unsupported kind of data (names ``arg`` and the type).
        ValueError: ``x`` and ``y`` of different lengths, or feature shapes that change between batches.
    """
    if isinstance(data, DataStream):
        return data
    source, n = _sources(data, arg)
    device, dtype = model_device_dtype(model)
    stream = DataStream(source, n, arg, batch_size, device, dtype)
    shapes = {(tuple(x.shape[1:]), tuple(y.shape[1:])) for x, y in itertools.islice(source(), 64)}
    if len(shapes) > 1:
        raise ValueError(f"{arg}: expected batches of one sample shape, got x/y sample shapes {sorted(shapes)}.")
    return stream
