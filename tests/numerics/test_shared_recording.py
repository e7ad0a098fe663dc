"""One recording forward for every site (``numerics._replay.record_together``, ``site_losses``).

Expected values come from full forwards (``replay=False``) and from one fresh recording per site
(``site_loss``), never from the shared path itself.
"""
import warnings

import pytest
import torch

from numerics._replay import SiteReplay, record_together
from numerics.estimators import curvature_along, site_loss, site_losses
from tests.numerics.test_scan_speed_paths import Net, _setup

SITES = ("blocks.0", "blocks.1", "blocks.2")


def _blocks(block):
    return {s: block for s in SITES}


def test_site_losses_equal_one_recording_per_site_and_full_forwards_with_one_stem_call_per_batch():
    net, x, y, block, D = _setup()
    calls = {"n": 0}
    orig = net.stem.forward

    def counting(*a):
        calls["n"] += 1
        return orig(*a)
    net.stem.forward = counting
    shared = site_losses(net, _blocks(block), x, y, "cross_entropy", batch_size=16)
    del net.stem.forward
    assert calls["n"] == 3   # 3 batches, one recording forward each, for the 3 sites together
    for s in SITES:
        rep, R0 = shared[s]
        assert R0 == pytest.approx(site_loss(net, s, block, x, y, "cross_entropy", batch_size=16), rel=1e-13)
        assert R0 == pytest.approx(site_loss(net, s, block, x, y, "cross_entropy", batch_size=16, replay=False), rel=1e-13)
        assert all(rep.replayed((i, min(i + 16, 40))) for i in range(0, 40, 16))
        # the shared recording replays the same numbers as full forwards
        a = curvature_along(net, s, block, x, y, D, D, "cross_entropy", batch_size=16, replay=rep)
        b = curvature_along(net, s, block, x, y, D, D, "cross_entropy", batch_size=16, replay=False)
        assert [a[0].beta, *a[1:]] == pytest.approx([b[0].beta, *b[1:]], rel=1e-12, abs=1e-15)


def test_a_model_whose_output_depends_on_the_skipped_part_keeps_no_shared_replay():
    """The check can fail: every site's replayed forward differs from the recording, so no replay is kept
    and R(0) is still the full forward's."""
    net, x, y, block, _ = _setup("reads_state")
    shared = site_losses(net, _blocks(block), x, y, "cross_entropy", batch_size=16)
    for s in SITES:
        rep, R0 = shared[s]
        assert not any(rep.replayed((i, min(i + 16, 40))) for i in range(0, 40, 16))
        assert R0 == pytest.approx(site_loss(net, s, block, x, y, "cross_entropy", batch_size=16, replay=False), rel=1e-13)
        assert R0 == site_loss(net, s, block, x, y, "cross_entropy", batch_size=16)   # re-measured by the one-site path


def test_a_module_whose_forward_cannot_be_replaced_falls_back_as_one_sites_recording_does():
    class Fixed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        @property
        def forward(self):   # read-only: the recorder's wrapper cannot be installed
            return self.lin.forward
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), Fixed(), torch.nn.Tanh(), torch.nn.Linear(3, 1)).eval()
    x = torch.randn(4, 2)
    reps = [SiteReplay(net, "0"), SiteReplay(net, "2")]
    with torch.no_grad(), record_together(reps, (0, 4)):
        out = net(x)
    assert not any(r.replayed((0, 4)) for r in reps) and "forward" not in net[0].__dict__
    with torch.no_grad():
        torch.testing.assert_close(net(x), out, rtol=0, atol=0)


