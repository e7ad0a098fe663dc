"""``depthcert saturation|grow|certify --model FILE.py:factory [--weights CKPT.pt] --data FILE.py:function``.

A user's own network and data through the public API (:mod:`depthcert.api`): ``factory()``
returns the ``nn.Module``; ``--weights`` is a state dict loaded with
``torch.load(..., weights_only=True)`` (a crafted file cannot run code); ``function()``
returns the data roles as a dict -- ``saturation``: ``probe`` (and optionally ``curvature``),
``grow``: ``train`` and ``probe``, ``certify``: ``signal``, ``S`` and ``T`` -- each any kind of
data the API accepts. Prints one row per site (``saturation``) or per route (``certify``) and the
answer (``--json``: one JSON object); with ``--out DIR`` writes ``DIR/<command>.json``, a figure and
``DIR/sites.csv`` (``certify``: ``DIR/routes.csv``), without it no file (``grow``: ``./grow_out/``).
The model is used as the factory returns it: batch norm in train mode is refused, as by the API
(``model.eval()`` in the factory makes it the affine map of its running statistics). Bad input:
exit 2 with one line. An exception raised by the user's own code -- the factory, the data function,
the model's ``forward`` -- is reported as theirs: ``your factory raised KeyError at FILE.py:LINE:
message`` (:class:`UserCodeError`), without depthcert's stack; any other failure of the API on the
user's model and data is one line naming ``--model`` / ``--data`` and the error.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from depthcert.errors import InputError
from plumbing.validation import first_line
from plumbing.io import atomic_write, atomic_write_text

__all__ = ["ROLES", "UserCodeError", "add_user_arguments", "call_user", "load_object", "run_user"]

ROLES = {"saturation": ("probe",), "grow": ("train", "probe"), "certify": ("signal", "S", "T")}


def add_user_arguments(p: argparse.ArgumentParser, command: str) -> None:
    """The options of a user's model (next to ``--config`` for the built-in workloads)."""
    alternative = " (instead of --config)" if command in ("saturation", "grow") else ""
    p.add_argument("--model", metavar="FILE.py:factory",
                   help=f"a function in FILE.py returning your nn.Module{alternative}, used as returned: batch "
                        "norm in train mode is refused (return model.eval() to use its running statistics); "
                        "example: examples/own_cli.py:model")
    p.add_argument("--weights", metavar="CKPT.pt",
                   help="a state dict (torch.save(model.state_dict())) for the model, loaded with weights_only=True")
    p.add_argument("--data", metavar="FILE.py:function",
                   help=f"a function in FILE.py returning a dict with the data roles {list(ROLES[command])} "
                        "(tensors, arrays, a Dataset or a DataLoader each); example: examples/own_cli.py:data")
    p.add_argument("--loss", default="cross_entropy", choices=["cross_entropy", "squared"],
                   help="the loss the model is trained with (default: cross_entropy)")
    p.add_argument("--sites", default="blocks.*",
                   help="where a block could be inserted: module paths, comma-separated, or 'name.*' (default: blocks.*)")
    p.add_argument("--layout", default=None, choices=["ND", "NLD", "NCL", "NCHW", "NHWC"],
                   help="the layout of the state at the sites, when it cannot be read from the model "
                        "(NCL: channels first, a conv net's; NLD: tokens; NHWC: a channels-last image)")
    p.add_argument("--output", default=None, metavar="KEY",
                   help="when your model returns a tuple or a dict (a Hugging Face ModelOutput): the logits' index "
                        "or key, e.g. 0 or logits (the API's output=)")
    p.add_argument("--level", type=float, default=0.05, help="the tests' level (default: 0.05)")
    p.add_argument("--seed", type=int, default=0, help="seed of the scan's random features and splits (default: 0)")
    if command in ("saturation", "grow"):
        p.add_argument("--eps", type=float, default=None,
                       help="tolerance of 'saturated within eps': the first-order gain below it (default: 1e-3)")
    if command == "grow":
        p.add_argument("--max-blocks", type=int, default=3, help="at most this many blocks inserted (default: 3)")
        p.add_argument("--steps", type=int, default=200, help="Adam steps after each insertion (default: 200)")
    if command == "certify":
        p.add_argument("--site", required=False,
                       help="the insertion site (default: the best site of a saturation scan on the signal sample)")
        p.add_argument("--B", type=float, default=None, help="an upper bound B on the loss (THEORY §1)")
        p.add_argument("--L-top", dest="L_top", type=float, default=None,
                       help="a Lipschitz constant of the network above the site (THEORY §1)")
        _constant_arguments(p)
        p.add_argument("--route", default=None,
                       help="the route whose verdict is the certificate, fixed before the data: a row name of the "
                            "route table (e.g. direct_route, population_route; default: direct_route, Theorem 3)")

