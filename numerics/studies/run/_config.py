"""The typed run configuration: frozen dataclasses built once from the validated config.

:func:`numerics.studies.run.validate_config` returns a plain dict (a contract of the sweeps,
the validity study and the tests); :meth:`RunConfig.from_validated` turns that dict into
one frozen object the stages read by attribute (``cfg.sizes.M``, ``cfg.insertion.family``,
``cfg.level``), built once per run and handed down (no stage validates again).

The classes are derived from :data:`~numerics.studies.run._schema.CONFIG_SCHEMA`: one
frozen dataclass per section (:class:`ConfigSection`), one field per key of its table, so a
key added to the schema appears here without an edit. A key the user left out (an optional
one: ``insertion.seed``, ``variants.use``, ``[localised]``'s levels, ...) is ``None``.
Every object is also a read-only :class:`~collections.abc.Mapping` of the keys present
(``cfg["sizes"]["M"]`` still works, for the shared builders of :mod:`numerics.builders`), and
:meth:`RunConfig.to_dict` gives back the validated dict, key order included (``result.json``'s
``config``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Iterator

from numerics.studies.run._schema import CONFIG_SCHEMA

__all__ = ["ConfigSection", "RunConfig", "SECTION_CLASSES", "as_run_config"]


class ConfigSection(Mapping):
    """Base of the generated section classes: a frozen record, readable as a mapping of its present keys.

    ``keys_`` holds the keys the validated dict had, in its order (``None`` fields are absent).
    """

    keys_: tuple

    def _names(self) -> list[str]:
        names = [k for k in self.keys_ if getattr(self, k, None) is not None]
        extra = [f.name for f in dataclasses.fields(self) if f.name not in names and f.name not in _META
                 and getattr(self, f.name) is not None]
        return names + extra

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str) or key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def to_dict(self) -> dict:
        """The validated dict this section came from (nested sections as dicts)."""
        return {k: (v.to_dict() if isinstance(v, ConfigSection) else v) for k, v in ((k, getattr(self, k))
                                                                                   for k in self._names())}


_META = ("keys_", "notes_")


def _class_name(section: str) -> str:
    return "".join(part.capitalize() for part in section.split("_")) + "Config"


def _section_class(section: str, keys) -> type:
    """A frozen dataclass with one ``None``-defaulted field per key of ``section``'s schema table."""
    clash = [k for k in keys if hasattr(ConfigSection, k) or not k.isidentifier()]
    if clash:
        raise ValueError(f"{section}.{clash[0]} cannot be a field of a typed config section (a Mapping method).")
    fields = [(k, Any, dataclasses.field(default=None)) for k in keys]
    fields.append(("keys_", tuple, dataclasses.field(default=(), repr=False, compare=False)))
    doc = f"``[{section}]`` of a validated run config (fields: {', '.join(keys)}; ``None``: not given)."
    return dataclasses.make_dataclass(_class_name(section), fields, bases=(ConfigSection,), frozen=True,
                                      namespace={"__doc__": doc, "__module__": __name__})


#: Section name -> its generated class (derived from :data:`CONFIG_SCHEMA`).
SECTION_CLASSES: Mapping[str, type] = {name: _section_class(name, tuple(table)) for name, table in CONFIG_SCHEMA.items()
                                       if name}


def _section(name: str, values: Mapping) -> ConfigSection:
    cls = SECTION_CLASSES[name]
    unknown = [k for k in values if k not in CONFIG_SCHEMA[name]]
    if unknown:
        raise ValueError(f"{name}.{unknown[0]} is not a key of the run schema: from_validated needs a validated config.")
    return cls(**dict(values), keys_=tuple(values))


class _RunConfigBase(ConfigSection):
    """Methods of :class:`RunConfig` (its fields are generated from the schema)."""

    @classmethod
    def from_validated(cls, cfg: Mapping, notes: tuple[str, ...] = ()) -> "RunConfig":
        """The typed view of a dict returned by :func:`~numerics.studies.run.validate_config` (trusted: no check).

        Args:
            cfg: the validated dict (or a :class:`RunConfig`, returned as it is).
            notes: what the config held for other commands (noted in the result).

        Raises:
            ValueError: a key outside the run schema (``cfg`` was not validated).
        """
        if isinstance(cfg, RunConfig):
            return cfg
        top = CONFIG_SCHEMA[""]
        unknown = [k for k in cfg if k not in top and k not in SECTION_CLASSES]
        if unknown:
            raise ValueError(f"{unknown[0]} is not a key of the run schema: from_validated needs a validated config.")
        values = {k: cfg[k] for k in top if k in cfg}
        sections = {name: _section(name, cfg.get(name) or {}) for name in SECTION_CLASSES}
        return cls(**values, **sections, keys_=tuple(cfg), notes_=tuple(notes))

    def _names(self) -> list[str]:
        names = [k for k in self.keys_ if k in self.__dataclass_fields__ and getattr(self, k) is not None]
        return names + [k for k in CONFIG_SCHEMA[""] if k not in names and getattr(self, k) is not None]

    def with_seeds(self, seed: int, data_seed: int) -> "RunConfig":
        """The same config for another ``seed``/``data_seed`` (the validity study's held-out setups)."""
        return dataclasses.replace(self, seed=seed, data_seed=data_seed)


def _run_config_class() -> type:
    fields = [(k, Any, dataclasses.field(default=None)) for k in CONFIG_SCHEMA[""]]
    fields += [(name, cls, dataclasses.field(default_factory=cls)) for name, cls in SECTION_CLASSES.items()]
    fields += [("keys_", tuple, dataclasses.field(default=(), repr=False, compare=False)),
               ("notes_", tuple, dataclasses.field(default=(), repr=False, compare=False))]
    doc = ("A validated run config, typed (docstring of ``numerics.studies.run._config``): top-level "
           f"{', '.join(CONFIG_SCHEMA[''])}; sections {', '.join(SECTION_CLASSES)}; ``notes_``: what it held "
           "for other commands.")
    return dataclasses.make_dataclass("RunConfig", fields, bases=(_RunConfigBase,), frozen=True,
                                      namespace={"__doc__": doc, "__module__": __name__})


RunConfig = _run_config_class()


def as_run_config(cfg: Mapping) -> "RunConfig":
    """``cfg`` as a :class:`RunConfig` (a validated dict is converted, a :class:`RunConfig` returned as it is)."""
    return RunConfig.from_validated(cfg)