def test_a_call_recorded_for_several_sites_is_copied_once_and_an_in_place_change_ends_every_replay_holding_it():
    net, x, _, _, _ = _setup()
    reps, key = [SiteReplay(net, s) for s in ("blocks.0", "blocks.1")], (0, 40)
    with torch.no_grad(), record_together(reps, key):
        a = net(x)
    assert all(r.replayed(key) for r in reps)
    ptr = [{k[0]: v[0].data_ptr() for k, v in r._cache[key].items()} for r in reps]
    assert ptr[0][net.stem] == ptr[1][net.stem] and ptr[0][net.blocks[0]] == ptr[1][net.blocks[0]]   # shared copies
    original = net.blocks[1].forward

    def mutating(h):
        h.mul_(2.0)   # changes blocks.0's recorded output in place: held by both replays
        return original(h / 2.0)
    net.blocks[1].forward = mutating
    with torch.no_grad(), reps[0].forward(key):
        net(x)
    del net.blocks[1].forward
    assert not reps[0].replayed(key)
    with torch.no_grad(), reps[1].forward(key):   # checked before use: runs in full, the right numbers
        torch.testing.assert_close(net(x), a, rtol=0, atol=0)
    assert not reps[1].replayed(key)


def test_replays_of_different_models_or_already_recorded_are_left_alone():
    net, x, _, _, _ = _setup()
    other = Net().double().eval()
    reps = [SiteReplay(net, "blocks.0"), SiteReplay(other, "blocks.0")]
    with torch.no_grad(), record_together(reps, (0, 40)):
        net(x)
    assert not any(r.replayed((0, 40)) for r in reps)
    one = SiteReplay(net, "blocks.1")
    with torch.no_grad(), one.forward((0, 40)):
        net(x)
    stored = one._cache[(0, 40)]
    with torch.no_grad(), record_together([one, SiteReplay(net, "blocks.2")], (0, 40)):
        net(x)
    assert one._cache[(0, 40)] is stored


def test_saturation_reports_are_identical_with_and_without_the_shared_recording(monkeypatch):
    import depthcert as dc
    import numerics.user_network._saturation as sat

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 12), *[torch.nn.Sequential(torch.nn.LayerNorm(12), torch.nn.Linear(12, 12))
                                                        for _ in range(3)], torch.nn.Linear(12, 3)).double()
    x = torch.randn(240, 5, dtype=torch.float64)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()

    def run():
        out = []
        for mode in ("all", "auto"):
            r = dc.saturation(net, (x, y), sites=["1", "2", "3"], curvature=mode)
            out += [r.table().to_dict("records"), r.suggestion_reason, r.best_site]
        return repr(out)
    shared = run()
    monkeypatch.setattr(sat, "_record", lambda *a, **k: None)   # each site records on its own, as before
    assert run() == shared


def _traced_setup():
    """A small network whose middle block is ``torch.jit.trace``d (a ScriptModule inside a plain container)."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4).double()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # torch.jit.trace is deprecated, still used in the wild
        traced = torch.jit.trace(lin, torch.randn(2, 4, dtype=torch.float64))
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), traced, torch.nn.Tanh(),
                              torch.nn.Linear(4, 3)).double().eval()
    plain = torch.nn.Sequential(*[m if m is not traced else lin for m in net]).eval()   # the same weights, untraced
    x, y = torch.randn(40, 3, dtype=torch.float64), torch.randint(0, 3, (40,))
    from numerics.families import ProtocolBlock

    block = ProtocolBlock((4,), ["linear", "affine", "readout"], 3, 1, torch.float64)
    D = torch.randn(4, block.r, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    return net, plain, x, y, block, D


def _untouched(net) -> bool:
    """No module keeps a replay's wrapper (``functools.wraps`` marks it with ``__wrapped__``)."""
    return not any(hasattr(m.forward, "__wrapped__") for m in net.modules())


