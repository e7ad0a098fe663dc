"""A CIFAR batch file read as data, never as code: a restricted unpickler.

A pickle is a program: plain ``pickle.load`` calls any global a file names (``os.system``,
``open``, ...). :func:`read_pickled_batch` reads what the published CIFAR batches hold --
dicts, lists, bytes, strings, numbers and numpy arrays, pickled by numpy 1.x
(``numpy.core.*``) or 2.x (``numpy._core.*``) at any protocol -- and refuses every other
global by name (:class:`UnsafePickleError`) before anything runs.
"""
from __future__ import annotations

import os
import pickle

import numpy as np

from plumbing.validation import InputError

__all__ = ["UnsafePickleError", "read_pickled_batch"]


class UnsafePickleError(InputError):
    """A CIFAR batch file whose pickle names a global that no CIFAR batch holds (refused before it runs)."""

    def __init__(self, path: str | os.PathLike, module: str, name: str):
        self.key, self.allowed, self.value = str(path), "a CIFAR batch (dicts, lists, bytes, numbers, numpy arrays)", \
            f"{module}.{name}"
        ValueError.__init__(self, f"{path}: refused to load: its pickle calls {module}.{name}, which no CIFAR batch "
                                  "holds (a pickle can run code; only dicts, lists, bytes, numbers and numpy arrays "
                                  "are read).")


def _numpy_globals() -> dict:
    """The numpy callables a pickled array or dtype names, under every module name numpy 1.x and 2.x write."""
    a = np.zeros(1, dtype=np.uint8)
    reconstruct, frombuffer, scalar = a.__reduce__()[0], a.__reduce_ex__(5)[0], np.int64(0).__reduce__()[0]
    out = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for core in ("numpy.core", "numpy._core"):
        out[(f"{core}.multiarray", "_reconstruct")] = reconstruct
        out[(f"{core}.multiarray", "scalar")] = scalar
        out[(f"{core}.numeric", "_frombuffer")] = frombuffer
    return out


def _latin1_encode(text: str, encoding: str = "latin1", *rest) -> bytes:
    """``_codecs.encode`` as Python 3's pickler uses it for ``bytes`` under protocols 0-2 (latin-1 only)."""
    if encoding not in ("latin1", "latin-1") or rest or not isinstance(text, str):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r}")
    return text.encode("latin1")


class _BatchUnpickler(pickle.Unpickler):
    """Reads what a CIFAR batch holds and refuses every other global (:class:`UnsafePickleError`).

    A pickle is a program: ``pickle.load`` calls any global a file names (``os.system``, ...).
    Plain containers, strings, bytes and numbers need no global; a numpy array needs
    ``_reconstruct``/``_frombuffer``, ``ndarray`` and ``dtype`` (object dtypes refused), and
    Python 3's protocols 0-2 write ``bytes`` through ``_codecs.encode(text, "latin1")`` (an empty
    one as ``bytes()``).
    """

    def __init__(self, fh, path):
        super().__init__(fh, encoding="bytes")
        self.path, self.allowed = path, {**_numpy_globals(), ("_codecs", "encode"): _latin1_encode,
                                         ("__builtin__", "bytes"): _empty_bytes, ("builtins", "bytes"): _empty_bytes}

    def find_class(self, module: str, name: str):
        if (module, name) not in self.allowed:
            raise UnsafePickleError(self.path, module, name)
        if (module, name) == ("numpy", "dtype"):
            return _plain_dtype
        return self.allowed[(module, name)]


def _empty_bytes(*args) -> bytes:
    """``bytes()``, as Python 3's protocols 0-2 write an empty ``bytes`` (any argument refused)."""
    if args:
        raise pickle.UnpicklingError(f"bytes{args!r:.60}")
    return b""


def _plain_dtype(*args):
    """``numpy.dtype(*args)`` for a dtype without Python objects (an object array would unpickle objects)."""
    dt = np.dtype(*args)
    if dt.hasobject:
        raise pickle.UnpicklingError(f"an array of dtype {dt} (Python objects)")
    return dt


def read_pickled_batch(path: str | os.PathLike) -> object:
    """The content of one CIFAR-format pickle at ``path``, read without running any code it names.

    Raises:
        UnsafePickleError: the pickle names a global no CIFAR batch holds (file and global named).
        InputError: the file is not a readable pickle (truncated, corrupt; named with the reason).
    """
    try:
        with open(path, "rb") as fh:
            return _BatchUnpickler(fh, path).load()
    except UnsafePickleError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, OverflowError, RecursionError) as exc:
        raise InputError(str(path), "a CIFAR batch file (a pickled dict)",
                         f"unreadable ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
