"""Config sections shared by the studies, and the primitives they build.

Every study that starts from a trained reference network (run, validity, saturation,
growth, sweeps) reads the same ``[task]``, ``[model]`` and ``[reference]`` sections; their
rules live here once (as data, STYLE: Errors) together with the functions that turn them
into a teacher task, an untrained architecture and a trained ``f_old``.
"""
from __future__ import annotations

from typing import Any, Mapping

from plumbing.validation import Interval

__all__ = ["DATA_TASK_DIMS", "SECTION_READERS", "MODEL_SCHEMA", "REFERENCE_SCHEMA", "TASK_SCHEMA", "build_model", "make_task",
           "check_one_world", "own_part", "reference_seeds", "train_phases", "train_reference"]

_nonneg = Interval(0)
_pos = Interval(0, closed_low=False)


def _int(lo: int) -> Interval:
    return Interval(lo, integer=True)


TASK_SCHEMA: Mapping[str, Any] = {
    "kind": ("regression", "classification", "digits", "mnist1d"), "d_in": _int(1), "depth": _int(0), "width": _int(1),
    "noise_std": _nonneg, "noise_clip": _pos, "mean_bound": _pos, "head_bias": (True, False),
    "n_classes": _int(2), "logit_scale": _pos, "branch_scale": _pos}
#: ``kind`` and ``dtype`` change the network: ``run`` builds the post-norm MLP in float64 or, on
#: ``mnist1d``, the 1-D residual CNN ``cnn1d`` (float32 by default, ``norm`` group / layer / rms,
#: ``groups``; :mod:`numerics.zoo_cnn1d_adapter`), and refuses other values instead of ignoring
#: them (:func:`numerics.zoo_cnn1d_adapter.check_run_model`; the saturation workloads widen both).
MODEL_SCHEMA: Mapping[str, Any] = {"width": _int(1), "depth": _int(0), "norm": ("rms", "layer", "group"), "eps_n": _nonneg,
                                   "kind": ("mlp", "cnn1d"), "dtype": ("float64", "float32"), "groups": _int(1)}
#: Dimensions fixed by a dataset task (``task.kind`` -> ``{key: value}``): digits are 8x8, 10 classes.
DATA_TASK_DIMS: Mapping[str, Mapping[str, int]] = {"digits": {"d_in": 64, "n_classes": 10},
                                                   "mnist1d": {"d_in": 40, "n_classes": 10}}
REFERENCE_SCHEMA: Mapping[str, Any] = {
    "n": _int(1), "optimizer": ("sgd", "momentum", "adam"), "lr": _pos, "steps": _int(0), "batch_size": _int(1),
    "anneal_steps": _int(0)}


_RUN_LIKE = ("run", "validity", "sweep")
_SCAN_LIKE = ("saturation", "grow", "study")

#: Who reads what, for one config file holding the sections of several commands: a section, a
#: top-level key or a ``section.key`` of a shared section -> the commands that read it. A command
#: sets aside (with a note) what only others read; a key that no command knows stays an error.
#: ``tests/test_config_sections.py`` checks this table against every command's schema.
SECTION_READERS: Mapping[str, tuple[str, ...]] = {
    "level": _RUN_LIKE, "insertion": _RUN_LIKE, "block_training": _RUN_LIKE, "sizes": _RUN_LIKE,
    "variants": _RUN_LIKE, "localised": _RUN_LIKE, "validity": ("validity",), "saturation": _SCAN_LIKE, "growth": ("grow", "study"),
    **{f"task.{k}": _SCAN_LIKE for k in ("path", "which", "seq_len", "max_chars", "n_test", "n_population")},
    **{f"model.{k}": _SCAN_LIKE for k in ("heads", "path")},
}


def own_part(config: Mapping, schema: Mapping[str, Mapping[str, Any]]) -> tuple[dict, list[str]]:
    """``(the part of config a command with this schema reads, notes naming what others read)``
    (:func:`plumbing.validation.split_sections` over :data:`SECTION_READERS`)."""
    from plumbing.validation import split_sections

    return split_sections(config, schema, SECTION_READERS)


