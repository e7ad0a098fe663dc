"""Generated bad input for every command (used by ``tests/cli/test_bad_input.py``).

:data:`BAD_INPUTS` maps a command to a function ``tmp_path -> hypothesis strategy of argv``
whose every example is bad input (a value outside its range, an unknown key, malformed
TOML, an unwritable ``--out``, a bad count); the test feeds each to ``depthcert`` and
requires exit 2 with one line on stderr and no traceback. **Hook**: a new command adds
its generator with :func:`register` (e.g. ``saturation``, ``grow``, ``sweep``, ``plot``,
``reproduce``), reusing :func:`bad_study_config` with its own schema.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Mapping

from hypothesis import strategies as st

from bounds.parameters import OPTIONAL, PARAMETERS
from plumbing.validation import Interval
from numerics.studies.run import CONFIG_SCHEMA

#: command -> (tmp_path -> strategy of argv lists, each bad input)
BAD_INPUTS: dict[str, Callable[[Path], st.SearchStrategy]] = {}

#: A valid, light run config that generators spoil in one place.
LIGHT = {"sizes": {"M": 500, "K": 500, "population": 500}, "reference": {"n": 200, "steps": 2},
         "block_training": {"steps": 2, "batch_size": 64}}

#: Folders no command can write: missing parents under /proc, and a path below a regular file.
UNWRITABLE = ("/proc/x", "/proc/depthcert/out", "/dev/null/out")


def register(name: str):
    def deco(fn):
        BAD_INPUTS[name] = fn
        return fn
    return deco


def invalid_values(rule) -> st.SearchStrategy:
    """Values a rule (an :class:`Interval` or a tuple of choices) must reject (TOML-representable)."""
    if hasattr(rule, "invalid_examples"):      # a rule of its own (e.g. [localised] cap) names its bad values
        return st.sampled_from(list(rule.invalid_examples()))
    if isinstance(rule, tuple):
        wrong = [v for v in ("__nope__", 12345, 0.5, [1, 2], "true") if v not in rule]
        if isinstance(rule[0], bool):
            wrong += [1, 0]
        return st.sampled_from(wrong)
    bad: list = [math.nan, math.inf, -math.inf, "text", True, [1.0]]
    if rule.low is not None:
        bad.append(rule.low - 1)
        if not rule.closed_low:
            bad.append(rule.low)
    if rule.high is not None:
        bad.append(rule.high + 1)
        if not rule.closed_high:
            bad.append(rule.high)
    if rule.integer:
        bad += [(rule.low or 0) + 0.5, 2**63, 10**30, -(2**63) - 1]    # beyond int64: refused, never an overflow
    bad.append(10**400)                                                # beyond the float range: likewise
    return st.sampled_from(bad)


def bad_study_config(schema: Mapping, base: Mapping) -> st.SearchStrategy:
    """A study config (dict) that is ``base`` spoiled in one place: a bad value, an unknown key or section."""
    keyed = [(sec, key, rule) for sec, rules in schema.items() for key, rule in rules.items()]
    own_table = "sizes" if "sizes" in schema else next(k for k in schema if k)

    def spoil(choice):
        (sec, key, rule), value, how = choice
        cfg = {s: dict(v) if isinstance(v, Mapping) else v for s, v in base.items()}
        if how == "unknown_key":   # in one of this command's own tables (another command's table is ignored here)
            cfg.setdefault(own_table, {})["not_a_key"] = 1
        elif how == "unknown_section":
            cfg["not_a_section"] = {"x": 1}
        elif how == "section_not_table" and sec != "":
            cfg[sec] = value if not isinstance(value, list) else 3    # a scalar where a [table] belongs
        elif sec == "":
            cfg[key] = value
        else:
            cfg.setdefault(sec, {})[key] = value
        return cfg

    one = st.sampled_from(keyed).flatmap(lambda k: st.tuples(st.just(k), invalid_values(k[2]),
                                                             st.sampled_from(["value"] * 8 + ["unknown_key",
                                                                                              "unknown_section",
                                                                                              "section_not_table"])))
    return one.map(spoil)


def _write(tmp: Path, name: str, text: str) -> str:
    p = tmp / name
    p.write_text(text)
    return str(p)


def _to_toml(cfg: Mapping) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in cfg.items() if not isinstance(v, Mapping)]
    for k, v in cfg.items():
        if isinstance(v, Mapping):
            lines += [f"[{k}]"] + [f"{kk} = {_toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def _config_file(tmp: Path, cfg) -> str:
    return _write(tmp, "cfg.toml", _to_toml(cfg))


_BROKEN_TOML = st.sampled_from(["seed = = 1\n", "[sizes\nM = 1\n", "seed = 'unterminated\n", "\x00\x01"])


@register("run")
def _run(tmp: Path):
    bad_cfg = bad_study_config(CONFIG_SCHEMA, LIGHT).map(lambda c: ["--config", _config_file(tmp, c),
                                                                     "--out", str(tmp / "o")])
    bad_out = st.sampled_from(UNWRITABLE).map(lambda o: ["--config", _config_file(tmp, LIGHT), "--out", o])
    broken = _BROKEN_TOML.map(lambda t: ["--config", _write(tmp, "b.toml", t), "--out", str(tmp / "o")])
    huge = huge_but_in_range().map(lambda c: ["--config", _config_file(tmp, c), "--out", str(tmp / "o")])
    return st.one_of(bad_cfg, bad_out, broken, huge).map(lambda a: ["run"] + a)


#: Keys whose in-range values can still ask for more memory than any machine has.
HUGE_KEYS = (("sizes", "M"), ("sizes", "population"), ("reference", "n"), ("model", "width"), ("task", "width"),
             ("insertion", "width"), ("block_training", "steps"))


def huge_but_in_range() -> st.SearchStrategy:
    """A light config with one size or width in range but far too large for memory (exit 2, naming it)."""
    def spoil(choice):
        (sec, key), exp = choice
        cfg = {s: dict(v) for s, v in LIGHT.items()}
        cfg.setdefault(sec, {})[key] = 10 ** exp
        return cfg
    return st.tuples(st.sampled_from(HUGE_KEYS), st.integers(11, 15)).map(spoil)


@register("demo")
def _demo(tmp: Path):
    return st.one_of(st.sampled_from(UNWRITABLE).map(lambda o: ["demo", "--out", o]),
                     st.integers(-5, 0).map(lambda n: ["demo", "--out", str(tmp / "d"), "--estimate", str(n)]))


@register("validity")
def _validity(tmp: Path):
    from numerics.studies.validity import VALIDITY_SCHEMA

    out = str(tmp / "v")
    bad_cfg = bad_study_config(VALIDITY_SCHEMA, LIGHT).map(
        lambda c: ["--config", _config_file(tmp, c), "--draws", "2", "--out", out])
    bad_args = st.one_of(
        st.integers(-3, 0).map(lambda n: ["--draws", str(n), "--out", out]),
        st.sampled_from(["0", "1", "-0.1", "1.5", "nan"]).map(lambda lv: ["--draws", "2", "--level", lv, "--out", out]),
        st.sampled_from(UNWRITABLE).map(lambda o: ["--draws", "2", "--out", o]),
        st.integers(-2, 0).map(lambda g: ["--draws", "2", "--group", str(g), "--out", out]))
    huge = huge_but_in_range().map(lambda c: ["--config", _config_file(tmp, c), "--draws", "2", "--out", out])
    return st.one_of(bad_cfg, huge, bad_args.map(lambda a: ["--config", _config_file(tmp, LIGHT)] + a)).map(
        lambda a: ["validity"] + a)


_SETUP = (Path(__file__).resolve().parents[2] / "examples" / "setup.toml").read_text()


@register("bounds")
def _bounds(tmp: Path):
    keys = sorted(PARAMETERS) + sorted(OPTIONAL)

    def spoil(choice):
        key, value = choice
        rule = PARAMETERS.get(key, OPTIONAL.get(key))
        lines = [ln for ln in _SETUP.splitlines() if not ln.startswith(f"{key} ")]
        text = "\n".join([f"{key} = {_toml_value(value)}"] + lines) + "\n"
        assert rule is not None
        return ["bounds", "--config", _write(tmp, "setup.toml", text)]

    vals = st.sampled_from(keys).flatmap(lambda k: st.tuples(st.just(k), invalid_values(
        PARAMETERS.get(k, OPTIONAL.get(k, Interval())))))
    return st.one_of(vals.map(spoil), _BROKEN_TOML.map(lambda t: ["bounds", "--config", _write(tmp, "b.toml", t)]))


@register("prove")
def _prove(tmp: Path):
    formulas = st.sampled_from(["X >= ", "X >= L +", "__import__('os')", "X <= exp(", "1 +* 2", "X >== L", ""])
    chains = formulas.map(lambda f: f'name = "bad"\nassume = ["B > 0"]\npremises = ["X = B"]\nconclusion = "{f}"\n')
    bad = st.one_of(chains, _BROKEN_TOML, st.just('name = "x"\npremises = "not a list"\nconclusion = "X >= 0"\n'))
    return bad.map(lambda t: ["prove", "--chain", _write(tmp, "chain.toml", t)])


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def _grid_value_line(choice) -> str:
    (sec, key, _), value = choice
    return f'"{key if sec == "" else sec + "." + key}" = [{_toml_value(value)}]'


@register("sweep")
def _sweep(tmp: Path):
    """Bad sweep files (a bad base, a bad value in the grid, structure) and bad options."""
    keyed = [(sec, key, rule) for sec, rules in CONFIG_SCHEMA.items() for key, rule in rules.items()]
    good_base = _write(tmp, "exp.toml", _to_toml(LIGHT))
    sweep = lambda text: ["--config", _write(tmp, "s.toml", text), "--out", str(tmp / "o")]  # noqa: E731
    bad_base = bad_study_config(CONFIG_SCHEMA, LIGHT).filter(lambda c: "seed" not in c).map(   # the grid sets seed
        lambda c: sweep(f'base = "{_config_file(tmp, c)}"\n[grid]\nseed = [0]\n'))
    bad_cell = st.sampled_from(keyed).flatmap(lambda k: st.tuples(st.just(k), invalid_values(k[2]))).map(
        lambda ch: sweep(f'base = "{good_base}"\n[grid]\n{_grid_value_line(ch)}\n'))
    structure = st.sampled_from([
        f'base = "{good_base}"\n[grid]\n', f'base = "{good_base}"\n', '[grid]\nseed = [0]\n',
        f'base = "{good_base}"\n[zip]\nseed = [0, 1]\n"model.depth" = [1]\n',
        f'base = "{good_base}"\n[grid]\nseed = []\n', f'base = "{good_base}"\nextra = 1\n[grid]\nseed = [0]\n',
        f'base = "{good_base}"\nplots = ["pie"]\n[grid]\nseed = [0]\n', 'base = "missing.toml"\n[grid]\nseed = [0]\n',
        "seed = = 1\n"]).map(sweep)
    valid = f'base = "{good_base}"\n[grid]\nseed = [0]\n'
    options = st.sampled_from([["--workers", "0"], ["--workers", "999"], ["--threads", "999"], ["--backend", "dask"],
                               ["--out", UNWRITABLE[0]]]).map(lambda o: sweep(valid) + o)
    return st.one_of(bad_base, bad_cell, structure, options).map(lambda a: ["sweep"] + a)


@register("plot")
def _plot(tmp: Path):
    """Folders without the results a kind draws, and bad options."""
    run_dir = tmp / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "result.json").write_text('{"config": {"model": {"depth": 1}}}\n')
    kinds = ["bound-vs-M", "region", "appendix-m", "dstar", "rebound", "data", "covariance"]
    folders = st.sampled_from([str(run_dir), str(tmp / "nothing_here")])
    no_results = st.tuples(folders, st.sampled_from(kinds)).map(lambda fk: [fk[0], "--kind", fk[1]])
    options = st.sampled_from([["--n-boot", "0"], ["--n-boot", "5"], ["--cell", "3"], ["--cell", "-1"],
                               ["--out", UNWRITABLE[0]]]).map(lambda o: [str(run_dir), "--kind", "covariance"] + o)
    return st.one_of(no_results, options).map(lambda a: ["plot"] + a)


@register("reproduce")
def _reproduce(tmp: Path):
    """Bad options fail before any study runs."""
    out = str(tmp / "r")
    return st.sampled_from([["--workers", "0", "--out", out], ["--workers", "999", "--out", out],
                            ["--backend", "dask", "--out", out], ["--threads", "999", "--out", out],
                            ["--out", UNWRITABLE[0]], ["--out", UNWRITABLE[2]]]).map(
        lambda a: ["reproduce", "--suite", "quick"] + a)


def _value_rules_only(schema: Mapping) -> dict:
    """The keys whose rules ``invalid_values`` knows (intervals and choices; not lists or free text)."""
    return {sec: {k: r for k, r in rules.items() if isinstance(r, (Interval, tuple))} for sec, rules in schema.items()}


#: A valid, light saturation/grow config (the teacher workload) that generators spoil in one place.
LIGHT_SAT = {"task": {"n_test": 100, "n_population": 100}, "reference": {"n": 200, "steps": 2, "anneal_steps": 0},
             "saturation": {"probe_n": 64, "beta_n": 16, "batch_size": 64}}


@register("saturation")
def _saturation(tmp: Path):
    from numerics.studies.saturation import CONFIG_SCHEMA as SAT_SCHEMA

    out = str(tmp / "s")
    bad_cfg = bad_study_config(_value_rules_only(SAT_SCHEMA), LIGHT_SAT).map(
        lambda c: ["--config", _config_file(tmp, c), "--out", out])
    lists = st.sampled_from(['sites = ["no.such.module"]', 'families = ["nope"]', "sites = []", 'sites = "x"']).map(
        lambda line: ["--config", _write(tmp, "l.toml", _to_toml({k: v for k, v in LIGHT_SAT.items()
                                                                    if k != "saturation"})
                                         + "[saturation]\nprobe_n = 64\n" + line + "\n"), "--out", out])
    options = st.sampled_from(UNWRITABLE).map(lambda o: ["--config", _config_file(tmp, LIGHT_SAT), "--out", o])
    broken = _BROKEN_TOML.map(lambda t: ["--config", _write(tmp, "b.toml", t)])
    return st.one_of(bad_cfg, lists, options, broken).map(lambda a: ["saturation"] + a)


@register("grow")
def _grow(tmp: Path):
    from numerics.studies.growth import GROW_SCHEMA

    base = {**LIGHT_SAT, "growth": {"max_depth": 2, "steps_per_growth": 2}}
    bad_cfg = bad_study_config(_value_rules_only(GROW_SCHEMA), base).map(
        lambda c: ["--config", _config_file(tmp, c), "--out", str(tmp / "g")])
    options = st.sampled_from(UNWRITABLE).map(lambda o: ["--config", _config_file(tmp, base), "--out", o])
    broken = _BROKEN_TOML.map(lambda t: ["--config", _write(tmp, "b.toml", t), "--out", str(tmp / "g")])
    return st.one_of(bad_cfg, options, broken).map(lambda a: ["grow"] + a)


@register("study")
def _study(tmp: Path):
    from numerics.studies.growth import STUDIES

    from numerics.studies.growth import GROW_SCHEMA

    name = sorted(STUDIES)[0]      # an unknown name is argparse's usage error (SystemExit 2, tested elsewhere)
    base = {**LIGHT_SAT, "growth": {"max_depth": 2, "steps_per_growth": 2}}
    bad_cfg = bad_study_config(_value_rules_only(GROW_SCHEMA), base).map(
        lambda c: [name, "--config", _config_file(tmp, c), "--out", str(tmp / "st"), "--quick"])
    outs = st.sampled_from(UNWRITABLE).map(lambda o: [name, "--out", o, "--quick"])
    broken = _BROKEN_TOML.map(lambda t: [name, "--config", _write(tmp, "b.toml", t), "--out", str(tmp / "st"),
                                         "--quick"])
    return st.one_of(bad_cfg, outs, broken).map(lambda a: ["study"] + a)


#: A light user file for ``--model FILE.py:factory --data FILE.py:roles`` (depthcert._cmd_user).
USER_FILE = '''
import torch
from torch import nn

def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()), nn.Linear(4, 2)).double()

def roles():
    x = torch.randn(600, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    y = (x[:, 0] > 0).long()
    return {"signal": (x[:200], y[:200]), "S": (x[200:400], y[200:400]), "T": (x[400:], y[400:])}

def not_roles():
    return [1, 2]
'''


@register("certify")
def _certify(tmp: Path):
    user = _write(tmp, "user.py", USER_FILE)
    ok = ["--model", f"{user}:factory", "--data", f"{user}:roles", "--site", "1", "--out", str(tmp / "c")]
    specs = st.sampled_from([
        ["--model", f"{user}:nope", "--data", f"{user}:roles"], ["--model", user, "--data", f"{user}:roles"],
        ["--model", str(tmp / "missing.py:factory"), "--data", f"{user}:roles"],
        ["--model", f"{user}:factory", "--data", f"{user}:not_roles"], ["--model", f"{user}:factory"], [],
        ["--model", f"{user}:factory", "--data", f"{user}:roles", "--weights", _write(tmp, "w.pt", "not a checkpoint")]])
    values = st.sampled_from([["--level", v] for v in ("2", "0", "-0.5", "nan")]
                             + [["--B", v] for v in ("-1", "0", "inf")] + [["--site", "no.such"]]
                             + [[k, v] for k in ("--L-loss", "--kappa", "--A-norm", "--rho-phi") for v in ("-1", "nan")]
                             + [["--route", "nope", "--B", "5", "--L-top", "3"]])
    unwritable = st.sampled_from(UNWRITABLE).map(lambda o: ok[:-1] + [o])
    return st.one_of(specs.map(lambda a: a + ["--out", str(tmp / "c")]), values.map(lambda a: ok + a),
                     unwritable).map(lambda a: ["certify"] + a)


# --- hostile files (issue 20): nesting no reader can follow, stored files cut short ---------------

#: command -> (tmp_path -> strategy of argv) whose every example is a hostile file (exit 2, one line).
HOSTILE: dict[str, Callable[[Path], st.SearchStrategy]] = {}


def deep_toml() -> st.SearchStrategy:
    """TOML nested beyond what a config may hold: arrays, inline tables, dotted keys, table headers."""
    def text(choice):
        kind, n = choice
        if kind == "array":
            return "x = " + "[" * n + "]" * n + "\n"
        if kind == "inline":
            return "x = " + "{a = " * n + "1" + "}" * n + "\n"
        if kind == "dotted":
            return "a." * n + "b = 1\n"
        return "[" + "a." * n + "b]\nc = 1\n"
    return st.tuples(st.sampled_from(["array", "inline", "dotted", "header"]), st.integers(40, 20000)).map(text)


def _hostile_config(command: str, extra: list[str]):
    def build(tmp: Path):
        return deep_toml().map(lambda t: [command, "--config", _write(tmp, "deep.toml", t)] + extra(tmp))
    HOSTILE[command] = build


_hostile_config("bounds", lambda tmp: [])
_hostile_config("run", lambda tmp: ["--out", str(tmp / "o")])
_hostile_config("validity", lambda tmp: ["--draws", "2", "--out", str(tmp / "o")])
_hostile_config("saturation", lambda tmp: ["--out", str(tmp / "o")])
_hostile_config("grow", lambda tmp: ["--out", str(tmp / "o")])


@lambda fn: HOSTILE.__setitem__("study", fn)
def _hostile_study(tmp: Path):
    return deep_toml().map(lambda t: ["study", "growth-vs-scratch", "--config", _write(tmp, "deep.toml", t),
                                      "--out", str(tmp / "o"), "--quick"])


@lambda fn: HOSTILE.__setitem__("sweep", fn)
def _hostile_sweep(tmp: Path):
    """A deep sweep file, a deep base file, a base that is a symlink loop, a grid of too many cells."""
    loop = tmp / "loop_a"
    if not loop.is_symlink():
        loop.symlink_to(tmp / "loop_b")
        (tmp / "loop_b").symlink_to(loop)
    good = _write(tmp, "exp.toml", _to_toml(LIGHT))
    sweep = lambda text: ["sweep", "--config", _write(tmp, "s.toml", text), "--out", str(tmp / "o")]  # noqa: E731
    deep_base = deep_toml().map(lambda t: sweep(f'base = "{_write(tmp, "deep.toml", t)}"\n[grid]\nseed = [0]\n'))
    many = st.integers(101, 3000).map(lambda n: sweep(f'base = "{good}"\n[grid]\nseed = {list(range(n))}\n'
                                                      f'"sizes.M" = {list(range(1000, 1000 + 100))}\n'))
    return st.one_of(deep_toml().map(sweep), deep_base, many,
                     st.just(sweep(f'base = "{loop}"\n[grid]\nseed = [0]\n')))


@lambda fn: HOSTILE.__setitem__("prove", fn)
def _hostile_prove(tmp: Path):
    return deep_toml().map(lambda t: ["prove", "--chain", _write(tmp, "deep.toml", t)])


@lambda fn: HOSTILE.__setitem__("plot", fn)
def _hostile_plot(tmp: Path):
    """A sweep folder whose sweep.json or a cell's result.json is cut short, not JSON, or nested too deeply."""
    def folder(choice):
        which, text = choice
        d = tmp / f"sweep_{abs(hash((which, text))) % 10**8}"
        cell = d / "cells" / "seed=0__0000000000"
        cell.mkdir(parents=True, exist_ok=True)
        spec = json.dumps({"base": {}, "grid": {"seed": [0]}, "zip": {}, "plots": [],
                           "cells": [{"key": cell.name, "params": {"seed": 0}}]})
        (d / "sweep.json").write_text(text if which == "sweep.json" else spec)
        (cell / "result.json").write_text(text if which == "result.json" else '{"config": {}}')
        return ["plot", str(d), "--kind", "appendix-m"]
    texts = st.sampled_from(["", '{"cells": [', '{"cells": "x"}', "[" * 50000, "\\xff", '{"a": 1} trailing'])
    return st.tuples(st.sampled_from(["sweep.json", "result.json"]), texts).map(folder)
