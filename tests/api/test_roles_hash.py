"""Disjointness of role samples: distinct rows must hash apart, identical rows must not (issue 29, digits).

scikit-learn's digits (pixels k/16: float64 words with zero low bits) made the FNV-style hash
collide for distinct rows (``signal and S share 2 identical rows``), which refused a user's
disjoint digits splits.
"""
import numpy as np
import pytest
import torch

from depthcert.api._data import as_stream
from depthcert.api._roles import check_disjoint, row_hashes


def test_distinct_digits_rows_hash_apart_and_a_shared_row_is_refused():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.as_tensor(d.data / 16.0, dtype=torch.float64).reshape(-1, 1, 8, 8)
    y = torch.as_tensor(d.target, dtype=torch.int64)
    assert len(np.unique(np.concatenate([d.data, d.target[:, None]], 1), axis=0)) == len(y)   # no duplicate row
    m = torch.nn.Linear(1, 1).double()
    h = row_hashes(as_stream((x, y), "S", m, 256))
    assert len(np.unique(h)) == len(h)
    check_disjoint({"signal": as_stream((x[:900], y[:900]), "signal", m), "S": as_stream((x[900:], y[900:]), "S", m)})
    with pytest.raises(ValueError, match="share 1 identical"):
        check_disjoint({"signal": as_stream((x[:901], y[:901]), "signal", m),
                        "S": as_stream((x[900:], y[900:]), "S", m)})