#: The value a command uses for a world key its defaults do not hold.
_IMPLICIT = {"task.branch_scale": 1.0, "task.n_classes": 2, "task.logit_scale": 1.0, "reference.anneal_steps": 0,
             "model.kind": "mlp", "model.dtype": "float64", "model.groups": 4}
_WORLD = {"task": TASK_SCHEMA, "model": MODEL_SCHEMA, "reference": REFERENCE_SCHEMA}


def _effective(defaults: Mapping, key: str):
    section, _, name = key.rpartition(".")
    table = defaults.get(section, {}) if section else defaults
    return table.get(name, _IMPLICIT.get(key))


def check_one_world(config: Mapping, own: tuple[str, Mapping], other: tuple[str, Mapping]) -> None:
    """One file, one world: a file that another command reads too must set every key that builds the
    world (the seeds, ``[task]``, ``[model]``, ``[reference]``) whose defaults differ between the two.

    Args:
        config: the user's config; own, other: ``(command, its defaults)``.

    Raises:
        InputError: every such key left to the defaults, in one message (both defaults of each named).
    """
    from plumbing.validation import MISSING, InputError

    keys = ["seed", "data_seed"] + [f"{sec}.{k}" for sec, table in _WORLD.items() for k in table]
    missing = []
    for key in keys:
        section, _, name = key.rpartition(".")
        given = name in (config.get(section, {}) if section else config)
        a, b = _effective(own[1], key), _effective(other[1], key)
        if not given and a != b:
            missing.append((key, a, b))
    if len(missing) == 1:
        key, a, b = missing[0]
        raise InputError(key, f"given explicitly in a file that `{other[0]}` reads too (the defaults differ: "
                         f"{own[0]} {a!r}, {other[0]} {b!r}; one file builds one world)", MISSING)
    if missing:
        names = ", ".join(k for k, _, _ in missing)
        differ = "; ".join(f"{k}: {own[0]} {a!r}, {other[0]} {b!r}" for k, a, b in missing)
        exc = InputError(names, "given", MISSING)
        exc.args = (f"{len(missing)} keys are missing ({names}), must each be given explicitly in a file that "
                    f"`{other[0]}` reads too (the defaults differ: {differ}; one file builds one world).",)
        raise exc


def make_task(t: Mapping, seed: int):
    """The task of a ``[task]`` section (THEORY §1): a teacher whose network is drawn from
    ``seed``, or ``digits`` (scikit-learn's digits as an empirical distribution,
    :class:`numerics.empirical.EmpiricalClassification`; ``seed`` unused).

    Every command builds its teacher here (the run study with ``seed`` the ``teacher`` role's,
    the saturation and growth workloads likewise), so one config gives one world.
    ``branch_scale`` (default 1) multiplies each teacher block's output layer: how far each
    block moves the stream, i.e. how much depth matters."""
    import torch

    from numerics.data import TeacherClassification, TeacherRegression

    if t["kind"] == "digits":
        from numerics.empirical import EmpiricalClassification

        return EmpiricalClassification.digits()
    if t["kind"] == "mnist1d":   # a generator, no exact teacher: population quantities are estimates (THEORY §10)
        from numerics.sampled_task import mnist1d_task

        return mnist1d_task()
    if t["kind"] == "regression":
        task = TeacherRegression(t["d_in"], t["depth"], t["width"], seed=seed,
                                 noise_std=t["noise_std"], noise_clip=t["noise_clip"],
                                 mean_bound=t["mean_bound"], head_bias=t["head_bias"])
    else:
        task = TeacherClassification(t["d_in"], t.get("n_classes", 2), t["depth"], t["width"], seed=seed,
                                     logit_scale=t.get("logit_scale", 1.0))
    scale = t.get("branch_scale", 1.0)
    if scale != 1.0:
        with torch.no_grad():
            for branch in task.net.branches:
                branch[2].weight.mul_(scale)
                branch[2].bias.mul_(scale)
    return task


