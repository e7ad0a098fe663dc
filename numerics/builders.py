"""Config sections shared by the studies, and the primitives they build.

Every study that starts from a trained reference network (run, validity, saturation,
growth, sweeps) reads the same ``[task]``, ``[model]`` and ``[reference]`` sections; their
rules live here once (as data, STYLE: Errors) together with the functions that turn them
into a teacher task, an untrained architecture and a trained ``f_old``.
"""
from __future__ import annotations

from typing import Any, Mapping

from bounds._validation import Interval

__all__ = ["DATA_TASK_DIMS", "MODEL_SCHEMA", "REFERENCE_SCHEMA", "TASK_SCHEMA", "build_model", "make_task",
           "train_reference"]

_nonneg = Interval(0)
_pos = Interval(0, closed_low=False)


def _int(lo: int) -> Interval:
    return Interval(lo, integer=True)


TASK_SCHEMA: Mapping[str, Any] = {
    "kind": ("regression", "classification", "digits"), "d_in": _int(1), "depth": _int(0), "width": _int(1),
    "noise_std": _nonneg, "noise_clip": _pos, "mean_bound": _pos, "head_bias": (True, False),
    "n_classes": _int(2), "logit_scale": _pos}
MODEL_SCHEMA: Mapping[str, Any] = {"width": _int(1), "depth": _int(0), "norm": ("rms", "layer"), "eps_n": _nonneg}
#: Dimensions fixed by a dataset task (``task.kind`` -> ``{key: value}``): digits are 8x8, 10 classes.
DATA_TASK_DIMS: Mapping[str, Mapping[str, int]] = {"digits": {"d_in": 64, "n_classes": 10}}
REFERENCE_SCHEMA: Mapping[str, Any] = {
    "n": _int(1), "optimizer": ("sgd", "momentum", "adam"), "lr": _pos, "steps": _int(0), "batch_size": _int(1)}


def make_task(t: Mapping, seed: int):
    """The task of a ``[task]`` section (THEORY §1): a teacher whose network is drawn from
    ``seed``, or ``digits`` (scikit-learn's digits as an empirical distribution,
    :class:`numerics.empirical.EmpiricalClassification`; ``seed`` unused)."""
    from numerics.data import TeacherClassification, TeacherRegression

    if t["kind"] == "digits":
        from numerics.empirical import EmpiricalClassification

        return EmpiricalClassification.digits()
    if t["kind"] == "regression":
        return TeacherRegression(t["d_in"], t["depth"], t["width"], seed=seed,
                                 noise_std=t["noise_std"], noise_clip=t["noise_clip"],
                                 mean_bound=t["mean_bound"], head_bias=t["head_bias"])
    return TeacherClassification(t["d_in"], t.get("n_classes", 2), t["depth"], t["width"], seed=seed,
                                 logit_scale=t.get("logit_scale", 1.0))


def build_model(cfg: Mapping, seed: int):
    """The (untrained) reference architecture of ``cfg["model"]``, initialised from ``seed``."""
    from numerics.models import PostNormResMLP

    m = cfg["model"]
    n_out = 1 if cfg["task"]["kind"] == "regression" else cfg["task"].get("n_classes", 2)
    return PostNormResMLP(cfg["task"]["d_in"], m["width"], m["depth"], n_out, norm=m["norm"],
                          eps_n=m["eps_n"], seed=seed)


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
    from numerics.training import train

    if (seed is None) == (streams is None):
        raise ValueError("give exactly one of seed and streams.")
    if streams is not None:
        init, sample, order = (streams.seed_for(r) for r in ("reference_init", "reference_sample", "reference_training"))
    else:
        init, sample, order = seed, seed + 1, seed
    r = cfg["reference"]
    net = build_model(cfg, init)
    x, y = task.sample(r["n"], seed=sample)
    res = train(net, dict(net.named_parameters()), x, y, optimizer=r["optimizer"], lr=r["lr"],
                steps=r["steps"], batch_size=r["batch_size"], seed=order, loss=task.loss)
    for p in net.parameters():
        p.requires_grad_(False)
    return net.eval(), res
