"""Issue 26 item 2: never a harmful suggestion, and no reported gain a nonnegative loss cannot have.

On the GroupNorm digits ResNet (``tests/api/_digits_resnet.py``, trained here in memory; the
BatchNorm-eval variant is the slow test) the scan's suggestion, when there is one, does not
raise the test loss beyond its interval; when there is none, ``insert_block`` refuses the
jumpboard with the report's reason unless ``force=True``. A hostile curvature sample (its step
half with permuted labels) must be refused: the check has power.
"""
import math

import pytest
import sympy as sp
import torch
import torch.nn.functional as F

import depthcert as dc
from depthcert.api._suggestion import nonnegative_beta, suggest
from tests.api._digits_resnet import metrics, trained


def test_the_least_curvature_of_a_nonnegative_loss_is_slope_squared_over_twice_the_loss():
    """Theorem 1's quadratic model R0 - s tau + beta tau^2 / 2 stays >= 0 for every tau iff beta >= s^2 / (2 R0)."""
    R0, s, beta, tau = sp.symbols("R0 s beta tau", positive=True)
    q = R0 - s * tau + beta * tau**2 / 2
    tau_star = sp.solve(sp.diff(q, tau), tau)[0]
    assert sp.simplify(tau_star - s / beta) == 0
    minimum = sp.simplify(q.subs(tau, tau_star))
    assert sp.simplify(minimum - (R0 - s**2 / (2 * beta))) == 0
    b_min = sp.solve(sp.Eq(minimum, 0), beta)[0]
    assert sp.simplify(b_min - s**2 / (2 * R0)) == 0
    assert nonnegative_beta(0.0, 2.0, 0.5) == pytest.approx(4.0) and nonnegative_beta(9.0, 2.0, 0.5) == 9.0
    # halved: the model predicts a drop of twice the loss, i.e. a negative loss
    for R, sl in [(0.03, 0.4), (1.0, 3.0), (2.3, 0.01)]:
        b = nonnegative_beta(1e-12, sl, R)
        assert R - sl**2 / (2 * b) >= -1e-12 and R - sl**2 / (2 * (b / 2)) < 0


def test_suggest_refuses_an_interval_reaching_below_zero_and_a_step_that_lowers_nothing():
    fam = {"gain": 0.1, "sd": 1.0, "lo": -0.2, "hi": 0.4, "beta": 1.0, "V_norm": 1.0, "gain_step": 0.3}
    rec = {"site": "b.1", "level": 0.05, "n_gain": 50, "families": {"linear": fam, "readout": {**fam, "gain_step": 0.1,
                                                                                                "lo": 0.05}}}
    s, why = suggest(rec)   # the step sample chose 'linear' (larger gain_step); its interval reaches below zero
    assert s is None and "family 'linear'" in why and "[-0.2, 0.4]" in why
    rec["families"]["linear"]["lo"] = 0.01
    s, why = suggest(rec)
    assert s.family == "linear" and s.lo == 0.01 and why.startswith("suggested")
    flat = {**rec, "families": {"linear": {**fam, "gain_step": 0.0}}}
    assert suggest(flat)[0] is None and "lowers the loss on the step sample" in suggest(flat)[1]
    assert suggest(None)[0] is None


@pytest.fixture(scope="module")
def digits_group():
    return trained("group")


def _test_loss_gain(old, new, xy) -> float:
    x, y = xy
    with torch.no_grad():
        return float(F.cross_entropy(old(x).double(), y) - F.cross_entropy(new(x).double(), y))


def _check_scan(net, data, seed):
    """Returns ``(suggested?, test gain, (lo, hi))`` after asserting the contract on one scan."""
    rep = dc.saturation(net, data["probe"], seed=seed)
    for r in rep.sites:   # no predicted or certified gain above the loss it would lower
        assert r["predicted_gain"] <= r["step_loss"] + 1e-12 and r["certified_gain"] <= r["step_loss"] + 1e-12
    assert rep.predicted_gain <= max(r["step_loss"] for r in rep.sites) + 1e-12
    n_test = data["test"][0].shape[0]
    if rep.suggestion is None:
        assert rep.suggestion_reason.startswith("no suggestion")
        with pytest.raises(dc.RefusedInsertion, match="refused: .*no suggestion") as err:
            dc.insert_block(net, rep.best_site, init="jumpboard", scan=rep)
        assert rep.suggestion_reason in str(err.value)
        fam = max(rep.insertion["families"], key=lambda f: rep.insertion["families"][f]["gain_step"])
        forced = dc.insert_block(net, rep.best_site, family=fam, init="jumpboard", scan=rep, force=True)
        return False, _test_loss_gain(net, forced, data["test"]), rep.gain_interval(fam, n_eval=n_test)
    new = dc.insert_block(net, rep.best_site, init="jumpboard", scan=rep)   # exactly as the README says
    assert rep.to_dict()["suggestion"]["family"] == rep.suggestion.family
    lo, hi = rep.gain_interval(rep.suggestion.family, n_eval=n_test)
    assert rep.suggestion.lo > 0
    return True, _test_loss_gain(net, new, data["test"]), (lo, hi)


