"""Where a config key belongs: the warnings of ``depthcert bounds`` about keys it ignores.

A ``depthcert bounds`` setup file holds top-level numbers and the tables ``[loss]``,
``[block]`` and ``[variants]`` (:mod:`depthcert.config`). Every key it does not read gets
one warning line that names the table the key was found in and, when the key is known
elsewhere, where it belongs: another table of the setup file (``block_at_top`` belongs to
``[loss]``), the other block family or loss kind, or the table of another command's
config (``[reference]`` of ``depthcert run``, ``validity``, ``saturation``, ``grow``; a
sweep's ``[base]`` is a ``run`` config and ``study`` reads a ``grow`` config).

The other commands' tables are read from their schemas (the data their loaders check
against), imported only when there is something to warn about, so that a clean
``depthcert bounds`` never imports torch.
"""
from __future__ import annotations

import importlib
from typing import Mapping

from bounds.parameters import BLOCK_PARAMETERS, OPTIONAL, PARAMETERS

__all__ = ["COMMAND_SCHEMAS", "LOSS_KEYS", "bounds_tables", "command_tables", "unknown_key_warnings"]

#: The keys of ``[loss]`` that :mod:`depthcert.config` reads, per ``kind`` (``None``: no kind,
#: ``B`` and ``L_loss`` given directly; with a kind they are computed and ``B``/``L_loss`` ignored).
_AT_TOP = ("block_at_top", "extra_head_norm")
LOSS_KEYS: Mapping[str | None, tuple[str, ...]] = {
    None: ("B", "L_loss"),
    "cross_entropy": ("kind", "n_classes", "head_row_norms", "head_bias", "rho", *_AT_TOP),
    "squared": ("kind", "F", "Y", "head_norm", *_AT_TOP),
}

#: Commands that read a config file -> ``(module, name)`` of the schema they check it against.
COMMAND_SCHEMAS: Mapping[str, tuple[str, str]] = {
    "run": ("numerics.studies.run", "CONFIG_SCHEMA"),
    "validity": ("numerics.studies.validity", "VALIDITY_SCHEMA"),
    "saturation": ("numerics.studies.saturation", "CONFIG_SCHEMA"),
    "grow": ("numerics.studies.growth", "GROW_SCHEMA"),
}


def bounds_tables(kind: str | None, family: str) -> dict[str, set[str]]:
    """The keys ``depthcert bounds`` reads, per table (``""``: the top level), for this loss kind and block family."""
    from bounds.variant_routes import VARIANT_PARAMETERS

    top = (set(PARAMETERS) - {"B", "L_loss"}) | set(OPTIONAL) | {"level", "loss", "block", "variants"}
    from bounds.localised_routes import LOCALISED_PARAMETERS

    return {"": top | {"localised"}, "loss": set(LOSS_KEYS[kind]), "block": set(BLOCK_PARAMETERS[family]) | {"family"},
            "variants": set(VARIANT_PARAMETERS) | {"use"},
            "localised": set(LOCALISED_PARAMETERS) | {"use", "exact_applies"}}


def command_tables() -> dict[str, dict[str, set[str]]]:
    """``{command: {table: keys}}`` of the other commands (``""``: their top level).

    A command whose module cannot be imported (a partial install) is left out.
    """
    out = {}
    for command, (module, name) in COMMAND_SCHEMAS.items():
        try:
            schema = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):    # a partial install: warn without the cross-references
            continue
        out[command] = {table: set(keys) for table, keys in schema.items()}
    return out


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _in_bounds(key: str, found_in: str, kind: str | None, family: str) -> list[str]:
    """Where else a ``depthcert bounds`` setup reads ``key`` (any loss kind, any block family)."""
    from bounds.variant_routes import VARIANT_PARAMETERS

    homes = []
    if found_in != "" and key in (set(PARAMETERS) - {"B", "L_loss"}) | set(OPTIONAL) | {"level"}:
        homes.append("the top level")
    for t, keys in (("loss", {k for ks in LOSS_KEYS.values() for k in ks}),
                    ("block", {k for ps in BLOCK_PARAMETERS.values() for k in ps} | {"family"}),
                    ("variants", set(VARIANT_PARAMETERS) | {"use"})):
        if t != found_in and key in keys:
            homes.append(f"the [{t}] table")
    if found_in == "block":
        homes += [f'[block] with family = "{f}"' for f, p in BLOCK_PARAMETERS.items() if f != family and key in p]
    if found_in == "loss":
        homes += ["[loss] without kind" if k is None else f'[loss] with kind = "{k}"' for k, keys in LOSS_KEYS.items()
                  if k != kind and key in keys and key != "kind"]
    return homes


