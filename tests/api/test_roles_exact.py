"""Issue 26 item 3: role samples are compared exactly (a hash only pre-filters).

Quantised images (digits, pixel values k/16) made the old 64-bit row hash collide: 300 disjoint
rows were refused as shared. Every collision must now be resolved by comparing the rows, so
(a) disjoint quantised samples are accepted, also when every row pair collides (a constant
hash), (b) rows that differ in one element are accepted and (c) a truly shared row is refused
with its index in both roles -- through the API and the CLI.
"""
import numpy as np
import pytest
import torch

import depthcert.api._roles as roles_mod
from depthcert.api._data import as_stream
from depthcert.api._roles import check_disjoint, row_hashes, shared_rows

M = torch.nn.Linear(1, 1).double()


def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return torch.as_tensor(d.images / 16.0)[:, None], torch.as_tensor(d.target)


def _old_hash(stream) -> np.ndarray:
    """The hash of issue 16 (FNV over 64-bit words without mixing): the one that collided."""
    out = []
    for x, y in stream:
        words = roles_mod._row_words(x, y)
        h = np.full(words.shape[0], np.uint64(0xCBF29CE484222325))
        with np.errstate(over="ignore"):
            for col in words.T:
                h = (h ^ col) * np.uint64(0x100000001B3)
        out.append(h)
    return np.concatenate(out)


def test_disjoint_quantised_digits_are_accepted_and_a_shared_row_is_refused_with_its_indices():
    x, y = _digits()
    S, T = as_stream((x[:300], y[:300]), "S", M), as_stream((x[300:900], y[300:900]), "T", M)
    old = _old_hash(S)
    assert np.unique(old).size < 300                       # the old hash collides on k/16 images ...
    assert np.unique(row_hashes(S)).size == np.unique(roles_mod._row_words(x[:300], y[:300]), axis=0).shape[0]
    check_disjoint({"S": S, "T": T})                       # ... disjoint samples are accepted
    xt, yt = x[300:900].clone(), y[300:900].clone()
    xt[71], yt[71] = x[5], y[5]                            # one row truly shared: S[5] == T[71]
    with pytest.raises(ValueError, match=r"S and T share 1 identical \(x, y\) rows \(e.g. S\[5\] == T\[71\]"):
        check_disjoint({"S": S, "T": as_stream((xt, yt), "T", M)})


def test_every_hash_collision_is_resolved_by_comparing_rows(monkeypatch):
    """A constant hash makes every pair a candidate: only the exact comparison decides."""
    x, y = _digits()
    monkeypatch.setattr(roles_mod, "row_hashes", lambda s: np.zeros(len(s), dtype=np.uint64))
    S, T = as_stream((x[:200], y[:200]), "S", M, 64), as_stream((x[200:500], y[200:500]), "T", M, 64)
    check_disjoint({"S": S, "T": T})
    xt, yt = x[200:500].clone(), y[200:500].clone()
    xt[[10, 250]], yt[[10, 250]] = x[[3, 150]], y[[3, 150]]
    with pytest.raises(ValueError, match=r"share 2 identical .*S\[3\] == T\[10\]"):
        check_disjoint({"S": S, "T": as_stream((xt, yt), "T", M, 64)})


@pytest.mark.parametrize("where", ["x", "y"])
def test_rows_differing_in_one_element_are_not_shared(where):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 17, (50, 1, 8, 8), generator=g).double() / 16
    y = torch.randint(0, 10, (50,), generator=g)
    x2, y2 = x.clone(), y.clone()
    if where == "x":
        x2[:, 0, 7, 7] += 1 / 16                           # one pixel one quantum higher
    else:
        y2 = (y2 + 1) % 10                                 # same image, another label
    a, b = as_stream((x, y), "S", M), as_stream((x2, y2), "T", M)
    ia, ib = shared_rows(a, b, np.zeros(50, np.uint64), np.zeros(50, np.uint64))   # all 2500 pairs compared
    assert ia.size == 0
    check_disjoint({"S": a, "T": b})
    ia, ib = shared_rows(a, a, np.zeros(50, np.uint64), np.zeros(50, np.uint64))
    assert sorted(zip(ia.tolist(), ib.tolist())) == [(i, i) for i in range(50)]   # a row is shared with itself


def test_the_cli_refuses_a_shared_row_with_its_index_and_exit_2(tmp_path, capsys):
    from depthcert.cli import main

    user = tmp_path / "u.py"
    user.write_text('''
import torch
from sklearn.datasets import load_digits
from torch import nn

def factory():
    torch.manual_seed(0)
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 16), nn.Sequential(nn.Linear(16, 16), nn.Tanh()),
                         nn.Linear(16, 10)).double()

def roles():
    d = load_digits()
    x, y = torch.as_tensor(d.images / 16.0)[:, None], torch.as_tensor(d.target)
    T = (torch.cat([x[800:1000], x[7:8]]), torch.cat([y[800:1000], y[7:8]]))
    return {"signal": (x[:600], y[:600]), "S": (x[600:800], y[600:800]), "T": T}
''')
    rc = main(["certify", "--model", f"{user}:factory", "--data", f"{user}:roles", "--site", "2",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "signal and T share 1 identical (x, y) rows (e.g. signal[7] == T[200]" in err
