"""MNIST-1D: an i.i.d. sampler of the package's generator, and the published split (THEORY §10).

MNIST-1D (Greydanus 2020, the ``mnist1d`` package, offline: its ten templates are in the
package's code, nothing is downloaded) turns a class template ``(12,)`` into a signal
``(40,)`` by a random per-sample transform: pad with ``p`` zeros, dilate to 72 points,
scale, translate (a cyclic shift), fill the padding with Gaussian-filtered noise, add i.i.d.
noise, shear, subsample to 40 points. The package's ``make_dataset`` is *not* an i.i.d.
sampler: exactly ``num_samples // 10`` samples per class, standardised by that call's own
mean and standard deviation (two splits of one call are dependent), global ``random`` and
``numpy.random`` reseeded, one Python loop iteration per sample.

* :func:`sample` -- ``n`` i.i.d. samples: labels i.i.d. uniform over the 10 classes, each
  signal the package's transform of its class template (:func:`transform_templates`, a
  vectorised re-implementation, equal to the package's ``transform`` sample by sample
  given the same random draws, ``tests/numerics/test_mnist1d.py``), standardised with the
  constants :data:`NORM_MEAN`, :data:`NORM_STD` fixed once. Driven only by the caller's
  seed or ``numpy.random.Generator``; global random state is never touched.
* :func:`sample_roles` -- one sample per role, each on its own stream
  (:class:`numerics.seeding.Streams`).
* :func:`published_split` -- the published split (``get_dataset_args()`` defaults: 4000
  train / 1000 test) generated offline by the package's own ``make_dataset`` code, for
  accuracy comparisons only: it is not i.i.d.

Shapes: ``x (N, 1, 40)`` float (channels-first, one channel), ``y (N,)`` long.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import types
from typing import Mapping

import numpy as np
import torch

from numerics.seeding import ROLES, Streams

__all__ = ["ARGS", "LENGTH", "N_CLASSES", "NORM_MEAN", "NORM_STD", "TransformDraws", "draw_transforms",
           "published_split", "sample", "sample_roles", "transform_templates"]

#: The published generator's arguments (``mnist1d.get_dataset_args()``, version 0.0.2.post1).
ARGS: Mapping[str, object] = types.MappingProxyType({
    "num_samples": 5000, "train_split": 0.8, "template_len": 12, "padding": (36, 60),
    "scale_coeff": 0.4, "max_translation": 48, "corr_noise_scale": 0.25, "iid_noise_scale": 2e-2,
    "shear_scale": 0.75, "shuffle_seq": False, "final_seq_length": 40, "seed": 42})
N_CLASSES = 10
LENGTH = 40
_DILATED = ARGS["template_len"] + ARGS["padding"][1]   # 72 points after dilation
_EPS = 1e-8                                           # transform(..., eps=1e-8): the template is nonzero
#: **Choice**: the mean and standard deviation of the published call's signals before its
#: standardisation (``make_dataset(get_dataset_args())``: 5000 samples, seed 42), fixed
#: once so that every i.i.d. sample is on the published split's scale.
#: ``test_normalisation_constants_recomputed`` recomputes both from the package.
NORM_MEAN = -0.0055075064312771795
NORM_STD = 0.15467803420593054
#: **Choice**: draws are made in blocks of this many samples (the last one discarded in
#: part), so ``sample(m, seed)`` is the first ``m`` rows of ``sample(n, seed)`` for ``m <= n``.
_CHUNK = 4096


def _package():
    """The ``mnist1d`` modules (imported lazily: an optional dependency)."""
    try:   # not ``mnist1d.transform``: the package's __init__ shadows that submodule by a function
        return importlib.import_module("mnist1d.data"), importlib.import_module("mnist1d.transform")
    except ImportError as err:   # pragma: no cover - exercised only without the extra
        raise ImportError("MNIST-1D needs the mnist1d package: pip install 'depthcert[mnist1d]'.") from err


@dataclasses.dataclass(frozen=True)
class TransformDraws:
    """The random draws of ``n`` per-sample transforms, in the package's order of use.

    Attributes:
        pad_u: ``(n,)`` uniform [0, 1): the padding ``p = 36 + floor(25 pad_u)``.
        scale_u: ``(n,)`` uniform: the scale ``1 + 0.4 (scale_u - 1/2)``.
        shift: ``(n,)`` integers in ``[0, 48)``: the cyclic translation.
        corr_z: ``(n, 72)`` standard normal: the correlated noise before filtering.
        iid_z: ``(n, 72)`` standard normal: the i.i.d. noise.
        shear_u: ``(n,)`` uniform: the shear ``0.75 (shear_u - 1/2)``.
    """

    pad_u: np.ndarray
    scale_u: np.ndarray
    shift: np.ndarray
    corr_z: np.ndarray
    iid_z: np.ndarray
    shear_u: np.ndarray

    def __getitem__(self, idx) -> "TransformDraws":
        return TransformDraws(*(getattr(self, f.name)[idx] for f in dataclasses.fields(self)))


def draw_transforms(n: int, rng: np.random.Generator) -> TransformDraws:
    """``n`` i.i.d. transform draws from ``rng`` (the distributions of the package's draws).

    Example:
        >>> d = draw_transforms(3, np.random.default_rng(0))
        >>> d.corr_z.shape, bool((d.shift < 48).all())
        ((3, 72), True)
    """
    n = _check_n(n)
    return TransformDraws(pad_u=rng.random(n), scale_u=rng.random(n),
                          shift=rng.integers(0, ARGS["max_translation"], size=n),
                          corr_z=rng.standard_normal((n, _DILATED)), iid_z=rng.standard_normal((n, _DILATED)),
                          shear_u=rng.random(n))


@functools.lru_cache(maxsize=1)
def _tables() -> tuple[np.ndarray, np.ndarray]:
    """``dilated (25, 10, 72)``: each padded template dilated by the package's ``interpolate``;
    ``subsample (72, 40)``: the package's linear interpolation 72 -> 40 as a matrix."""
    data, transform = _package()
    templates = data.get_templates()["x"]
    low, high = ARGS["padding"]
    dilated = np.array([[transform.interpolate(np.concatenate([t + _EPS, np.zeros(p)]), _DILATED)
                         for t in templates] for p in range(low, high + 1)])   # the package's pad + dilate
    subsample = transform.interpolate(np.eye(_DILATED), LENGTH).T   # interpolation is linear in x
    return dilated, subsample


def transform_templates(y: np.ndarray, draws: TransformDraws) -> np.ndarray:
    """The package's ``transform`` of the templates of ``y`` under ``draws``, vectorised.

    Same steps and arithmetic as ``mnist1d.transform.transform`` (THEORY §10), over all
    samples at once; unnormalised.

    Args:
        y: ``(n,)`` class labels in ``[0, 10)``.
        draws: :class:`TransformDraws` of ``n`` samples.

    Returns:
        ``(n, 40)`` float64 signals.

    Raises:
        ValueError: ``y`` not ``(n,)`` integers in ``[0, 10)`` for the ``n`` of ``draws``.
    """
    from scipy.ndimage import gaussian_filter1d

    y = np.asarray(y)
    if y.shape != draws.pad_u.shape or draws.corr_z.shape != (len(y), _DILATED):
        raise ValueError(f"expected y (n,) and draws of n samples (corr_z (n, {_DILATED})), got "
                         f"{y.shape} and {draws.corr_z.shape}")
    if y.size and (y.dtype.kind not in "iu" or y.min() < 0 or y.max() >= N_CLASSES):
        raise ValueError(f"y == {y!r}, must hold integer class labels in [0, {N_CLASSES}).")

    dilated, subsample = _tables()
    low, high = ARGS["padding"]
    p = low + np.floor(draws.pad_u * (high - low + 1)).astype(np.int64)
    x = dilated[p - low, y] * (1 + ARGS["scale_coeff"] * (draws.scale_u - 0.5))[:, None]
    cols = (np.arange(_DILATED)[None, :] - draws.shift[:, None]) % _DILATED   # np.roll by shift
    x = np.take_along_axis(x, cols, axis=1)
    mask = x != 0
    corr = gaussian_filter1d(ARGS["corr_noise_scale"] * draws.corr_z, 2, axis=1)
    x = mask * x + (1 - mask) * corr
    x = x + ARGS["iid_noise_scale"] * draws.iid_z
    coeff = ARGS["shear_scale"] * (draws.shear_u - 0.5)
    x = x - coeff[:, None] * np.linspace(-0.5, 0.5, _DILATED)[None, :]
    return x @ subsample


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n == {n!r}, must be an integer >= 0.")
    return int(n)


def _as_rng(seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise TypeError(f"seed == {seed!r}, must be an integer >= 0 or a numpy.random.Generator.")
    return np.random.default_rng(int(seed))


def _to_torch(x: np.ndarray, y: np.ndarray, dtype, device) -> tuple[torch.Tensor, torch.Tensor]:
    xt = torch.from_numpy(np.ascontiguousarray(x)).to(device=device, dtype=dtype).reshape(-1, 1, LENGTH)
    return xt, torch.from_numpy(np.asarray(y, dtype=np.int64)).to(device)


def sample(n: int, seed, *, dtype: torch.dtype = torch.float32,
           device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` i.i.d. MNIST-1D samples: ``y ~ Uniform{0..9}``, ``x = (T(template_y) - mean) / std``.

    ``T`` is the package's per-sample transform (:func:`transform_templates`) and
    ``mean, std`` the fixed constants :data:`NORM_MEAN`, :data:`NORM_STD` (never this
    call's own statistics). Only ``seed`` drives the draws; global random state is untouched.

    Args:
        n: number of samples, ``>= 0``.
        seed: an integer ``>= 0`` (e.g. ``Streams.seed_for(role)``) or a
            ``numpy.random.Generator`` (advanced by whole blocks of draws).
        dtype, device: of the returned ``x``.

    Returns:
        ``(x (n, 1, 40), y (n,) long)``.

    Raises:
        ValueError: ``n`` not an integer ``>= 0``. TypeError: ``seed`` of the wrong type.

    Example:
        >>> x, y = sample(5, 0)
        >>> x.shape, y.dtype, bool(torch.equal(sample(3, 0)[0], x[:3]))
        (torch.Size([5, 1, 40]), torch.int64, True)
    """
    n, rng = _check_n(n), _as_rng(seed)
    xs, ys = [], []
    for start in range(0, n, _CHUNK):   # blocks of _CHUNK samples, each vectorised
        take = min(_CHUNK, n - start)
        labels = rng.integers(0, N_CLASSES, size=_CHUNK)
        draws = draw_transforms(_CHUNK, rng)
        ys.append(labels[:take])
        xs.append((transform_templates(labels[:take], draws[:take]) - NORM_MEAN) / NORM_STD)
    x = np.concatenate(xs) if xs else np.zeros((0, LENGTH))
    y = np.concatenate(ys) if ys else np.zeros(0, dtype=np.int64)
    return _to_torch(x, y, dtype, device)


def sample_roles(sizes: Mapping[str, int], streams: Streams, *, dtype: torch.dtype = torch.float32,
                 device: torch.device | str | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """One i.i.d. sample per role, each from its own stream ``streams.seed_for(role)`` (THEORY §10).

    Args:
        sizes: role -> sample size (roles of :data:`numerics.seeding.ROLES`, e.g. ``"S"``,
            ``"T"``, ``"probe"``, ``"population"``, ``"signal"``).
        streams: the run's :class:`~numerics.seeding.Streams`.

    Returns:
        role -> ``(x (n_role, 1, 40), y (n_role,))``.

    Example:
        >>> out = sample_roles({"S": 4, "T": 2}, Streams(0, 1))
        >>> out["S"][0].shape, out["T"][0].shape
        (torch.Size([4, 1, 40]), torch.Size([2, 1, 40]))
    """
    for role in sizes:
        if role not in ROLES:
            raise ValueError(f"sizes key == {role!r}, must be one of {sorted(ROLES)}.")
    return {role: sample(n, streams.seed_for(role), dtype=dtype, device=device) for role, n in sizes.items()}


def _package_functions(random) -> dict[str, types.FunctionType]:
    """The package's ``make_dataset`` and ``transform`` with ``np.random`` replaced by ``random``.

    **Choice**: the package's functions draw from the global ``numpy.random``; rebinding
    their globals (a copy: the package's module is unchanged) to a namespace whose
    ``random`` is ``random`` (e.g. a private ``numpy.random.RandomState``) runs the
    package's own code on a private stream; ``set_seed`` reseeds ``random`` only.
    """
    data, transform = _package()

    def rebound(module, **overrides):
        scope = dict(vars(module), np=types.SimpleNamespace(**{**vars(np), "random": random}), **overrides)
        for name, obj in list(scope.items()):
            if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__:
                scope[name] = types.FunctionType(obj.__code__, scope, name, obj.__defaults__, obj.__closure__)
        return scope

    t_scope = rebound(transform)
    d_scope = rebound(data, transform=t_scope["transform"], set_seed=lambda seed: random.seed(seed))
    return {"make_dataset": d_scope["make_dataset"], "transform": t_scope["transform"]}


@functools.lru_cache(maxsize=1)
def _published_arrays() -> tuple[np.ndarray, ...]:
    data, _ = _package()
    make_dataset = _package_functions(np.random.RandomState())["make_dataset"]
    ds = make_dataset(data.get_dataset_args())   # reseeds its private RandomState with args.seed = 42
    return tuple(np.array(ds[k]) for k in ("x", "y", "x_test", "y_test"))


def published_split(*, dtype: torch.dtype = torch.float32, device: torch.device | str | None = None):
    """The published MNIST-1D split (``get_dataset_args()``): 4000 train, 1000 test samples.

    Generated offline by the package's own ``make_dataset`` code on a private
    ``RandomState`` (bitwise the published arrays; global random state untouched), cached
    in memory. **For accuracy comparisons only: not i.i.d.** (exactly 500 samples per
    class over both parts, standardised by the call's own statistics, so train and test
    are dependent). Its standardisation equals :data:`NORM_MEAN`, :data:`NORM_STD`.

    Returns:
        ``((x_train (4000, 1, 40), y_train (4000,)), (x_test (1000, 1, 40), y_test (1000,)))``.
    """
    x, y, x_test, y_test = _published_arrays()
    return _to_torch(x, y, dtype, device), _to_torch(x_test, y_test, dtype, device)
