"""Reads the ``outputs:`` section of a ``--help`` page (the epilog of :func:`depthcert._help.epilog`) and checks
a run against it: every file it promises for that invocation is there, and nothing it does not promise was written.

A line's name column holds one or more files (``DIR/a.json, DIR/b.md``), a folder (``DIR/plots/``: anything
under it is covered, and it must not be empty) or an option whose value is the file (``--plot PNG``). Placeholders
(``DIR``, ``FOLDER``, ``PATH``, ``KIND``, ``NAME``) are replaced by what the test ran with; ``KEY`` matches any
one folder name. A description starting ``with --flag ...:`` applies only when every flag is on the command line
(``with --suite quick or full:`` also when the option's value is one of those words); one starting
``word, word:`` (``appendix-m:``, ``pretrained:``) only when one of the words is on the command line. A line that
does not apply covers nothing: a file it names, written anyway, is reported as unpromised.
"""
from __future__ import annotations

import contextlib
import fnmatch
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from depthcert.cli import main

PLACEHOLDERS = ("DIR", "FOLDER", "PATH", "KIND", "NAME")


@dataclass(frozen=True)
class Promise:
    """One line of ``outputs:``: its names, what it says, and its condition (``""``: always)."""

    names: tuple
    what: str
    condition: str = ""


@dataclass
class Ran:
    """One invocation: its argv, exit code, streams, the folder it ran in and the files it wrote there."""

    argv: list
    code: int
    out: str
    err: str
    root: Path
    written: set = field(default_factory=set)


def help_text(command: str) -> str:
    """The page ``depthcert COMMAND --help`` prints."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        main([command, "--help"])
    return buf.getvalue()


def main_page() -> str:
    """The page ``depthcert --help`` prints."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.suppress(SystemExit):
        main(["--help"])
    return buf.getvalue()


def promises(text: str) -> list:
    """The lines of the ``outputs:`` section of ``text`` (continuation lines joined to their entry)."""
    text = "\n" + text
    start = text.index("\noutputs:\n") + len("\noutputs:\n")
    section = text[start:].split("\n\n")[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"^  (\S(?:.*?\S)?)\s{2,}(\S.*)$", line)
        if m and not line.startswith("   "):
            rows.append([m.group(1), m.group(2)])
        else:
            assert rows and line.startswith("   "), f"not an outputs line: {line!r}"
            rows[-1][1] += " " + line.strip()
    out = []
    for names, what in rows:
        cond = re.match(r"^(with [^:]*|[\w-]+(?:, [\w-]+)*):\s", what)
        out.append(Promise(tuple(n.strip() for n in names.split(", ")), what, cond.group(1) if cond else ""))
    return out


def applies(condition: str, argv: list) -> bool:
    """Whether a line's condition holds for ``argv`` (see the module docstring)."""
    if not condition:
        return True
    if not condition.startswith("with "):
        return any(w in argv for w in condition.split(", "))
    for part in re.split(r"\s(?=--)", condition[len("with "):]):
        flag, *rest = part.split()
        values = [w for w in rest if w.islower() and w not in ("or", "and")]   # PATH, N: metavars
        if flag not in argv:
            return False
        given = argv[argv.index(flag) + 1:][:1]
        if values and not (given and given[0] in values):
            return False
    return True


def _word(names: str) -> str:
    """A placeholder as a whole word of capitals (``KIND`` in ``KIND_exponents.md``, not in ``KINDS``)."""
    return rf"(?<![A-Za-z])(?:{names})(?![A-Za-z])"


def _pattern(name: str, argv: list, subst: dict) -> str:
    if name.startswith("--"):                                     # "--plot PNG": the option's value
        flag = name.split()[0]
        return argv[argv.index(flag) + 1] if flag in argv else ""
    for key in PLACEHOLDERS:
        name = re.sub(_word(key), str(subst.get(key, key)), name)
    return os.path.normpath(re.sub(_word("KEY"), "*", name)) + ("/" if name.endswith("/") else "")


def problems(text: str, run: Ran, subst: dict) -> list:
    """What ``run`` did that the page ``text`` does not say (empty: the page is true of this run)."""
    files, folders, out = [], [], []
    for p in promises(text):
        if "stdout" in p.names or not applies(p.condition, run.argv):
            continue
        for name in p.names:
            pat = _pattern(name, run.argv, subst)
            if pat and not re.search(_word("|".join(PLACEHOLDERS)), pat):   # DIR unknown: no --out
                (folders if pat.endswith("/") else files).append((pat, name))
    for pat, name in files:
        if not any(fnmatch.fnmatch(w, pat) for w in run.written):
            out.append(f"promised, not written: {name} ({pat})")
    for pat, name in folders:
        if not any(w.startswith(pat) for w in run.written):
            out.append(f"promised, not written: {name} ({pat}: empty or missing)")
    for w in sorted(run.written):
        if not any(fnmatch.fnmatch(w, p) for p, _ in files) and not any(w.startswith(p) for p, _ in folders):
            out.append(f"written, not promised: {w}")
    return out


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def invoke(argv: list, root: Path) -> Ran:
    """Run ``depthcert ARGV`` in ``root`` (the working folder); the files it created or changed there."""
    before, here = _snapshot(root), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    finally:
        os.chdir(here)
    after = _snapshot(root)
    return Ran([str(a) for a in argv], code, out.getvalue(), err.getvalue(), root,
               {p for p, t in after.items() if before.get(p) != t})
