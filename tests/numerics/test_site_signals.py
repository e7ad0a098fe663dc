"""Per-site first-order signals of the probe diagnostics (numerics.diagnostics.site_signals)."""
import itertools

import numpy as np
import pytest
import torch

from numerics.data import TeacherRegression
from numerics.diagnostics import site_signals
from numerics.estimators import activation_gradients, first_order_scan
from numerics.insertion import insert_block
from numerics.models import PostNormResMLP


@pytest.fixture(scope="module")
def setup():
    task = TeacherRegression(3, 2, 3, seed=0)
    net = PostNormResMLP(3, 5, 3, 1, seed=1).eval()
    block = insert_block(net, net.depth, "readout", width=4, seed=2).block
    x, y = task.sample(60, seed=3)
    pts = range(net.depth + 1)
    ms = activation_gradients(net, x, y, pts, task.loss)
    m_bars = activation_gradients(net, x, task.soft_targets(x), pts, task.loss)
    return net, block, x, task, ms, m_bars


def test_site_signals_match_first_order_scan(setup):
    net, block, x, task, ms, m_bars = setup
    out = site_signals(net, block, x, ms, m_bars)
    scan = first_order_scan(net, x, task.soft_targets(x), {l: block for l in range(net.depth + 1)}, task.loss)
    np.testing.assert_allclose(out["G_norm"], [float(scan["G"][l].norm()) for l in range(net.depth + 1)],
                               rtol=1e-10)
    assert out["s_max"] == max(out["G_norm"]) and out["G_norm"][out["argmax"]] == out["s_max"]


def test_stderr_and_ustat_against_explicit_outer_products(setup):
    net, block, x, task, ms, m_bars = setup
    out = site_signals(net, block, x, ms, m_bars)
    with torch.no_grad():
        _, states = net.forward_collect(x, range(net.depth + 1))
    for l in range(net.depth + 1):
        X = torch.einsum("nd,nr->ndr", m_bars[l], block.features(states[l].detach())).reshape(x.shape[0], -1)
        X = X.numpy()
        n = X.shape[0]
        stderr = np.sqrt(np.sum(np.var(X, axis=0, ddof=1)) / n)          # naive: per-entry variances
        pairs = sum(X[i] @ X[j] for i, j in itertools.permutations(range(n), 2)) / (n * (n - 1))
        assert out["G_norm_stderr"][l] == pytest.approx(stderr, rel=1e-9)
        assert out["G_sq_ustat"][l] == pytest.approx(pairs, rel=1e-9, abs=1e-15)


def test_wrong_site_features_change_the_signal(setup):
    """The signal depends on the site's state: feeding the top state everywhere must differ."""
    net, block, x, task, ms, m_bars = setup
    out = site_signals(net, block, x, ms, m_bars)
    top_only = {l: m_bars[net.depth] for l in range(net.depth + 1)}
    other = site_signals(net, block, x, ms, top_only)
    assert not np.allclose(out["G_norm"][:-1], other["G_norm"][:-1])
