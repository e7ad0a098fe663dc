"""Tests for numerics.data: exact conditionals, population risk, splits, digits, CIFAR."""
import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from scipy import stats

from numerics.data import (
    TeacherClassification,
    TeacherRegression,
    conditional_risk,
    load_cifar,
    load_digits_split,
    population_risk,
    population_risk_difference,
    split,
    truncated_normal_variance,
)
from tests._tolerances import TOL


@pytest.fixture(scope="module")
def cls_task():
    return TeacherClassification(3, 3, depth=2, width=4, seed=0, logit_scale=2.0)


@pytest.fixture(scope="module")
def reg_task():
    return TeacherRegression(3, depth=2, width=4, seed=0, noise_std=0.2, noise_clip=2.0)


def test_sampling_is_deterministic(cls_task, reg_task):
    for task in (cls_task, reg_task):
        a, b = task.sample(50, seed=3), task.sample(50, seed=3)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert not torch.equal(a[0], task.sample(50, seed=4)[0])


def test_label_frequencies_match_probs_clopper_pearson(cls_task):
    # All x equal: labels are i.i.d. Categorical(p); each class count must lie in its
    # two-sided 99.9% Clopper-Pearson interval (Bonferroni over 3 classes: 99.7% jointly).
    n = 20000
    x = torch.zeros(n, 3, dtype=torch.float64) + 0.3
    p = cls_task.label_probs(x[:1])[0].numpy()
    gen = torch.Generator().manual_seed(0)
    y = torch.multinomial(cls_task.label_probs(x), 1, generator=gen).squeeze(1).numpy()
    for k in range(3):
        ci = stats.binomtest(int((y == k).sum()), n).proportion_ci(0.999, method="exact")
        assert ci.low <= p[k] <= ci.high


def test_label_sampler_rejects_wrong_probs_clopper_pearson(cls_task):
    # The same test must reject a perturbed probability vector (power check).
    n = 20000
    x = torch.zeros(n, 3, dtype=torch.float64) + 0.3
    gen = torch.Generator().manual_seed(0)
    y = torch.multinomial(cls_task.label_probs(x), 1, generator=gen).squeeze(1).numpy()
    p_wrong = cls_task.label_probs(x[:1])[0].numpy()[0] + 0.05
    ci = stats.binomtest(int((y == 0).sum()), n).proportion_ci(0.999, method="exact")
    assert not ci.low <= p_wrong <= ci.high


def test_regression_targets_bounded_and_noise_variance_exact(reg_task):
    x, y = reg_task.sample(200000, seed=1)
    assert float(y.abs().max()) <= reg_task.target_bound
    assert float(reg_task.mean(x).abs().max()) <= reg_task.mean_bound * (1 + 1e-12)
    resid = (y - reg_task.mean(x)).numpy().ravel()
    # chi-square CI for the variance at 99.9% (the residual is bounded: the CLT form is
    # used, var(s^2) = (mu4 - s^4)/n with the sample fourth moment)
    v, n = resid.var(), resid.size
    se = math.sqrt((np.mean(resid**4) - v**2) / n)
    assert abs(v - reg_task.noise_variance) <= 3.29 * se
    assert abs(v - reg_task.noise_std**2) > 3.29 * se  # the untruncated variance is rejected


def test_truncated_variance_against_scipy():
    for clip in (0.5, 1.0, 3.0):
        ref = stats.truncnorm(-clip, clip).var()
        np.testing.assert_allclose(truncated_normal_variance(1.0, clip), ref, **TOL["float64"])
    assert truncated_normal_variance(2.0, None) == 4.0


