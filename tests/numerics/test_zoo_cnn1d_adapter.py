"""The cnn1d head-input adapter: the sure bound ``rho`` on the pooled state, the split, the refusals (issue 16)."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st
from torch import nn

from numerics.zoo_cnn1d import ChannelNorm, ResCNN1d
from numerics.zoo_cnn1d_adapter import HeadInputView, SignalNet, pooled_norm_bound

C, L = 8, 40


def _norm(kind: str, gamma: np.ndarray, beta: np.ndarray, eps: float, dtype) -> nn.Module:
    norm = nn.GroupNorm(2, C, eps=eps) if kind == "group" else ChannelNorm(C, kind, eps=eps)
    with torch.no_grad():
        norm.weight.copy_(torch.as_tensor(gamma))
        if norm.bias is not None:
            norm.bias.copy_(torch.as_tensor(beta))
    return norm.to(dtype)


def _pooled_norms(norm: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """``||mean_l N(x)[:, l]||`` per sample, computed independently in float64 from the module's output."""
    with torch.no_grad():
        return norm(x).double().mean(dim=2).norm(dim=1)


def _adversarial(n: int, scale: float, rng: np.random.Generator) -> np.ndarray:
    """``x[c, l] = ±scale`` constant in ``l``, half of each group (and of all channels) of each sign."""
    signs = np.tile(np.array([1.0, -1.0, 1.0, -1.0]), C // 4)
    rows = np.stack([rng.permutation(signs.reshape(2, -1).T).T.reshape(-1) for _ in range(n)])   # permuted within groups
    return scale * rows[:, :, None] * np.ones((1, 1, L))


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(["group", "layer", "rms"]),
       gamma=st.lists(st.floats(-3, 3, allow_nan=False), min_size=C, max_size=C),
       beta=st.lists(st.floats(-2, 2, allow_nan=False), min_size=C, max_size=C),
       eps=st.sampled_from([0.0, 1e-8, 1e-5, 1.0]),
       log_scale=st.floats(-6, 6), spike=st.floats(0, 1e4), seed=st.integers(0, 2**31 - 1),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_rho_holds_on_adversarial_inputs(kind, gamma, beta, eps, log_scale, spike, seed, dtype):
    """||pool(N(x))|| <= rho for Gaussian, constant-sign, spiked and huge/tiny inputs, any affine parameters."""
    rng = np.random.default_rng(seed)
    norm = _norm(kind, np.array(gamma), np.array(beta), eps, dtype)
    scale = 10.0 ** log_scale
    x = np.concatenate([rng.standard_normal((16, C, L)) * scale, _adversarial(16, scale, rng),
                        _adversarial(4, scale, rng) + rng.standard_normal((4, C, L)) * scale * 1e-3])
    x[:4, 0, 0] += spike * scale                                    # one huge entry
    xt = torch.as_tensor(x, dtype=dtype)
    assert float(_pooled_norms(norm, xt).max()) <= pooled_norm_bound(norm, L)


@pytest.mark.parametrize("kind", ["group", "layer", "rms"])
@pytest.mark.parametrize("gain", [0.3, 1.0, 2.5])
def test_halved_rho_is_violated(kind, gain):
    """The bound is attained (``gamma = gain``, ``beta = 0``, the constant-sign input): rho / 2 fails."""
    norm = _norm(kind, np.full(C, gain), np.zeros(C), 1e-5, torch.float32)
    x = torch.as_tensor(_adversarial(4, 100.0, np.random.default_rng(0)), dtype=torch.float32)
    worst, rho = float(_pooled_norms(norm, x).max()), pooled_norm_bound(norm, L)
    assert worst > rho / 2
    assert worst == pytest.approx(gain * math.sqrt(C), rel=1e-4)      # the derivation's extremal value


def test_rho_refuses_batchnorm():
    with pytest.raises(TypeError, match="BatchNorm1d"):
        pooled_norm_bound(nn.BatchNorm1d(C), L)


def test_head_input_view_splits_the_net():
    net = SignalNet(ResCNN1d(1, C, 2, 10, groups=2, seed=3))
    view = HeadInputView(net, L)
    x = torch.randn(64, L, dtype=torch.float64)
    with torch.no_grad():
        ref = net(x)
    assert torch.allclose(view(x), ref, rtol=1e-5, atol=1e-5)           # float64 head vs the float32 one
    assert view.bottom(x, 2).dtype == torch.float64 and view.bottom(x, 2).shape == (64, C)
    A = net.net.head.weight.detach().double()
    assert view.head_lipschitz_bound() == pytest.approx(float(torch.linalg.matrix_norm(A, ord=2)), rel=1e-12)
    assert float(view.bottom(x, 2).norm(dim=1).max()) <= view.rho(2)
    for bad in (0, 1, 3, -1):
        with pytest.raises(ValueError, match="head input"):
            view.bottom(x, bad)


_BASE = """
seed = 0
data_seed = 1
[task]
kind = "{task}"
[model]
kind = "cnn1d"
width = 8
depth = 1
norm = "group"
groups = {groups}
[reference]
n = 200
steps = 2
[insertion]
at = {at}
family = "{family}"
[sizes]
M = 200
K = 200
population = 200
"""


@pytest.mark.parametrize("task, at, family, groups, key", [
    ("mnist1d", 0, "readout", 2, "insertion.at"),
    ("mnist1d", 1, "readout", 2, "insertion.at"),
    ("mnist1d", -1, "full", 2, "insertion.family"),
    ("regression", -1, "readout", 2, "task.kind"),
    ("mnist1d", -1, "readout", 3, "model.groups"),
])
def test_refusals_exit_2_one_line(tmp_path, capsys, task, at, family, groups, key):
    """``depthcert run`` (in process: the CLI's own ``main``) refuses with exit 2 and one line naming the key."""
    from depthcert.cli import main

    path = tmp_path / "c.toml"
    path.write_text(_BASE.format(task=task, at=at, family=family, groups=groups))
    assert main(["run", "--config", str(path), "--out", str(tmp_path / "o")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"error: {key} ==" in lines[0], lines


@pytest.mark.slow
def test_refusal_as_a_process(tmp_path):
    """The same refusal through ``python -m depthcert``: exit 2, one line, no traceback."""
    path = tmp_path / "c.toml"
    path.write_text(_BASE.format(task="mnist1d", at=0, family="readout", groups=2))
    out = subprocess.run([sys.executable, "-m", "depthcert", "run", "--config", str(path), "--out", str(tmp_path / "o")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "insertion.at == 0" in out.stderr


def test_mlp_refuses_group_norm_and_float32():
    from plumbing.validation import InputError
    from numerics.studies.run import validate_config

    with pytest.raises(InputError, match="model.norm"):
        validate_config({"task": {"kind": "mnist1d"}, "model": {"norm": "group"}})
    with pytest.raises(InputError, match="model.dtype"):
        validate_config({"task": {"kind": "mnist1d"}, "model": {"dtype": "float32"}})


def test_rho_extremal_value_symbolically():
    """The derivation's extremal input (``±a`` constant in ``l``, half of each group of each sign, ``gamma = g``,
    ``beta = 0``): ``||p||^2 = g^2 C a^2 / (a^2 + eps)``, below the bound ``g^2 C`` for every ``eps >= 0`` and
    tending to it as ``eps -> 0`` (so no constant below ``g sqrt(C)`` holds)."""
    a, eps, g, c = sp.symbols("a eps g C", positive=True)
    xh = a / sp.sqrt(a**2 + eps)                       # each entry after the norm: (x - 0) / sqrt(var + eps), var = a^2
    pooled_sq = c * (g * xh) ** 2                      # C channels, each pooled to ±g xh
    assert sp.simplify(g**2 * c - pooled_sq - g**2 * c * eps / (a**2 + eps)) == 0   # the gap is >= 0
    assert sp.limit(pooled_sq, eps, 0) == g**2 * c
