"""Fixtures shared by the API's certificate tests."""
import pytest
import torch

from tests.api._nets import ResCNN, synthetic


@pytest.fixture(scope="module")
def roles():
    """``(net, signal, S, T)``: a double ResCNN and three disjoint role samples (a test module may define its own)."""
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(1800, length=16)
    return net, (x[:600], y[:600]), (x[600:1200], y[600:1200]), (x[1200:], y[1200:])