def test_conditional_risk_matches_enumeration(cls_task):
    x = cls_task.sample_x(7, seed=2)
    out = torch.randn(7, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    p = cls_task.label_probs(x)
    brute = sum(p[:, k] * torch.nn.functional.cross_entropy(out, torch.full((7,), k), reduction="none")
                for k in range(3))
    torch.testing.assert_close(conditional_risk(cls_task, x, out), brute, **TOL["float64"])


def test_population_risk_covers_sample_mean(reg_task):
    # The exact-y population risk must agree with the plain mean loss on fresh (x, y)
    # within a 99.9% two-sample CLT bound.
    model = lambda x: 0.5 * reg_task.mean(x)  # noqa: E731
    R, se = population_risk(model, reg_task, 50000, seed=5)
    x, y = reg_task.sample(50000, seed=6)
    losses = ((model(x) - y) ** 2).numpy().ravel()
    se2 = losses.std(ddof=1) / math.sqrt(losses.size)
    assert abs(R - losses.mean()) <= 3.29 * math.hypot(se, se2)
    # a plausible bug -- forgetting the noise variance in E_y (f - y)^2 -- must fail the same check
    x_pop = reg_task.sample_x(50000, seed=5)
    R_wrong = float(((model(x_pop) - reg_task.mean(x_pop)) ** 2).mean())
    assert abs(R_wrong - losses.mean()) > 3.29 * math.hypot(se, se2)


def test_population_risk_difference_is_paired(cls_task):
    a = lambda x: cls_task.net(x)  # noqa: E731
    d, se = population_risk_difference(a, a, cls_task, 1000, seed=0)
    assert d == 0.0 and se == 0.0
    with pytest.raises(ValueError, match="loss == 'squared', must be 'cross_entropy'"):
        population_risk(a, cls_task, 100, seed=0, loss="squared")


@pytest.mark.parametrize("bad,match", [
    (dict(n_classes=1), "n_classes == 1, must be an integer >= 2"),
    (dict(logit_scale=0.0), "logit_scale == 0.0, must be a finite number > 0"),
    (dict(width=0), "width == 0, must be an integer >= 1"),
])
def test_teacher_rejects_bad_arguments(bad, match):
    kw = dict(d_in=2, n_classes=3, depth=1, width=4)
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        TeacherClassification(**kw)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(1, 30), min_size=1, max_size=4), n=st.integers(1, 80))
def test_split_property(sizes, n):
    x, y = np.arange(n), np.arange(n) * 10
    named = {f"part{i}": s for i, s in enumerate(sizes)}
    if sum(sizes) > n:
        with pytest.raises(ValueError, match=rf"== {sum(sizes)} exceeds the {n} samples"):
            split(x, y, named)
        return
    parts = split(x, y, named, seed=1)
    seen = np.concatenate([parts[k][0] for k in named])
    assert len(np.unique(seen)) == len(seen) == sum(sizes)  # disjoint
    for k, s in named.items():
        assert len(parts[k][0]) == s and np.array_equal(parts[k][1], parts[k][0] * 10)  # pairs kept


def test_digits_split_and_too_small():
    parts = load_digits_split(M=500, K=300, population=900, seed=0)
    assert parts["M"][0].shape == (500, 64) and parts["M"][0].dtype == torch.float64
    assert float(parts["K"][0].max()) <= 1.0
    with pytest.raises(ValueError, match=r"M \+ K \+ population == 2000 exceeds the 1797 samples of digits"):
        load_digits_split(M=1000, K=500, population=500)


def _write_cifar(folder, which, n_per_batch=4):
    rng = np.random.default_rng(0)
    names = ([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]) if which == 10 else ["train", "test"]
    key = b"labels" if which == 10 else b"fine_labels"
    written = {}
    for name in names:
        data = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, which, size=n_per_batch).tolist()
        with open(folder / name, "wb") as fh:
            pickle.dump({b"data": data, key: labels, b"batch_label": b"x"}, fh)
        written[name] = (data, labels)
    return written


@pytest.mark.parametrize("which", [10, 100])
def test_load_cifar_roundtrip(tmp_path, which):
    written = _write_cifar(tmp_path, which)
    out = load_cifar(tmp_path, which=which)
    n_train = 20 if which == 10 else 4
    x, y = out["train"]
    assert x.shape == (n_train, 3, 32, 32) and y.shape == (n_train,)
    first = "data_batch_1" if which == 10 else "train"
    np.testing.assert_array_equal((x[0] * 255).round().numpy().astype(np.uint8).reshape(-1), written[first][0][0])
    assert y[0].item() == written[first][1][0]
    assert out["test"][0].shape == (4, 3, 32, 32)


def test_load_cifar_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="lacks .*data_batch_1"):
        load_cifar(tmp_path, which=10)
    with pytest.raises(ValueError, match=r"which == 20, must be one of \[10, 100\]"):
        load_cifar(tmp_path, which=20)


def test_streamed_sample_equals_the_one_shot_sample():
    from numerics.data import TeacherClassification, TeacherRegression

    for task in (TeacherRegression(3, 2, 4, seed=0), TeacherClassification(3, 3, 1, 4, seed=0)):
        x, y = task.sample(150_000, 5)
        xs, ys = zip(*task.sample_chunks(150_000, 5))
        assert len(xs) == 3 and torch.equal(x, torch.cat(xs)) and torch.equal(y, torch.cat(ys))
        x2, _ = task.sample(1000, 6)
        assert not torch.equal(x[:1000], x2)


def test_label_noise_accepts_63_bit_role_seeds():
    from numerics.data import TeacherRegression
    from numerics.seeding import Streams

    task = TeacherRegression(3, 1, 2, seed=0, noise_std=0.1, noise_clip=2.0)
    x, y = task.sample(10, Streams(1, 2).seed_for("S"))      # a 63-bit seed: no overflow
    assert y.shape == (10, 1) and bool(y.abs().max() <= task.target_bound)