def build_model(cfg: Mapping, seed: int):
    """The (untrained) reference architecture of ``cfg["model"]``, initialised from ``seed``
    (``cnn1d``: :class:`numerics.zoo_cnn1d_adapter.SignalNet`, split at the head input after training)."""
    from numerics.models import PostNormResMLP

    m = cfg["model"]
    n_out = 1 if cfg["task"]["kind"] == "regression" else cfg["task"].get("n_classes", 2)
    if m.get("kind", "mlp") == "cnn1d":
        from numerics.zoo_cnn1d_adapter import build_signal_net

        return build_signal_net(m, n_out, seed)
    return PostNormResMLP(cfg["task"]["d_in"], m["width"], m["depth"], n_out, norm=m["norm"],
                          eps_n=m["eps_n"], seed=seed)


def reference_seeds(streams) -> tuple[int, int, int]:
    """The seeds of ``f_old``'s initialisation, training sample and mini-batch order: the roles
    ``reference_init``, ``reference_sample``, ``reference_training`` of
    :class:`numerics.seeding.Streams` (the same for every command)."""
    return tuple(streams.seed_for(r) for r in ("reference_init", "reference_sample", "reference_training"))


def train_phases(net, x, y, r: Mapping, seed: int, loss: str, steps: int | None = None):
    """Train every parameter of ``net`` on ``(x, y)`` with the ``[reference]`` optimiser (zero state).

    ``steps`` (default ``r["steps"]``) at ``r["lr"]`` with mini-batch order ``seed``, then
    ``r["anneal_steps"]`` (default 0) more in two equal phases at ``lr/5`` and ``lr/25`` with
    8x and 16x larger batches, their orders drawn from ``seed``. **Choice** (ours): a
    first-order saturation test asks whether the population gradient of a new block is 0; a
    network left at constant learning rate keeps an optimisation residue that the test rightly
    detects, so the saturation and growth defaults anneal (each phase restarts the optimiser).

    Returns:
        ``(net in eval mode, TrainResult of the last phase)``.
    """
    import torch

    from numerics.training import train

    params = {k: p.requires_grad_(True) for k, p in net.named_parameters()}
    main = r["steps"] if steps is None else steps
    anneal = int(r.get("anneal_steps", 0))
    phases = [(main, r["lr"], r["batch_size"])]
    if anneal:
        phases += [(anneal // 2, r["lr"] / 5, 8 * r["batch_size"]),
                   (anneal - anneal // 2, r["lr"] / 25, 16 * r["batch_size"])]
    net.train()
    gen = torch.Generator().manual_seed(int(seed) % 2**63)
    res = None
    for i, (n_steps, lr, bs) in enumerate(phases):
        order = int(seed) if i == 0 else int(torch.randint(2**31, (1,), generator=gen))
        res = train(net, params, x, y, optimizer=r["optimizer"], lr=lr, steps=n_steps,
                    batch_size=min(bs, x.shape[0]), seed=order, loss=loss)
    return net.eval(), res


def train_reference(cfg: Mapping, task, seed: int | None = None, *, streams=None):
    """``f_old``: :func:`build_model` trained on its own sample of ``task`` (frozen, eval mode).

    Args:
        cfg: a config with ``[task]``, ``[model]``, ``[reference]``.
        task: the teacher task.
        seed: legacy single seed (initialisation ``seed``, sample ``seed + 1``, batches ``seed``).
        streams: a :class:`numerics.seeding.Streams`: initialisation, sample and mini-batch
            order then come from the roles ``reference_init``, ``reference_sample`` and
            ``reference_training`` (independent streams; preferred).

    Returns:
        ``(net, TrainResult)``.
    """
    if (seed is None) == (streams is None):
        raise ValueError("give exactly one of seed and streams.")
    init, sample, order = reference_seeds(streams) if streams is not None else (seed, seed + 1, seed)
    r = cfg["reference"]
    net = build_model(cfg, init)
    x, y = task.sample(r["n"], seed=sample)
    net, res = train_phases(net, x, y, r, order, task.loss)
    if cfg["model"].get("kind", "mlp") == "cnn1d":   # the run study's split at the head input (THEORY §10)
        from numerics.zoo_cnn1d_adapter import HeadInputView

        net = HeadInputView(net, cfg["task"]["d_in"])
    for p in net.parameters():
        p.requires_grad_(False)
    return net.eval(), res
