"""Command-line helpers of ``benchmarks/bench_trial_minilm.py``: the roles of its samples and the command that reproduces
a run."""
from __future__ import annotations

__all__ = ["_command", "_roles_arg"]

#: the default roles of the three samples, and the roles a select or held-out sample may be drawn from (the reference
#: sample trained ``f_old``'s head; ``S`` is the fit sample's).
ROLES = {"fit": "S", "select": "probe", "heldout": "T"}
FREE_ROLES = ("probe", "signal", "T")


def _roles_arg(ap, select: str, heldout: str) -> dict:
    """``ROLES`` with the select and held-out roles of the command line (a list for a union); one error line for a role
    outside :data:`FREE_ROLES`, or one shared by two parts (the parts must share no document)."""
    out = {"fit": ROLES["fit"]}
    for part, text in (("select", select), ("heldout", heldout)):
        names = [r.strip() for r in text.split(",") if r.strip()]
        bad = [r for r in names if r not in FREE_ROLES]
        if bad or not names:
            ap.error(f"--{part}-roles == {text!r}, must be a comma-separated list of {', '.join(FREE_ROLES)}")
        out[part] = names[0] if len(names) == 1 else names
    used = [r for part in out.values() for r in ([part] if isinstance(part, str) else part)]
    if len(used) != len(set(used)):
        ap.error(f"--select-roles == {select!r}, --heldout-roles == {heldout!r}: must share no role with each other or with "
                 f"fit's {ROLES['fit']!r} (the samples must share no document)")
    return out


def _command(a, n: int, sizes: dict, roles: dict, default_sizes: dict) -> str:
    """The command line that reproduces a run (defaults left out)."""
    return "OMP_NUM_THREADS=1 python benchmarks/bench_trial_minilm.py" + ("" if n == 10 else f" --seeds {n}") + (
        "" if a.out == "docs/trial-minilm" else f" --out {a.out}") + ("" if a.first_seed == 0 else f" --first-seed {a.first_seed}") + (
        "" if sizes["fit"] == default_sizes["fit"] else f" --n-fit {a.n_fit}") + (
        "" if {**sizes, "fit": 0} == {**default_sizes, "fit": 0} else f" --n-select {a.n_select} --n-heldout {a.n_heldout}") + "".join(
        f" --{part}-roles {roles[part] if isinstance(roles[part], str) else ','.join(roles[part])}" for part in ("select", "heldout")
        if roles[part] != ROLES[part]) + (" --tune-survives" if a.tune_survives else "") + (
        "" if getattr(a, "prefer_earlier", None) is None else f" --prefer-earlier {a.prefer_earlier!r}") + (
        f" --per-doc {a.per_doc}" if a.per_doc else "") + ("" if a.corpus == "pydoc" else f" --corpus {a.corpus}")
