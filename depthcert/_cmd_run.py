"""``depthcert run --config exp.toml --out DIR``: one end-to-end experiment (THEORY §1-§6).

Trains the reference model, inserts a block, trains it with the (C2) fallback, measures
every quantity, evaluates Theorems 2 and 3 (and "some route", and the population-level
bound) through :mod:`bounds.routes`, prints a table and writes ``DIR/result.json``
(atomically, with the config, the seeds of every role and versions),
``DIR/bounds_config.toml`` (the same numbers for ``depthcert bounds``) and
``DIR/bound_vs_observed.png``. The output folder and the memory the sizes need are
checked before any work (exit 2 with one line).
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="one experiment: train, insert a block, measure and certify",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=True, metavar="FILE",
                   help="experiment file (TOML): [task], [model], [reference], [insertion], [block_training], "
                   "[sizes] and an optional [variants]; see depthcert/configs/demo.toml")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object instead of the table")


DESCRIPTION = """\
Does a block inserted into this network provably help? One experiment end to end:
train the reference network on its sample, insert a zero-initialised residual block,
train only that block (inside a norm cap fixed before the data is drawn), measure
every quantity the theorems need on independent samples, and evaluate the
certificates (population and direct routes, Theorems 2 and 3, and the variants).

The output folder and the memory the sizes need are checked before any work."""

EPILOG = epilog(
    [("stdout", "the table of measured quantities and certificates (JSON with --json)"),
     ("DIR/result.json", "every number, the config, the seeds of every random role, versions"),
     ("DIR/bounds_config.toml", "the same numbers as a setup file for `depthcert bounds`"),
     ("DIR/bound_vs_observed.png", "each route's bound against the observed test loss"),
     ("DIR/bound_terms.png", "each bound decomposed into its terms (when variants ran)"),
     ("DIR/localised_terms.png", "each localised route's bound decomposed into its costs (THEORY §6b)")],
    ["depthcert run --config depthcert/configs/demo.toml --out runs/demo"],
    [(0, "the experiment ran, whether or not a route certifies (the table says)"),
     (1, "the experiment could not be carried out (no first-order signal, divergence)"), BAD_INPUT])


def execute(config: dict, out: str, as_json: bool, after=None, show=None, progress: str | None = None) -> int:
    """Run, write, print; shared by ``run`` and ``demo``.

    Exit 0 when the experiment ran (whether or not a route certifies; the table says),
    1 with one line when it could not be carried out (no first-order signal, divergence).
    ``after`` (optional) returns extra information, stored under ``setup_rates`` in the
    printed JSON or printed by ``show``. ``progress`` (a program name, optional): each stage
    on stderr as it starts and ends (:class:`depthcert._progress.StageBar`).
    """
    import sys

    from depthcert._io import check_writable_dir, dumps, versions
    from depthcert._progress import StageBar
    from numerics.studies.run import STAGES, check_memory, format_table, run_config, run_experiment, write_outputs
    from numerics.training import DivergenceError

    cfg = run_config(config)    # bad input first, one line, before any work: validated once, typed
    check_memory(cfg)
    check_writable_dir(out)
    bar = StageBar(len(STAGES) + 1 + (after is not None), progress or "depthcert", enabled=progress is not None)
    try:
        result = run_experiment(cfg, progress=bar.stage)
        result["versions"] = versions()
        bar.stage(f"writing {out}/: result.json, bounds_config.toml, the figures")
        paths = write_outputs(result, out)
        if after is not None:
            bar.stage("how often this setup certifies")
        extra = after() if after is not None else None
    except (ArithmeticError, DivergenceError) as exc:
        bar.close()
        print(f"depthcert: experiment stopped: {exc}", file=sys.stderr)
        return 1
    bar.close()
    if as_json:
        print(dumps({**result, "setup_rates": extra} if extra is not None else result))
        return 0
    print(format_table(result))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    if extra is not None:
        print(show(extra))
    return 0


def run(args: argparse.Namespace) -> int:
    from depthcert.config import read_toml

    return execute(read_toml(args.config), args.out, args.json)