def _in_commands(key: str | None, table: str, others: Mapping) -> str:
    """``"at the top level (depthcert run), in [insertion] (depthcert run and validity)"``: where the other
    commands read ``key`` (``key=None``: the table ``[table]`` itself)."""
    where: dict[str, list[str]] = {}
    for command, tables in others.items():
        for t, keys in tables.items():
            if (t == table != "") if key is None else (key in keys):
                where.setdefault(t, []).append(command)
    if key is None:
        return f"depthcert {_join(where[table])}" if where else ""
    return ", ".join(f"{'at the top level' if t == '' else f'in [{t}]'} (depthcert {_join(cs)})"
                     for t, cs in where.items())


def _line(dotted: str, what: str, homes: list[str], commands: str) -> str:
    tail = f"; it belongs to {' or '.join(homes)}" if homes else ""
    if commands:
        tail += f"; other commands read it: {commands}"
    return f"depthcert: warning: ignoring {dotted}: {what}{tail}"


def _what(table: str, key: str, kind: str | None, family: str) -> str:
    """Why ``key`` of ``[table]`` is ignored."""
    if table == "":
        return f"depthcert bounds reads no top-level key {key}"
    if table == "loss":
        computed = " (B and L_loss are computed from kind)" if kind and key in ("B", "L_loss") else ""
        which = f'with kind = "{kind}"' if kind else "without kind"
        return f"the [loss] table {which} has no key {key}{computed}"
    if table == "block" and any(key in p for p in BLOCK_PARAMETERS.values()):
        return f'the [block] table with family = "{family}" has no key {key}'
    return f"the [{table}] table has no key {key}"


def unknown_key_warnings(cfg: Mapping) -> list[str]:
    """One warning line per key of a ``depthcert bounds`` setup that the loader does not read.

    ``cfg`` has passed the loader's checks (``[loss]`` and ``[block]`` are tables, the
    family and kind are valid).

    Example:
        >>> cfg = {"loss": {"B": 1.0, "L_loss": 1.0}, "block": {"family": "readout", "block_at_top": True}}
        >>> print(*unknown_key_warnings(cfg)[0].split("; "), sep="\\n")
        depthcert: warning: ignoring block.block_at_top: the [block] table has no key block_at_top
        it belongs to the [loss] table
    """
    loss, block, variants = cfg["loss"], cfg["block"], cfg.get("variants")
    kind, family = loss.get("kind"), block["family"]
    known = bounds_tables(kind, family)
    found = [("", k, cfg[k]) for k in cfg if k not in known[""]]
    found += [("loss", k, loss[k]) for k in loss if k not in known["loss"]]
    found += [("block", k, block[k]) for k in block if k not in known["block"]]
    if isinstance(variants, dict):
        found += [("variants", k, variants[k]) for k in variants if k not in known["variants"]]
    if not found:
        return []
    others = command_tables()
    lines = []
    for table, key, value in found:
        if table == "" and isinstance(value, dict):   # a whole table this command does not read
            lines.append(_line(f"[{key}]", "depthcert bounds reads no such table (it reads [loss], [block], "
                               "[variants])", [], _in_commands(None, key, others)))
            continue
        what = _what(table, key, kind, family)
        lines.append(_line(key if table == "" else f"{table}.{key}", what, _in_bounds(key, table, kind, family),
                           _in_commands(key, table, others)))
    return lines
