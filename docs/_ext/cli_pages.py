"""The CLI pages, generated from the program itself so that they cannot fall behind it.

* :func:`cli_page` -- every command's ``--help`` as the parsers print it (``depthcert.cli.build_parser``),
  wrapped at :data:`HELP_COLUMNS` so that no line is cut in a page;
* :func:`commands_page` -- every command with its options (flag, value, default, meaning: read
  from the parser's actions) and the config keys it reads (the schemas the loaders check a
  config against: ``depthcert._config_keys``), each with its allowed values.
"""
from __future__ import annotations

import argparse
import io
import os
from contextlib import redirect_stdout

#: The width the help texts are generated at: the width of a code block of the site at 1280 px.
HELP_COLUMNS = 88

#: Commands whose config is another command's (``demo`` runs ``run``'s default config).
CONFIG_OF = {"demo": "run", "study": "grow", "sweep": "run"}


def _parser(name: str | None) -> argparse.ArgumentParser:
    from depthcert.cli import build_parser

    parser = build_parser([name] if name else [])
    if name is None:
        return parser
    return parser._subparsers._group_actions[0].choices[name]


def help_of(name: str | None) -> str:
    """``depthcert [name] --help`` as printed at :data:`HELP_COLUMNS` columns."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_COLUMNS)
    try:
        buf = io.StringIO()
        with redirect_stdout(buf):
            _parser(name).print_help()
        return buf.getvalue().rstrip()
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def cli_page() -> str:
    """The CLI reference: the top-level help, then each command's, in the CLI's order."""
    from depthcert.cli import COMMANDS

    parts = ["# CLI reference\n",
             "Generated at build time from the parsers of `depthcert` (the text of `depthcert --help` and of "
             "`depthcert COMMAND --help`). Exit status 2 is bad input: one line on stderr naming the option "
             "or config key, the allowed values and the value given (`depthcert plot` also exits 2 when the "
             "stored results cannot support the plot, saying what is missing). Every command with its options "
             "and config keys in tables: {doc}`/_generated/commands`.\n",
             "## `depthcert`\n", ":::{container} cli-help", "```text", help_of(None), "```", ":::\n"]
    for name in COMMANDS:
        parts += [f"## `depthcert {name}`\n", ":::{container} cli-help", "```text", help_of(name), "```", ":::\n"]
    return "\n".join(parts)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _allowed(spec) -> str:
    describe = getattr(spec, "describe", None)
    if callable(describe):
        return describe()
    if isinstance(spec, (tuple, list, frozenset, set)):
        return "one of " + ", ".join(f"`{v}`" for v in spec)
    return type(spec).__name__ if isinstance(spec, type) else str(spec)


def options_rows(name: str) -> list[tuple[str, str, str, str]]:
    """``(flag, value, default, meaning)`` of every option of ``depthcert name`` (help excluded)."""
    rows = []
    for action in _parser(name)._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        flag = ", ".join(action.option_strings) or action.dest
        if action.nargs == 0:
            value = ""
        elif action.choices:
            value = " \\| ".join(f"`{c}`" for c in action.choices)
        else:
            value = f"`{action.metavar or action.dest.upper()}`"
        default = "required" if action.required else ("" if action.default in (None, False, argparse.SUPPRESS)
                                                       else f"`{action.default}`")
        rows.append((f"`{flag}`", value, default, _cell(action.help or "")))
    return rows


def config_rows(name: str) -> list[tuple[str, str]]:
    """``(key, allowed values)`` of every config key ``depthcert name`` reads (none: no config)."""
    from depthcert._config_keys import COMMAND_SCHEMAS, LOSS_KEYS, bounds_tables

    if name == "bounds":
        return _bounds_rows(LOSS_KEYS, bounds_tables)
    home = CONFIG_OF.get(name, name)
    if home not in COMMAND_SCHEMAS:
        return []
    import importlib

    module, attr = COMMAND_SCHEMAS[home]
    schema = getattr(importlib.import_module(module), attr)
    return [((f"{table}.{key}" if table else key), _cell(_allowed(spec)))
            for table, keys in schema.items() for key, spec in keys.items()]


def _bounds_rows(loss_keys, bounds_tables) -> list[tuple[str, str]]:
    """``depthcert bounds``' keys over every loss kind and block family, with their ranges where a table has them."""
    from bounds.localised_routes import LOCALISED_PARAMETERS
    from bounds.parameters import BLOCK_PARAMETERS, OPTIONAL, PARAMETERS
    from bounds.variant_routes import VARIANT_PARAMETERS

    ranges = {"": {**PARAMETERS, **OPTIONAL}, "block": {k: v for f in BLOCK_PARAMETERS.values() for k, v in f.items()},
              "variants": dict(VARIANT_PARAMETERS), "localised": dict(LOCALISED_PARAMETERS)}
    ranges["block"]["family"] = tuple(BLOCK_PARAMETERS)
    ranges["loss"] = {"kind": tuple(k for k in loss_keys if k)}
    tables: dict[str, set] = {}
    for kind in loss_keys:
        for family in BLOCK_PARAMETERS:
            for table, keys in bounds_tables(kind, family).items():
                tables.setdefault(table, set()).update(keys)
    return [((f"{t}.{k}" if t else k), _cell(_allowed(ranges.get(t, {})[k])) if k in ranges.get(t, {}) else "")
            for t in sorted(tables) for k in sorted(tables[t]) if not (t == "" and k in tables)]


def commands_page() -> str:
    """Every command, its options and its config keys, in the CLI's order."""
    from depthcert.cli import COMMANDS

    parts = ["# Every command, its options and its config keys\n",
             "Generated at build time from the parsers and the config schemas of `depthcert`, so it lists "
             "exactly what the program accepts. A config key is written `table.key` (the TOML table `[table]`, "
             "key `key`); missing keys take the defaults of the command's built-in config. The full help "
             "texts: {doc}`/cli`.\n"]
    for name in COMMANDS:
        sub = _parser(name)
        parts += [f"## `depthcert {name}`\n", _cell((sub.description or "").split("\n\n")[0]) + "\n",
                  "| option | value | default | meaning |", "|---|---|---|---|"]
        parts += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in options_rows(name)]
        keys = config_rows(name)
        if keys:
            home = CONFIG_OF.get(name)
            parts += ["", f"Config keys{f' (the `{home}` config)' if home else ''}:", "",
                      "| key | allowed |", "|---|---|"] + [f"| `{k}` | {v} |" for k, v in keys]
        parts.append("")
    return "\n".join(parts)
