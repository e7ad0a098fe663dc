"""Data + architecture + reference training for the Paper B studies, on any supported workload.

Extends the shared ``[task]``/``[model]``/``[reference]`` sections of
:mod:`numerics.builders` (every key there keeps its meaning) with:

* ``task.kind``: the teacher tasks (``regression``, ``classification``: known depth, exact
  conditionals; ``branch_scale`` multiplies the teacher's residual branches), ``digits``
  (scikit-learn, 8x8), ``chars`` (the standard library's source,
  :mod:`numerics.corpus`; ``seq_len``, ``max_chars``) and ``cifar`` (python-pickle batches
  in a local folder ``path``; ``which`` = 10 or 100) and ``mnist1d`` (i.i.d. draws of the
  ``mnist1d`` package's generator, :mod:`numerics.mnist1d`: every role its own stream, no
  finite pool); ``n_test``, ``n_population`` sizes;
* ``model.kind``: ``mlp`` (:class:`~numerics.models.PostNormResMLP`, the default), ``cnn``
  (:class:`~numerics.models.PostNormResCNN`; ``norm = "batch"`` is accepted here and
  refused by the scan), ``resnet`` (:class:`~numerics.zoo.GroupNormResNet`), ``gpt2``
  (:class:`~numerics.zoo.CharGPT`; ``heads``) and ``hf`` (a local Hugging Face causal LM,
  ``path``), ``cnn1d`` (:class:`~numerics.zoo_cnn1d.ResCNN1d`, for ``mnist1d``: ``norm`` group /
  layer / rms, ``groups``); ``dtype``.

Every random draw comes from a role stream of :class:`numerics.seeding.Streams`: the
teacher, the reference's initialisation, sample and mini-batch order derive from ``seed``;
the splits, the test sample ``T``, the probe and the population sample from ``data_seed``
(the probe has its own role, independent of training).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

import torch

from plumbing.validation import InputError, Interval
from numerics.builders import MODEL_SCHEMA, REFERENCE_SCHEMA, TASK_SCHEMA, make_task
from numerics.roles import WORKLOAD_ROLES
from numerics.seeding import Streams

__all__ = ["ListOf", "Text", "WORKLOAD_SCHEMA", "Workload", "build_network", "make_workload", "risk",
           "seed_of", "train_network"]

TEACHERS = ("regression", "classification")
DATA_KINDS = TEACHERS + ("digits", "chars", "cifar", "mnist1d")
MODEL_KINDS = ("mlp", "cnn", "resnet", "gpt2", "hf", "cnn1d")


class Text:
    """Config rule: a non-empty string."""

    def check(self, key: str, value) -> str:
        if not isinstance(value, str) or not value:
            raise InputError(key, "a non-empty string", value)
        return value


class ListOf:
    """Config rule: a non-empty list of strings (from ``choices`` when given)."""

    def __init__(self, choices: tuple | None = None):
        self.choices = choices

    def check(self, key: str, value) -> list:
        ok = isinstance(value, list) and value and all(isinstance(v, str) for v in value)
        if not ok or (self.choices and any(v not in self.choices for v in value)):
            allowed = f"a non-empty list from {list(self.choices)}" if self.choices else "a non-empty list of strings"
            raise InputError(key, allowed, value)
        return value


def _int(lo: int) -> Interval:
    return Interval(lo, integer=True)


WORKLOAD_SCHEMA: Mapping[str, Mapping[str, Any]] = {
    "": {"seed": _int(0), "data_seed": _int(0)},
    "task": {**TASK_SCHEMA, "kind": DATA_KINDS, "path": Text(),
             "which": (10, 100), "seq_len": _int(2),
             "max_chars": _int(10_000), "n_test": _int(2), "n_population": _int(2)},
    "model": {**MODEL_SCHEMA, "kind": MODEL_KINDS, "norm": ("rms", "layer", "group", "batch"), "groups": _int(1),
              "heads": _int(1), "path": Text(), "dtype": ("float64", "float32")},
    "reference": REFERENCE_SCHEMA,
}

#: The teacher of known depth (3 blocks of width 4, strong branches) and a too-shallow student
#: (depth 1, width 16), trained with annealing: the defaults of ``saturation`` and ``grow``.
DEFAULT_WORKLOAD: dict = {
    "seed": 0, "data_seed": 0,
    "task": {"kind": "regression", "d_in": 4, "depth": 3, "width": 4, "noise_std": 0.02, "noise_clip": 3.0,
             "mean_bound": 1.0, "head_bias": False, "n_classes": 2, "logit_scale": 1.0, "branch_scale": 4.0,
             "n_test": 4000, "n_population": 20000, "seq_len": 64, "max_chars": 3_000_000, "which": 10},
    "model": {"kind": "mlp", "width": 16, "depth": 1, "norm": "rms", "eps_n": 1e-5, "groups": 4, "heads": 4},
    "reference": {"n": 20000, "optimizer": "adam", "lr": 0.005, "steps": 1500, "batch_size": 256,
                  "anneal_steps": 1500},
}


def seed_of(streams: Streams, role: str, *keys) -> int:
    """A 31-bit seed for ``role`` (and optional sub-keys, e.g. a growth step) -- APIs that add
    offsets to a seed (the teacher's label noise) stay inside torch's seed range."""
    from numerics.seeding import role_seed

    name = "/".join([role, *map(str, keys)])
    return role_seed(name, streams.base(role)) % (2**31)


@dataclasses.dataclass
class Workload:
    """Samples (``train``, ``test``, ``probe``, ``population``) and what a study needs to know.

    ``population`` is a large independent sample for ``R`` (Monte Carlo with exact
    conditionals for the teachers, a held-out split for real data); ``soft`` maps ``x`` to
    ``E[y | x]`` (teachers only, else None).
    """

    kind: str
    loss: str
    train: tuple
    test: tuple
    probe: tuple
    population: tuple
    n_out: int
    input_shape: tuple
    task: Any = None
    soft: Callable | None = None
    notes: list = dataclasses.field(default_factory=list)

    @property
    def roles(self) -> dict[str, tuple]:
        """The samples by data role (:data:`numerics.roles.WORKLOAD_ROLES`): ``reference_sample``
        (``train``, f_old's own), ``T`` (``test``), ``probe``, ``population``."""
        return {role: getattr(self, field) for field, role in WORKLOAD_ROLES.items()}

    def sample(self, role: str) -> tuple:
        """The ``(x, y)`` sample of data role ``role``.

        Raises:
            InputError: a role this workload has no sample of (named, with the roles it has).
        """
        samples = self.roles
        if role not in samples:
            raise InputError("role", f"one of {list(samples)} (numerics.roles)", role)
        return samples[role]


def _teacher(cfg: Mapping, streams: Streams, probe_n: int) -> Workload:
    """The teacher and its roles, built as the run study builds them (one world per config):
    the teacher from the ``teacher`` role, ``f_old``'s sample from ``reference_sample``, ``T``
    from ``T`` (``task.n_test`` points), the probe and the population from their own roles."""
    t = cfg["task"]
    task = make_task(t, streams.seed_for("teacher"))
    S = task.sample(cfg["reference"]["n"], streams.seed_for("reference_sample"))
    T = task.sample(t["n_test"], streams.seed_for("T"))
    P = task.sample(probe_n, seed_of(streams, "probe"))
    pop = task.sample(t["n_population"], seed_of(streams, "population"))
    n_out = 1 if t["kind"] == "regression" else t["n_classes"]
    return Workload(t["kind"], task.loss, S, T, P, pop, n_out, (t["d_in"],), task, task.soft_targets)


def _split_data(x, y, cfg, streams, probe_n, kind) -> dict:
    from numerics.data import split

    n_avail, t = len(x), cfg["task"]
    fixed = {"reference.n": cfg["reference"]["n"], "task.n_test": t["n_test"], "saturation.probe_n": probe_n}
    rest = n_avail - sum(fixed.values())
    if rest < 2:
        key = max(fixed, key=fixed.get)
        raise InputError(key, f"smaller: reference.n + task.n_test + saturation.probe_n must leave >= 2 of the "
                         f"{n_avail} {kind} samples for the population split", fixed[key])
    sizes = {"train": fixed["reference.n"], "test": t["n_test"], "probe": probe_n,
             "population": min(t["n_population"], rest)}
    return split(x, y, sizes, seed=seed_of(streams, "S"), name=kind)


def _images(cfg: Mapping, streams: Streams, probe_n: int) -> Workload:
    t, kind = cfg["task"], cfg["task"]["kind"]
    if kind == "digits":
        from sklearn.datasets import load_digits

        data = load_digits()
        x = torch.as_tensor(data.data / 16.0, dtype=torch.float64).reshape(-1, 1, 8, 8)
        y = torch.as_tensor(data.target, dtype=torch.int64)
    else:
        from numerics.data import load_cifar

        if "path" not in t:
            raise InputError("task.path", "a local folder of CIFAR python-pickle batches", "<missing>")
        try:
            parts = load_cifar(t["path"], t.get("which", 10))
        except FileNotFoundError as exc:
            raise InputError("task.path", "a folder holding the CIFAR batches", t["path"]) from exc
        x = torch.cat([parts["train"][0], parts["test"][0]])
        y = torch.cat([parts["train"][1], parts["test"][1]])
    if cfg["model"].get("kind", "mlp") == "mlp":
        x = x.reshape(x.shape[0], -1)
    s = _split_data(x, y, cfg, streams, probe_n, kind)
    n_out = int(y.max()) + 1
    return Workload(kind, "cross_entropy", s["train"], s["test"], s["probe"], s["population"], n_out,
                    tuple(x.shape[1:]))


def _chars(cfg: Mapping, streams: Streams, probe_n: int) -> Workload:
    from numerics.corpus import CharCorpus

    t = cfg["task"]
    corpus, T = CharCorpus(t["max_chars"]), t["seq_len"]
    S = corpus.windows("train", cfg["reference"]["n"], T, seed_of(streams, "reference_sample"))
    test = corpus.windows("test", t["n_test"], T, seed_of(streams, "T"))
    probe = corpus.windows("held", probe_n, T, seed_of(streams, "probe"))
    pop = corpus.windows("held", t["n_population"], T, seed_of(streams, "population"))
    w = Workload("chars", "cross_entropy", S, test, probe, pop, corpus.vocab_size, (T,))
    w.notes.append(f"unigram baseline (test, nats/char): {corpus.unigram_loss():.4f}")
    w.task = corpus
    return w


def _mnist1d(cfg: Mapping, streams: Streams, probe_n: int) -> Workload:
    """MNIST-1D as a generator (THEORY §10): the reference's sample, ``T``, the probe and the
    population sample drawn i.i.d. from their own role streams (the published split is for
    accuracy comparisons only, :func:`numerics.mnist1d.published_split`)."""
    from numerics import mnist1d

    t, dtype = cfg["task"], getattr(torch, cfg["model"].get("dtype", "float32"))
    draw = {role: mnist1d.sample(n, streams.seed_for(role), dtype=dtype) for role, n in (
        ("reference_sample", cfg["reference"]["n"]), ("T", t["n_test"]), ("probe", probe_n),
        ("population", t["n_population"]))}
    if cfg["model"].get("kind", "mlp") == "mlp":
        draw = {k: (x.reshape(x.shape[0], -1), y) for k, (x, y) in draw.items()}
    x0 = draw["T"][0]
    return Workload("mnist1d", "cross_entropy", draw["reference_sample"], draw["T"], draw["probe"],
                    draw["population"], mnist1d.N_CLASSES, tuple(x0.shape[1:]),
                    notes=["mnist1d: i.i.d. draws of the mnist1d generator, each role its own stream; population "
                           "quantities are estimates on the population sample (no exact conditionals)"])


def make_workload(cfg: Mapping, streams: Streams, probe_n: int) -> Workload:
    """The samples of ``cfg["task"]`` (see the module docstring for the roles)."""
    kind = cfg["task"]["kind"]
    if kind in TEACHERS:
        return _teacher(cfg, streams, probe_n)
    if kind == "chars":
        return _chars(cfg, streams, probe_n)
    if kind == "mnist1d":
        return _mnist1d(cfg, streams, probe_n)
    return _images(cfg, streams, probe_n)


_COMPAT = {"mlp": {"vector"}, "cnn": {"image"}, "resnet": {"image"}, "gpt2": {"tokens"}, "hf": {"tokens"},
           "cnn1d": {"signal"}}


def _input_kind(w: Workload) -> str:
    if w.kind == "chars":
        return "tokens"
    return {3: "image", 2: "signal"}.get(len(w.input_shape), "vector")


def build_network(cfg: Mapping, w: Workload, seed: int, depth: int | None = None):
    """The (untrained) architecture of ``cfg["model"]`` for workload ``w``, initialised from ``seed``.

    Raises:
        InputError: a model kind that does not fit the data (e.g. ``gpt2`` on digits).
    """
    from numerics.models import PostNormResCNN, PostNormResMLP
    from numerics.zoo import CharGPT, GroupNormResNet

    m = cfg["model"]
    kind, depth = m.get("kind", "mlp"), m["depth"] if depth is None else depth
    if _input_kind(w) not in _COMPAT[kind]:
        raise InputError("model.kind", f"a model for {_input_kind(w)} inputs ({w.kind})", kind)
    dtype = getattr(torch, m.get("dtype", "float32" if kind in ("gpt2", "hf", "cnn1d") else "float64"))
    if kind == "mlp":
        if m["norm"] not in ("rms", "layer"):
            raise InputError("model.norm", "'rms' or 'layer' for model.kind = 'mlp'", m["norm"])
        return PostNormResMLP(w.input_shape[0], m["width"], depth, w.n_out, norm=m["norm"], eps_n=m["eps_n"],
                              seed=seed, dtype=dtype)
    if kind == "cnn":
        return PostNormResCNN(w.input_shape[0], m["width"], depth, w.n_out, image_size=w.input_shape[1],
                              norm=m["norm"] if m["norm"] != "rms" else "group", groups=m["groups"],
                              eps_n=m["eps_n"], seed=seed, dtype=dtype)
    if kind == "resnet":
        return GroupNormResNet(w.input_shape[0], m["width"], depth, w.n_out, groups=m["groups"], seed=seed,
                               dtype=dtype)
    if kind == "cnn1d":
        from numerics.zoo_cnn1d import ResCNN1d

        if m["norm"] == "batch":
            raise InputError("model.norm", "'group', 'layer' or 'rms' for model.kind = 'cnn1d' (post-norm blocks "
                             "with per-sample normalisation)", m["norm"])
        norm = {"rms": "rms", "layer": "layer"}.get(m["norm"], "group")
        return ResCNN1d(w.input_shape[0], m["width"], depth, w.n_out, norm=norm, groups=m["groups"], seed=seed,
                        dtype=dtype)
    if kind == "gpt2":
        return CharGPT(w.n_out, m["width"], depth, heads=m["heads"], seq_len=w.input_shape[0], seed=seed, dtype=dtype)
    from numerics.interop.hf import HFCausalLM

    if "path" not in m:
        raise InputError("model.path", "a local Hugging Face model directory", "<missing>")
    return HFCausalLM(m["path"], dtype=dtype)


def as_model_dtype(net, x: torch.Tensor) -> torch.Tensor:
    """``x`` in the floating dtype of ``net`` (token ids stay integers)."""
    if x.is_floating_point():
        return x.to(next(net.parameters()).dtype)
    return x


def train_network(net, w: Workload, r: Mapping, seed: int, steps: int | None = None):
    """Train every parameter of ``net`` on ``w.train`` with the ``[reference]`` optimiser:
    :func:`numerics.builders.train_phases` (the run study's reference training, plus the
    annealing phases of ``anneal_steps``).

    Returns:
        ``(net, TrainResult)`` of the last phase.
    """
    from numerics.builders import train_phases

    x, y = w.train
    return train_phases(net, as_model_dtype(net, x), y, r, seed, w.loss, steps=steps)


def risk(net, w: Workload, which: str = "population") -> tuple[float, float]:
    """``(value, stderr)`` of the mean loss on a sample; for the teachers' ``population``, the
    exact-``y`` population risk (Monte Carlo over ``x``, THEORY notation ``R``)."""
    import math

    from numerics._numerics import per_sample_loss
    from numerics.data import conditional_risk

    x, y = getattr(w, which)
    x = as_model_dtype(net, x)
    vals = []
    with torch.no_grad():
        for i in range(0, x.shape[0], 4096):
            out = net(x[i:i + 4096])
            if which == "population" and w.task is not None and w.kind in TEACHERS:
                vals.append(conditional_risk(w.task, x[i:i + 4096].double(), out.double()))
            else:
                vals.append(per_sample_loss(out, y[i:i + 4096], w.loss).double())
    v = torch.cat(vals)
    return float(v.mean()), float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else 0.0
