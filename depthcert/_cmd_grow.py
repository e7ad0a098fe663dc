"""``depthcert grow --config FILE --out DIR``: grow a network until it is deep enough (THEORY §8).

Scan -> insert a function-preserving block at the best site (``[growth] init``: ``zero``,
``jumpboard`` or ``natural``) -> train -> rescan, until saturated at ``[growth] level``, the
best certified gain falls below ``2 eps_M``, or ``max_depth``. ``DIR/trajectory.json`` is
written atomically after every step and a re-run resumes; ``DIR/growth.png`` shows AG_max
and the losses against depth with the stop marked.
"""
from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("grow", help="grow a network to saturation (resumable)",
                       description="Growth to first-order saturation, step by step.")
    p.add_argument("--config", required=False, help="TOML: the saturation sections plus [growth]")
    p.add_argument("--out", required=False, help="output folder (trajectory.json, checkpoint.pt, growth.png)")
    from depthcert._cmd_user import add_user_arguments

    add_user_arguments(p, "grow")
    p.add_argument("--json", action="store_true", help="print the trajectory as one JSON object")


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
