"""A study's result as a typed, frozen record: headline fields beside the stored JSON content.

Every study keeps its dict-returning entry point (``run_experiment``, ``run_validity``, ...; a
contract of the CLI and the tests) and exposes ``run(config) -> <Study>Result`` beside it, with
a writer and a loader. A result subclass names its typed fields (read from the content once, by
:meth:`StudyResult.from_dict`); ``data`` is the whole content, read-only at its top level, and
:meth:`StudyResult.to_dict` gives it back as a fresh dict (what ``result.json`` holds). A result
is also a read-only mapping of that content (``result["sites"]``), so code that reads a study's
dict reads its typed result unchanged.
"""
from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Mapping as _MappingABC
from typing import Any, ClassVar, Mapping

__all__ = ["StudyResult"]


@dataclasses.dataclass(frozen=True)
class StudyResult(_MappingABC):
    """Base of the studies' results (module docstring).

    Attributes:
        data: the result's content (a read-only mapping).
    """

    data: Mapping[str, Any] = dataclasses.field(repr=False, hash=False)
    #: typed field -> the key of the content it is read from (subclasses: where they differ).
    SOURCE: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_dict(cls, content: Mapping[str, Any]) -> "StudyResult":
        """The typed record of ``content``.

        Raises:
            KeyError: a typed field's key is missing from ``content`` (not this study's result).
        """
        names = [f.name for f in dataclasses.fields(cls) if f.name != "data"]
        values = {n: content[cls.SOURCE.get(n, n)] for n in names}
        return cls(data=types.MappingProxyType(copy.deepcopy(dict(content))), **values)

    def to_dict(self) -> dict:
        """The content as a fresh (deep-copied) dict."""
        return copy.deepcopy(dict(self.data))

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)
