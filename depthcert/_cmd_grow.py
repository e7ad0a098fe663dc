"""``depthcert grow --config FILE --out DIR``: grow a network until it is deep enough (THEORY §8).

Scan -> insert a function-preserving block at the best site (``[growth] init``: ``zero``,
``jumpboard`` or ``natural``) -> train -> rescan, until saturated at ``[growth] level``, the
best certified gain falls below ``2 eps_M``, or ``max_depth``. ``DIR/trajectory.json`` is
written atomically after every step and a re-run resumes; ``DIR/growth.png`` shows AG_max
and the losses against depth with the stop marked.
"""
from __future__ import annotations

import argparse

from depthcert._help import BAD_INPUT, epilog


def add_parser(sub) -> None:
    p = sub.add_parser("grow", help="grow a network one block at a time until it is deep enough (resumable)",
                       description=DESCRIPTION, epilog=EPILOG)
    p.add_argument("--config", required=False, metavar="FILE",
                   help="TOML: the tables of `depthcert saturation` plus [growth]; "
                   "see depthcert/configs/digits_cnn.toml (or --model and --data for your own network)")
    p.add_argument("--out", required=False, metavar="DIR", help="output folder; running again with it resumes")
    from depthcert._cmd_user import add_user_arguments

    add_user_arguments(p, "grow")
    p.add_argument("--json", action="store_true", help="print the trajectory as one JSON object instead of the table")


DESCRIPTION = """\
How deep does this network need to be? Starting from the config's reference network,
this repeats: scan every insertion site (as `depthcert saturation` does), insert a
block that does not change the network's function at the best site ([growth] init:
zero, jumpboard or natural), train, scan again. It stops when the network is saturated
at the [growth] level, when the best certified gain falls below 2 eps_M, or at
max_depth. Every step is stored as it finishes, so an interrupted run resumes."""

EPILOG = epilog(
    [("stdout", "one row per step (depth, site, losses, AG_max) and why it stopped"),
     ("DIR/trajectory.json", "every step, rewritten after each one"),
     ("DIR/checkpoint.pt", "the grown network (what a re-run resumes from)"),
     ("DIR/growth.png", "AG_max and the losses against depth, the stop marked"),
     ("DIR/sites.csv", "with --model: one row per site of your network")],
    ["depthcert grow --config depthcert/configs/digits_cnn.toml --out runs/grow"],
    [(0, "the growth ran to its stop"), BAD_INPUT])


def _table(traj: dict) -> str:
    lines = [f"{'depth':>5} {'site':>22} {'L_train':>10} {'L_test':>10} {'R':>10} {'AG_max':>9} {'saturated':>9}"]
    for s in traj["steps"]:
        lines.append(f"{s['depth']:>5} {str(s['site'] or '-'):>22} {s['L_train']:>10.4g} {s['L_test']:>10.4g} "
                     f"{s['R']:>10.4g} {s['AG_max']:>9.3g} {str(s['saturated']):>9}")
    lines.append(f"stopped because: {traj['stopped_because']}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.model or not args.config:   # a user's own model and data (depthcert._cmd_user)
        from depthcert._cmd_user import run_user

        return run_user(args, "grow")
    from depthcert._cmd_study import bad_input
    from depthcert._io import dumps
    from depthcert.config import read_toml
    from numerics.studies.growth import grow, plot_growth

    with bad_input("grow"):
        traj = grow(read_toml(args.config), args.out, progress=not args.json)
    plot_growth(traj, f"{args.out}/growth.png")
    print(dumps(traj) if args.json else _table(traj))
    return 0
