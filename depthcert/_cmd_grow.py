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
    p.add_argument("--out", required=False, metavar="DIR",
                   help="output folder (default with --model: ./grow_out); with --config, running again with it resumes")
    from depthcert._cmd_user import add_user_arguments

    add_user_arguments(p, "grow")
    p.add_argument("--trainable", choices=["new", "all"], default="new",
                   help="with --model: train only the inserted blocks (new, the default) or every parameter (all) "
                        "after each insertion; in eval mode either way (batch-norm statistics frozen)")
    p.add_argument("--save-model", dest="save_model", metavar="PATH", default=None,
                   help="with --model: write the grown network to PATH (its state_dict and the insertions that "
                        "rebuild it from your factory; load with torch.load(PATH, weights_only=True) and "
                        "dc.load_grown(factory(), saved)); a Hugging Face decoder grown by real layers (llama, "
                        "mistral, qwen2, gpt2, gpt_neox): PATH is a new save_pretrained directory "
                        "(AutoModelForCausalLM.from_pretrained(PATH))")
    p.add_argument("--json", action="store_true", help="print the trajectory as one JSON object instead of the table")


DESCRIPTION = """\
How deep does this network need to be? Starting from the config's reference network,
this repeats: scan every insertion site (as `depthcert saturation` does), insert a
block that does not change the network's function at the best site ([growth] init:
zero, jumpboard or natural), train, scan again. It stops when the network is saturated
at the [growth] level, when the best certified gain falls below 2 eps_M, or at
max_depth. Every step is stored as it finishes, so an interrupted run resumes."""

EPILOG = epilog(
    [("stdout", "with --config: one row per step (depth, site, losses, AG_max) and why it stopped;\n"
                "with --model: one line (why it stopped, how many blocks, the folder); --json: the result as JSON"),
     ("DIR/trajectory.json", "with --config: every step, rewritten after each one"),
     ("DIR/checkpoint.pt", "with --config: the grown network (what a re-run resumes from)"),
     ("DIR/growth.png", "with --config: AG_max and the losses against depth, the stop marked"),
     ("DIR/grow.json", "with --model: why it stopped and one record per step"),
     ("DIR/trajectory.csv", "with --model: one row per step (verdict, site, gains, the block inserted)"),
     ("DIR/sites.csv", "with --model: one row per site of your network (the last scan)"),
     ("DIR/saturation.png", "with --model: the last scan's gains per site"),
     ("PATH", "with --model --save-model PATH: the grown network (state_dict + insertions; a Hugging Face\n"
              "decoder: a new save_pretrained directory)")],
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
    if getattr(args, "save_model", None):
        from depthcert.errors import InputError

        raise InputError("--save-model", "used with --model (with --config the grown network is DIR/checkpoint.pt)",
                         args.save_model)
    from depthcert._cmd_study import bad_input
    from depthcert._io import dumps
    from depthcert.config import read_toml

    config = read_toml(args.config)     # a bad file is refused before the heavy imports
    from plumbing.sizes import check_config_sizes

    check_config_sizes(config)          # sizes that cannot fit, before torch is imported (again once merged)
    from numerics.studies.growth import grow, plot_growth

    with bad_input("grow"):
        traj = grow(config, args.out, progress=not args.json)
    plot_growth(traj, f"{args.out}/growth.png")
    print(dumps(traj) if args.json else _table(traj))
    return 0
