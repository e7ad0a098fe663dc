"""The layout of the ``--help`` pages: wrapped paragraphs, verbatim lists, one epilog shape.

Every command's epilog has the same three sections, built by :func:`epilog`: the files it
writes (``outputs``), one invocation to copy (``example``) and its exit status.
"""
from __future__ import annotations

import argparse
from typing import Sequence

__all__ = ["BAD_INPUT", "HelpFormatter", "epilog"]

#: The exit-status line every command shares (``depthcert.cli``: one line, never a traceback).
BAD_INPUT = (2, "bad input: one line on stderr naming the option or config key, the allowed values\n"
                "and the value given")


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of a description or epilog on its own; a paragraph with an
    indented line (a list, an example) is printed as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for block in text.strip("\n").split("\n\n"):
            if any(line.startswith("  ") for line in block.splitlines()):
                out.append("\n".join(indent + line for line in block.splitlines()))
            else:
                out.append(super()._fill_text(block, width, indent))
        return "\n\n".join(out)


def epilog(outputs: Sequence[tuple[str, str]], examples: Sequence[str], exits: Sequence[tuple[int, str]]) -> str:
    """The ``outputs`` / ``example`` / ``exit status`` sections of a command's help.

    Args:
        outputs: ``(file or stream, what it holds)`` pairs.
        examples: invocations, each starting with ``depthcert``.
        exits: ``(code, meaning)`` pairs.

    Example:
        >>> print(epilog([("stdout", "a table")], ["depthcert demo"], [(0, "done")]))
        outputs:
          stdout  a table
        <BLANKLINE>
        example:
          depthcert demo
        <BLANKLINE>
        exit status:
          0  done
    """
    width = max(len(name) for name, _ in outputs)
    pad = "\n" + " " * (width + 4)
    return "\n\n".join([
        "outputs:\n" + "\n".join(f"  {name:<{width}}  {what.replace(chr(10), pad)}" for name, what in outputs),
        ("examples:\n" if len(examples) > 1 else "example:\n") + "\n".join(f"  {e}" for e in examples),
        "exit status:\n" + "\n".join(f"  {code}  {what.replace(chr(10), chr(10) + 5 * ' ')}" for code, what in exits)])