def test_on_the_groupnorm_digits_resnet_a_suggestion_never_raises_the_test_loss_beyond_its_interval(digits_group):
    net, data = digits_group
    loss, acc = metrics(net, data["test"])
    assert acc >= 0.975 and loss < 0.1   # the network of the issue: ~99% test accuracy
    for seed in range(3):
        suggested, g, (lo, hi) = _check_scan(net, data, seed)
        print(f"seed {seed}: suggested={suggested} test gain {g:.4g} interval(n_eval) [{lo:.4g}, {hi:.4g}]")
        if suggested:
            assert g >= lo   # one-sided: the loss rises by no more than the interval allows


def test_a_hostile_step_sample_is_refused(digits_group):
    """The probe and the step half of the curvature sample have wrong labels: ``G`` and the jumpboard fit the
    noise, the gain half (true labels) measures harm, and the scan must not suggest it."""
    net, data = digits_group
    x, y = data["probe"]
    g = torch.Generator().manual_seed(3)
    wrong = (y + torch.randint(1, 10, y.shape, generator=g)) % 10   # every label wrong
    xc, yc = x[:200], torch.cat([wrong[:100], y[100:200]])
    rep = dc.saturation(net, (x[200:], wrong[200:]), curvature_data=(xc, yc), curvature_n=200, families=("linear",))
    assert rep.suggestion is None, rep.suggestion
    fam = rep.insertion["families"]["linear"]
    assert fam["gain_step"] > 0 and fam["hi"] < 0   # lowers the noisy half, harms the true half
    with pytest.raises(dc.RefusedInsertion, match="not above zero"):
        dc.insert_block(net, rep.best_site, family="linear", init="jumpboard", scan=rep)
    harmful = dc.insert_block(net, rep.best_site, family="linear", init="jumpboard", scan=rep, force=True)
    assert _test_loss_gain(net, harmful, data["test"]) < 0   # the refused block does raise the test loss


@pytest.mark.slow
def test_on_the_batchnorm_eval_digits_resnet_a_suggestion_never_raises_the_test_loss_beyond_its_interval():
    net, data = trained("batch")
    assert metrics(net, data["test"])[1] >= 0.975
    for seed in range(3):
        suggested, g, (lo, hi) = _check_scan(net, data, seed)
        print(f"batchnorm seed {seed}: suggested={suggested} test gain {g:.4g} [{lo:.4g}, {hi:.4g}]")
        if suggested:
            assert g >= lo and math.isfinite(hi)


def test_on_an_improvable_network_the_suggestion_is_inserted_without_force_and_helps_on_fresh_data():
    """The positive branch: a briefly trained ResCNN whose head is shrunk (under-confident logits, which a
    linear block at the last site fixes); each scan's suggestion is inserted as the README says and its mean
    gain on a fresh sample is >= its interval's lower end."""
    from tests.api._nets import ResCNN, synthetic

    torch.manual_seed(0)
    net = ResCNN(c=8, depth=2).double()
    x, y = synthetic(2000, seed=99)
    opt = torch.optim.Adam(net.parameters(), 1e-2)
    for _ in range(100):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    with torch.no_grad():
        net.head.weight.mul_(0.3)
    net.eval()
    made = 0
    for seed in range(4):
        rep = dc.saturation(net, synthetic(1024, seed=2 * seed), seed=seed, width=8, curvature_n=256)
        if rep.suggestion is None:
            continue
        made += 1
        new = dc.insert_block(net, rep.best_site, init="jumpboard", scan=rep)
        xe, ye = synthetic(2048, seed=2 * seed + 1)
        lo, hi = rep.gain_interval(rep.suggestion.family, n_eval=2048)
        assert lo > 0 or rep.suggestion.lo > 0
        assert _test_loss_gain(net, new, (xe, ye)) >= lo
        assert set(dc.new_parameters(new)) == set(new.state_dict()) - set(net.state_dict())
    assert made >= 3
