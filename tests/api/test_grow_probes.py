"""``dc.grow``: a fresh probe fold per step (no probe sample serves two steps) and batch-norm in
train mode refused with the same reason as ``dc.saturation``."""
import pytest
import torch

import depthcert as dc
from depthcert.api import _growth
from tests.api._nets import ResCNN, synthetic
from tests.api.test_data_and_inputs import BNNet

KW = dict(width=4, batch_size=64, curvature_n=32)


def _rows(stream) -> set:
    return {tuple(r) for x, _ in stream for r in x.reshape(x.shape[0], -1).tolist()}


def test_every_growth_step_scans_its_own_disjoint_probe_fold(monkeypatch):
    seen = []
    real = _growth.saturation

    def spy(net, data, *a, **kw):
        seen.append(_rows(data))
        return real(net, data, *a, **kw)

    monkeypatch.setattr(_growth, "saturation", spy)
    torch.manual_seed(0)
    net = ResCNN(c=8, depth=1).double()
    x, y = synthetic(900, length=12)
    g = dc.grow(net, train=(x[600:], y[600:]), probe=(x[:600], y[:600]), max_blocks=2, steps=2, **KW)
    assert len(seen) == len(g.trajectory) == 3 and g.stop == "max_blocks"
    for i in range(3):
        for j in range(i + 1, 3):
            assert not seen[i] & seen[j], f"steps {i} and {j} share probe samples"
    assert list(g.trajectory["probe_from"]) == [0, 200, 400] and list(g.trajectory["probe_to"]) == [200, 400, 600]
    assert sum(len(s) for s in seen) == 600 and "its own fold" in g.notes[0]


def test_grow_needs_a_probe_large_enough_for_its_folds():
    net = ResCNN(c=8, depth=1).double()
    x, y = synthetic(40, length=12)
    with pytest.raises(ValueError, match=r"probe has 20 samples, must have >= 32 \(max_blocks \+ 1 == 4"):
        dc.grow(net, train=(x, y), probe=(x[:20], y[:20]), max_blocks=3, **KW)


def test_grow_refuses_batchnorm_in_train_mode_as_saturation_does():
    torch.manual_seed(0)
    net = BNNet().double()
    x = torch.randn(512, 4, dtype=torch.float64)
    y = (x[:, 0] > 0).long()
    with pytest.raises(ValueError) as sat_err:
        dc.saturation(net, (x, y), **KW)
    with pytest.raises(ValueError) as grow_err:
        dc.grow(net, train=(x, y), probe=(x, y), max_blocks=1, steps=1, **KW)
    assert str(grow_err.value) == str(sat_err.value) and "train mode" in str(grow_err.value)
    assert net.training   # refused before any copy or eval()
    g = dc.grow(net.eval(), train=(x, y), probe=(x, y), max_blocks=0, steps=0, sites="blocks.*", **KW)
    assert len(g.trajectory) == 1


def test_a_fold_too_small_for_the_scan_names_the_fold_and_what_to_change():
    """The scan's sample-size error inside grow names the fold it got (a user gave the whole probe)."""
    import pytest

    import depthcert as dc
    from tests.cli import _tiny_user

    data = _tiny_user.data()
    with pytest.raises(ValueError, match=r"growth step 0 scans probe\[0:40\], its own fold .*4 disjoint folds\): "
                                         r"data has 40 samples.*smaller max_blocks"):
        dc.grow(_tiny_user.model(), data["train"], data["probe"], max_blocks=3, steps=1)
    assert len(dc.grow(_tiny_user.model(), data["train"], data["probe"], max_blocks=2, steps=1).trajectory) >= 1