@pytest.mark.parametrize("site", ["1", "2", "3"])
def test_a_traced_submodule_falls_back_to_full_forwards_with_the_same_numbers(site):
    """A ``torch.jit.trace``d block: installing the replay's ``forward`` went into the compiled module and
    removing it raised AttributeError (leaving the wrapper in place). Now the replay is not installed at all:
    nothing raises, no batch is replayed, the model is left as it was, and R(0) and the curvature equal
    full forwards (``replay=False``) and the untraced network's (whose replay does run)."""
    net, plain, x, y, block, D = _traced_setup()
    shared = site_losses(net, {site: block}, x, y, "cross_entropy", batch_size=16)
    rep, R0 = shared[site]
    assert _untouched(net) and not any(rep.replayed((i, min(i + 16, 40))) for i in range(0, 40, 16))
    assert R0 == pytest.approx(site_loss(net, site, block, x, y, "cross_entropy", batch_size=16, replay=False), rel=1e-13)
    assert R0 == pytest.approx(site_losses(plain, {site: block}, x, y, "cross_entropy", batch_size=16)[site][1], rel=1e-13)
    for method in ("grid", "descent"):
        a = curvature_along(net, site, block, x, y, D, D, "cross_entropy", batch_size=16, replay=rep, method=method)
        b = curvature_along(net, site, block, x, y, D, D, "cross_entropy", batch_size=16, replay=False, method=method)
        c = curvature_along(plain, site, block, x, y, D, D, "cross_entropy", batch_size=16, method=method)
        assert _untouched(net) and not rep.replayed((0, 16))
        assert [a[0].beta, *a[1:]] == pytest.approx([b[0].beta, *b[1:]], rel=1e-12, abs=1e-15)
        assert [a[0].beta, *a[1:]] == pytest.approx([c[0].beta, *c[1:]], rel=1e-9, abs=1e-15)
    rep_plain = SiteReplay(plain, site)   # power: the same check sees a replay where one can run
    site_loss(plain, site, block, x, y, "cross_entropy", batch_size=16, replay=rep_plain)
    assert rep_plain.replayed((0, 16))


def test_record_together_with_a_traced_submodule_records_nothing_and_leaves_the_model_as_it_was():
    net, _, x, _, _, _ = _traced_setup()
    reps = [SiteReplay(net, "1"), SiteReplay(net, "3")]
    with torch.no_grad():
        before = net(x)
    with torch.no_grad(), record_together(reps, (0, 40)):
        out = net(x)
    assert not any(r.replayed((0, 40)) for r in reps) and _untouched(net)
    with torch.no_grad():
        torch.testing.assert_close(net(x), out, rtol=0, atol=0)
        torch.testing.assert_close(out, before, rtol=0, atol=0)
    with torch.no_grad(), reps[0].forward((0, 40)):   # one site's own recording: no replay either, no error
        torch.testing.assert_close(net(x), before, rtol=0, atol=0)
    assert not reps[0].replayed((0, 40)) and _untouched(net)


def test_a_saturation_report_of_a_network_with_a_traced_block_equals_the_untraced_networks():
    """The public call: ``dc.saturation`` on the traced network raised (the replay's uninstall); now its
    table equals that of the same network untraced (replayed), to rounding."""
    import depthcert as dc

    net, plain, _, _, _, _ = _traced_setup()
    x = torch.randn(240, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    a = dc.saturation(net, (x, y), sites=["1", "3"]).table()
    b = dc.saturation(plain, (x, y), sites=["1", "3"]).table()
    assert list(a.columns) == list(b.columns) and _untouched(net)
    for ra, rb in zip(a.to_dict("records"), b.to_dict("records")):
        for k, v in ra.items():
            if isinstance(v, float):
                assert v == pytest.approx(rb[k], rel=1e-8, abs=1e-12, nan_ok=True), k
            else:
                assert v == rb[k], k


def test_a_module_that_keeps_an_assigned_forward_elsewhere_falls_back_too():
    """The general form of the traced case: an assignment to ``forward`` that does not land in the module's
    ``__dict__`` (here: silently kept aside) cannot be undone by deleting it, so no replay is installed."""
    class Aside(torch.nn.Linear):
        def __setattr__(self, name, value):
            if name == "forward":
                self.__dict__.setdefault("aside", []).append(value)
            else:
                super().__setattr__(name, value)
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), Aside(3, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1)).eval()
    x, rep = torch.randn(4, 2), SiteReplay(net, "2")
    with torch.no_grad():
        before = net(x)
        with rep.forward((0, 4)):
            out = net(x)
    assert not rep.replayed((0, 4)) and _untouched(net) and "forward" not in net[0].__dict__
    torch.testing.assert_close(out, before, rtol=0, atol=0)