def _constant_arguments(p: argparse.ArgumentParser) -> None:
    """``certify``'s constants beyond ``--B`` and ``--L-top`` (THEORY §1, §6b; ``dc.constants`` derives them)."""
    p.add_argument("--L-loss", dest="L_loss", type=float, default=None,
                   help="a Lipschitz constant of the loss in the output (default: sqrt(2) for cross_entropy, "
                        "else not given)")
    p.add_argument("--kappa", type=float, default=None,
                   help="a Lipschitz constant of the gradient of the loss in the block output (THEORY §6b (b))")
    p.add_argument("--A-norm", dest="A_norm", type=float, default=None,
                   help="||A||_2 of a linear head above the site (gives kappa for a named loss; THEORY §6b)")
    p.add_argument("--derive-constants", action="store_true",
                   help="derive B, L_loss, L_top, A_norm, kappa and rho_phi where they exist for your network "
                        "(dc.constants: a post-norm state, a linear or pooled linear head); the flags given win")
    p.add_argument("--rho-phi", dest="rho_phi", type=float, default=None,
                   help="a sure bound on the whole-state ||phi|| (default: the plug-in maximum on the signal "
                        "sample, checked on S and T)")


def load_object(spec: str, arg: str):
    """``FILE.py:name`` -> the object ``name`` of the module at ``FILE.py``.

    Raises:
        InputError: not of that form, no such file, the file fails to import, no such name.
    """
    path, sep, name = (spec or "").rpartition(":")
    if not sep or not path.endswith(".py") or not name:
        raise InputError(arg, "FILE.py:name", spec)
    if not Path(path).is_file():
        raise InputError(arg, "FILE.py:name with an existing FILE.py", spec)
    mod_spec = importlib.util.spec_from_file_location(f"depthcert_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.path.insert(0, str(Path(path).resolve().parent))
    try:
        mod_spec.loader.exec_module(module)
    except Exception as exc:   # the user's file: report, never a traceback
        raise InputError(arg, "a Python file that imports cleanly", f"{spec} ({type(exc).__name__}: {exc})") from None
    finally:
        sys.path.pop(0)
    if not hasattr(module, name):
        raise InputError(arg, f"a name defined in {path}", name)
    return getattr(module, name)


class UserCodeError(InputError):
    """The user's own code raised: ``ARG: your WHAT raised TYPE at FILE:LINE: message`` (exit 2)."""

    def __init__(self, arg: str, what: str, exc: BaseException, where: str):
        self.key, self.allowed, self.value = arg, f"a {what} that runs", f"{type(exc).__name__} at {where}"
        text = str(exc).strip().splitlines()
        ValueError.__init__(self, f"{arg}: your {what} raised {type(exc).__name__} at {where}: "
                                  f"{text[0][:300] if text else type(exc).__name__}")


def _user_frame(exc: BaseException, files) -> str | None:
    """``file:line`` of the innermost frame of ``exc``'s traceback in one of the user's ``files`` (None: none)."""
    import os
    import traceback

    mine = {os.path.realpath(f) for f in files if f}
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except RecursionError:      # pragma: no cover - extract_tb is iterative
        return None
    inner = [f for f in frames if os.path.realpath(f.filename) in mine]
    return f"{inner[-1].filename}:{inner[-1].lineno}" if inner else None


def call_user(fn, arg: str, what: str):
    """``fn()``, the user's factory or data function given as ``arg FILE.py:name``.

    Raises:
        UserCodeError: ``fn`` raised (any ``Exception``, RecursionError included): the type, file and line, the message.
    """
    try:
        return fn()
    except Exception as exc:   # noqa: BLE001 -- the user's code: theirs, in one line
        where = _user_frame(exc, [getattr(getattr(fn, "__code__", None), "co_filename", None)])
        raise UserCodeError(arg, what, exc, where or "its call") from None


def _model(args):
    import torch

    model = call_user(load_object(args.model, "--model"), "--model", "factory")
    if not isinstance(model, torch.nn.Module):
        raise InputError("--model", "a factory returning a torch.nn.Module", type(model).__name__)
    if args.weights:
        try:
            state = torch.load(args.weights, map_location="cpu", weights_only=True)
            model.load_state_dict(state)
        except Exception as exc:
            raise InputError("--weights", "a state dict of the model (weights_only=True)",
                             f"{args.weights} ({type(exc).__name__}: {first_line(exc, 200)})") from None
    bn = [n for n, m in model.named_modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.training]
    if bn:   # as the API (numerics.sites.check_no_batchnorm): never a silent model.eval()
        raise InputError("--model", "a network without batch norm in train mode (batch statistics couple samples; "
                         "return model.eval() from the factory to use the running statistics)",
                         f"batch norm in train mode at {bn[0]!r}")
    return model


def _roles(args, command: str) -> dict:
    roles = call_user(load_object(args.data, "--data"), "--data", "data function")
    need = ROLES[command]
    if not isinstance(roles, dict) or any(k not in roles for k in need):
        got = sorted(roles) if isinstance(roles, dict) else type(roles).__name__
        raise InputError("--data", f"a function returning a dict with keys {list(need)}", got)
    return roles


def _call(args, command: str, model, roles, out: Path) -> dict:
    import depthcert as dc

    sites = args.sites.split(",") if "," in args.sites else args.sites
    common = dict(loss=args.loss, level=args.level, sites=sites, layout=args.layout, output=_output(args))
    eps = {"eps": args.eps} if getattr(args, "eps", None) is not None else {}
    if command == "saturation":
        rep = dc.saturation(model, roles["probe"], seed=args.seed, curvature_data=roles.get("curvature"),
                            **common, **eps)
        if out is not None:
            rep.to_json(out / "saturation.json"), rep.plot(out / "saturation.png")
            _csv(rep.table(), out / "sites.csv")
        return rep.to_dict(), rep.table()
    if command == "grow":
        if getattr(args, "save_model", None):
            _check_save_path(model, Path(args.save_model))
        g = dc.grow(model, roles["train"], roles["probe"], max_blocks=args.max_blocks, steps=args.steps,
                    seed=args.seed, trainable=getattr(args, "trainable", "new"), **common, **eps)
        _csv(g.trajectory, out / "trajectory.csv")
        _csv(g.reports[-1].table(), out / "sites.csv"), g.reports[-1].plot(out / "saturation.png")
        result = {"stop": g.stop, "trajectory": json.loads(g.trajectory.to_json(orient="records"))}
        if getattr(args, "save_model", None):
            result["saved_model"] = _save_grown(g.model, Path(args.save_model))
        atomic_write_text(out / "grow.json", json.dumps(result, indent=1, default=str))
        return result, None
    site = args.site or dc.saturation(model, roles["signal"], seed=args.seed, **common).best_site
    consts = dc.constants(model, site, roles["signal"], loss=args.loss, output=_output(args)) if args.derive_constants else None
    cert = dc.certify_insertion(model, site, roles["signal"], roles["S"], roles["T"], loss=args.loss, constants=consts,
                                level=args.level, route=args.route, B=args.B, L_top=args.L_top, L_loss=args.L_loss,
                                kappa=args.kappa, A_norm=args.A_norm, rho_phi=args.rho_phi, layout=args.layout,
                                seed=args.seed, output=_output(args))
    result = {"site": site, "certified": cert.certified, "route": cert.route, "bound": cert.bound,
              "routes": cert.rows, "quantities": cert.quantities, "constants": cert.constants, "notes": cert.notes}
    if out is not None:
        _csv(cert.table(), out / "routes.csv")
        atomic_write_text(out / "certify.json", json.dumps(result, indent=1, default=str))
    shown = cert.table(routes=getattr(args, "routes", "all"))    # --routes default: the paper's two and the route fixed
    return result, shown[["route", "certified", "bound", "failure_probability", "S_only", "improvement",
                          "improvement_over_gain", "missing"]]


def _csv(table, path: Path) -> Path:
    """``table`` as CSV at ``path``, atomically (a full disk leaves the previous file: plumbing.io.WriteFailed)."""
    return atomic_write(path, lambda tmp: table.to_csv(tmp, index=False))


def _output(args):
    """``--output``: an int index when it is all digits, else a key (None: the model returns the logits)."""
    out = getattr(args, "output", None)
    return int(out) if isinstance(out, str) and out.isdigit() else out


def _check_save_path(model, path: Path) -> None:
    """Before growing: a Hugging Face decoder is saved as a new directory, so an existing ``path`` is refused."""
    import os

    from numerics.interop.hf_layers import supported

    if supported(model) and os.path.lexists(path):
        raise InputError("--save-model", "a path that does not exist yet (a Hugging Face model is saved as a new "
                         "save_pretrained directory)", str(path))


def _save_grown(model, path: Path) -> str:
    """``torch.save`` (atomic) of ``{"format", "state_dict", "insertions"}``: loadable with ``weights_only=True``;
    a Hugging Face decoder grown by real layers: a ``save_pretrained`` directory (:func:`_save_pretrained`)."""
    import torch

    from numerics.interop.hf_layers import supported

    if supported(model):
        return _save_pretrained(model, path)
    from depthcert.api._attach import FORMAT, insertions

    saved = {"format": FORMAT, "state_dict": model.state_dict(), "insertions": insertions(model)}
    return str(atomic_write(path, lambda tmp: torch.save(saved, tmp)))


def _save_pretrained(model, path: Path) -> str:
    """``model.save_pretrained`` into a new directory ``path``, atomically: written into a sibling temporary
    directory, then renamed (a path that exists -- a file or a folder -- is refused, never overwritten)."""
    import os
    import shutil
    import tempfile

    _check_save_path(model, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        model.save_pretrained(tmp)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return str(path)


def run_user(args: argparse.Namespace, command: str) -> int:
    """Run ``command`` on the user's model and data; exit 2 with one line on bad input."""
    if not args.model:
        raise InputError("--model", "FILE.py:factory (or --config FILE for a built-in workload)", None)
    if not args.data:
        raise InputError("--data", "FILE.py:function (with --model)", None)
    if command == "grow" and isinstance(args.steps, int) and isinstance(args.max_blocks, int) and args.steps > 0:
        from plumbing.sizes import SECONDS_PER_STEP
        from plumbing.machine import check_work

        check_work("--steps", args.steps, SECONDS_PER_STEP * max(args.max_blocks, 1),
                   f"Adam step (done after each of --max-blocks {args.max_blocks} insertions)")
    out = Path(args.out) if args.out else (Path("grow_out") if command == "grow" else None)
    try:
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
        result, rows = _call(args, command, _model(args), _roles(args, command), out)
    except InputError:
        raise
    except (ValueError, TypeError, OSError) as exc:   # the API names the argument and the value
        raise _OneLine(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except Exception as exc:   # noqa: BLE001 -- raised by the user's model (its forward), or torch on their data
        raise _from_user(args, exc) from None
    print(json.dumps(result, default=str) if args.json else _summary(command, result, out, rows))
    return 0


def _from_user(args, exc: Exception) -> InputError:
    """The one line for an exception the API raised running the user's model on their data."""
    files = {"--model": _path_of(args.model), "--data": _path_of(args.data)}
    for arg, what in (("--model", "model"), ("--data", "data")):
        where = _user_frame(exc, [files[arg]])
        if where is not None:
            return UserCodeError(arg, what, exc, where)
    text = str(exc).strip().splitlines()
    return _OneLine(f"--model {args.model} with --data {args.data}: a network that runs on the data as given, got "
                    f"{type(exc).__name__}: {text[0][:300] if text else ''}")


def _path_of(spec: str | None) -> str | None:
    path, sep, _ = (spec or "").rpartition(":")
    return path if sep else None


class _OneLine(InputError):
    """An API error passed through as it is (it already names the argument and the value)."""

    def __init__(self, message: str):
        self.key, self.allowed, self.value = "", "", message
        ValueError.__init__(self, message)


def _summary(command: str, result: dict, out: Path | None, rows) -> str:
    """The table (one row per site or route) and the answer; where the files went, if any were written."""
    where = f"; outputs in {out}" if out is not None else "; no files written (--out DIR writes them)"
    if command == "grow":
        saved = f"; grown model in {result['saved_model']}" if result.get("saved_model") else ""
        return f"stopped: {result['stop']} after {len(result['trajectory']) - 1} blocks{where}{saved}"
    import pandas as pd

    with pd.option_context("display.max_columns", None, "display.width", 200, "display.max_colwidth", 60):
        table = rows.to_string(index=False)
    if command == "saturation":
        return f"{table}\n{result['verdict']} (best site {result['best_site']}){where}"
    shares = "".join(f"\n  - {r['route']}: {r['share_note']}" for r in result["routes"] if r.get("certified"))
    return f"{table}{shares}\ncertified={result['certified']} ({result['route']}, bound {result['bound']}){where}"