# ---- issue 39, item 0: a CIFAR batch is data, never code -------------------------------------------------------

class _Payload:
    """Unpickled by plain ``pickle.load``, this creates ``marker`` (what a crafted batch file could do)."""

    def __init__(self, marker, how):
        self.marker, self.how = str(marker), how

    def __reduce__(self):
        import os

        if self.how == "open":
            return open, (self.marker, "w")
        return os.system, (f"touch '{self.marker}'",)


def _crafted_cifar(folder, marker, how="open", protocol=2, where="data"):
    """A CIFAR-10 folder whose first batch carries ``_Payload`` (in ``b'data'``, or as the whole batch)."""
    _write_cifar(folder, 10)
    batch = {b"data": _Payload(marker, how), b"labels": [0] * 4} if where == "data" else _Payload(marker, how)
    (folder / "data_batch_1").write_bytes(pickle.dumps(batch, protocol=protocol))


@pytest.mark.parametrize("how", ["open", "system"])
@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
@pytest.mark.parametrize("where", ["data", "whole"])
def test_load_cifar_refuses_a_pickle_that_would_run_code(tmp_path, how, protocol, where):
    from numerics.data import UnsafePickleError

    folder, marker = tmp_path / "cifar", tmp_path / "marker"
    folder.mkdir()
    _crafted_cifar(folder, marker, how, protocol, where)
    with pytest.raises(UnsafePickleError) as exc:
        load_cifar(folder, which=10)
    assert not marker.exists()
    msg = str(exc.value)
    assert str(folder / "data_batch_1") in msg and ("open" in msg or "system" in msg) and "\n" not in msg


@pytest.mark.parametrize("protocol", [0, 2, 3, 4, pickle.HIGHEST_PROTOCOL])
def test_load_cifar_reads_genuine_batches_at_every_protocol(tmp_path, protocol):
    """What CIFAR batches hold -- bytes (empty too), str, ints, numpy uint8 arrays, numpy int labels -- still loads."""
    rng = np.random.default_rng(1)
    data = {n: rng.integers(0, 256, size=(3, 3072), dtype=np.uint8) for n in ["train", "test"]}
    labels = {"train": [1, 2, 99], "test": np.array([0, 5, 7]).tolist()}
    for n in data:
        batch = {b"data": data[n], b"fine_labels": labels[n], b"coarse_labels": list(np.arange(3, dtype=np.int64)),
                 b"batch_label": b"", b"filenames": [b"a.png", "b.png"]}
        (tmp_path / n).write_bytes(pickle.dumps(batch, protocol=protocol))
    out = load_cifar(tmp_path, which=100)
    for n in data:
        x, y = out[n]
        np.testing.assert_array_equal((x * 255).round().numpy().astype(np.uint8).reshape(3, -1), data[n])
        assert y.tolist() == labels[n]


def test_load_cifar_reads_numpy_1_module_names(tmp_path):
    """Batches pickled by numpy 1.x (the published CIFAR files) name ``numpy.core.multiarray``."""
    _write_cifar(tmp_path, 100)
    data = np.arange(3072, dtype=np.uint8).reshape(1, 3072)
    raw = pickle.dumps({b"data": data, b"fine_labels": [3]}, protocol=2)
    assert b"numpy._core.multiarray" in raw
    (tmp_path / "train").write_bytes(raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))
    x, y = load_cifar(tmp_path, which=100)["train"]
    np.testing.assert_array_equal((x * 255).round().numpy().astype(np.uint8).reshape(1, -1), data)
    assert y.tolist() == [3]


def test_load_cifar_refuses_object_arrays_and_names_corrupt_batches(tmp_path):
    from plumbing.validation import InputError

    _write_cifar(tmp_path, 100)
    (tmp_path / "train").write_bytes(pickle.dumps({b"data": np.array([None] * 3072, dtype=object), b"fine_labels": [0]}))
    with pytest.raises(InputError, match=r"train.*unreadable.*Python objects"):
        load_cifar(tmp_path, which=100)
    (tmp_path / "train").write_bytes(pickle.dumps({b"data": np.zeros((1, 3072), np.uint8), b"fine_labels": [0]})[:-9])
    with pytest.raises(InputError, match=r"train.*unreadable"):
        load_cifar(tmp_path, which=100)
    (tmp_path / "train").write_bytes(pickle.dumps({b"labels": [0]}))
    with pytest.raises(InputError, match=r"train.*b'data'"):
        load_cifar(tmp_path, which=100)
