"""Fixtures shared by the numerics tests."""
import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny tensors: one intra-op thread avoids OpenMP contention on a loaded 2-core box."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)
