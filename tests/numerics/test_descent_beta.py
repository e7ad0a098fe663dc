"""``curvature_along(..., method="descent")``: the least ``beta`` whose descent inequality holds at its own step.

Expected values come from closed forms (a quadratic loss) or from the inequality evaluated
independently with :func:`numerics.estimators.loss_change`, never from the estimator re-typed.
"""
import math

import pytest
import torch

from numerics.estimators import curvature_along, loss_change
from numerics.families import ProtocolBlock


def _quadratic_setup(seed: int):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Identity(),
                              torch.nn.Linear(4, 2)).double()
    x, y = torch.randn(60, 3, dtype=torch.float64), torch.randn(60, 2, dtype=torch.float64)
    block = ProtocolBlock((4,), ["linear", "affine", "readout"], 3, 0, torch.float64)
    D = torch.randn(4, block.r, dtype=torch.float64)
    return net, x, y, block, D


def _gain_at(net, site, block, D, beta, slope, x, y, loss):
    """``R(0) - R(-(slope / beta) D^)`` measured by inserting the block (an independent path)."""
    V = -(slope / beta) * D / D.norm()
    return loss_change(net, site, block, V.to(block.V.dtype), x, y, loss)


@pytest.mark.parametrize("seed", range(4))
def test_descent_beta_of_a_quadratic_is_its_curvature_or_the_nonnegative_floor(seed):
    """Squared loss before a linear head: R is quadratic along D with curvature
    c = 2 E||A (D^ phi)||^2, so the least beta with R(0) - R(tau) >= slope^2/(2 beta) at
    tau = slope/beta is max(c, slope^2 / (2 R(0))) (the floor every nonnegative loss allows)."""
    net, x, y, block, D = _quadratic_setup(seed)
    est, slope, bound, realised = curvature_along(net, "2", block, x, y, D, D, "squared", method="descent")
    if slope <= 0:   # descend along -D: flip D so that the slope is positive
        D = -D
        est, slope, bound, realised = curvature_along(net, "2", block, x, y, D, D, "squared", method="descent")
    assert slope > 0 and est.iterations <= 7
    with torch.no_grad():
        phi = block.phi(torch.tanh(net[0](x))).squeeze(1)
        c = float(2 * ((phi @ (D / D.norm()).T) @ net[3].weight.T).pow(2).sum(1).mean())
        R0 = float((net(x) - y).pow(2).sum(1).mean())
    assert est.beta == pytest.approx(max(c, slope**2 / (2 * R0)), rel=2e-3) and est.self_consistent
    assert math.isnan(est.curvature_at_zero)
    assert bound == pytest.approx(slope**2 / (2 * est.beta), rel=1e-12)
    assert realised == pytest.approx(_gain_at(net, "2", block, D, est.beta, slope, x, y, "squared"), rel=1e-9)
    assert realised >= bound * (1 - 1e-9)
    # the mutant beta / 2 (when above the floor) breaks the inequality: at twice the step the gain is 0
    if c / 2 > slope**2 / (2 * R0):
        assert _gain_at(net, "2", block, D, est.beta / 2, slope, x, y, "squared") < slope**2 / est.beta - 1e-9


def _ce_setup(seed: int):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16),
                              torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)).double().eval()
    x = torch.randn(200, 5, dtype=torch.float64)
    y = torch.randint(0, 4, (200,))
    block = ProtocolBlock((16,), ["linear", "affine", "readout"], 4, seed, torch.float64)
    return net, x, y, block


@pytest.mark.parametrize("seed", range(5))
def test_descent_beta_on_cross_entropy_meets_theorem_1_at_its_step_and_beta_halved_does_not(seed):
    """A nonlinear top (LayerNorm then a linear head, cross-entropy): when self-consistent, the
    measured gain at tau* = slope/beta is at least slope^2/(2 beta) on the sample (the conclusion
    of Theorem 1, exact by construction), re-measured by inserting the block; the grid estimate's
    beta (the largest curvature on its grid) is not below it by more than the grid can miss."""
    net, x, y, block = _ce_setup(seed)
    G = torch.randn(16, block.r, dtype=torch.float64)
    est, slope, bound, realised = curvature_along(net, "3", block, x, y, G, G, "cross_entropy", method="descent")
    if slope <= 0:
        G = -G
        est, slope, bound, realised = curvature_along(net, "3", block, x, y, G, G, "cross_entropy",
                                                      method="descent")
    assert slope > 0 and est.self_consistent and est.iterations <= 8
    measured = _gain_at(net, "3", block, G, est.beta, slope, x, y, "cross_entropy")
    assert measured == pytest.approx(realised, rel=1e-9, abs=1e-15)
    assert measured >= slope**2 / (2 * est.beta) * (1 - 1e-12)
    grid = curvature_along(net, "3", block, x, y, G, G, "cross_entropy", n_grid=9)[0]
    assert est.beta <= 1.5 * max(grid.beta, slope**2 / (2 * float(
        torch.nn.functional.cross_entropy(net(x), y).detach())))


def test_descent_beta_halved_breaks_the_inequality_somewhere():
    """Power: over the five cross-entropy setups, beta / 2 fails the descent inequality at its own
    (twice as long) step in every one (the check can fail)."""
    fails = 0
    for seed in range(5):
        net, x, y, block = _ce_setup(seed)
        G = torch.randn(16, block.r, dtype=torch.float64)
        est, slope, _, _ = curvature_along(net, "3", block, x, y, G, G, "cross_entropy", method="descent")
        if slope <= 0:
            G = -G
            est, slope, _, _ = curvature_along(net, "3", block, x, y, G, G, "cross_entropy", method="descent")
        half = est.beta / 2
        fails += _gain_at(net, "3", block, G, half, slope, x, y, "cross_entropy") < slope**2 / (2 * half)
    assert fails == 5


def test_method_is_validated():
    net, x, y, block, D = _quadratic_setup(0)
    with pytest.raises(ValueError, match="method == 'newton', must be one of"):
        curvature_along(net, "2", block, x, y, D, D, "squared", method="newton")


def test_site_wide_slopes_equal_each_directions_own_backward():
    """``step_gradients`` (one backward for every site) gives ``G_x``; ``<G_x, D^>`` equals the slope that
    ``curvature_along`` measures by its own backward along ``D`` at the site, and passing it as
    ``known`` gives the same ``beta``; a wrong slope (halved) gives a different one."""
    from depthcert.api._loss import as_loss
    from depthcert.api._scan import step_gradients

    net, x, y, block = _ce_setup(3)
    G_x, R0 = step_gradients(net, x, y, {"3": block}, as_loss("cross_entropy"), batch_size=64)
    D = G_x["3"] + 0.1 * G_x["3"].norm() * torch.randn(16, block.r, dtype=torch.float64)   # a descent direction
    slope_x = float((G_x["3"] * D).sum() / D.norm())
    est, slope, _, _ = curvature_along(net, "3", block, x, y, D, D, "cross_entropy", method="descent")
    assert slope == pytest.approx(slope_x, rel=1e-9, abs=1e-14)
    assert R0 == pytest.approx(float(torch.nn.functional.cross_entropy(net(x), y).detach()), rel=1e-12)
    assert slope > 0
    if True:
        again = curvature_along(net, "3", block, x, y, D, D, "cross_entropy", method="descent", known=(R0, slope_x))[0]
        assert again.beta == pytest.approx(est.beta, rel=1e-9)
        wrong = curvature_along(net, "3", block, x, y, D, D, "cross_entropy", method="descent",
                                known=(R0, slope_x / 2))[0]
        assert wrong.beta != pytest.approx(est.beta, rel=1e-3)


def _curve(R0, s, fn):
    """A closed-form ``at(tau, order)``: ``R(tau) = R0 - s tau + fn(tau)`` (no network)."""
    return lambda tau, order=0: [R0 - s * tau + fn(tau), 0.0, 0.0]


_CURVES = {
    "quadratic": lambda t: 1.5 * t * t,
    "quartic": lambda t: 0.3 * t ** 4,
    "decaying curvature": lambda t: 1.0 * (math.exp(-10 * t) - 1 + 10 * t) / 100,   # c e^{-k tau}, c=1, k=10
    "linear (no curvature)": lambda t: 0.0,
    "concave": lambda t: -0.2 * t * t,
    "cliff": lambda t: 0.0 if t < 0.05 else 50.0,
    "not finite far out": lambda t: 0.5 * t * t if t < 1 else math.inf,
}


@pytest.mark.parametrize("slope", [1.0, 0.1, 1e-5])
@pytest.mark.parametrize("curve", list(_CURVES))
@pytest.mark.parametrize("max_iter", [1, 2, 10])
def test_descent_beta_on_closed_form_curves_holds_where_it_says_it_does(curve, slope, max_iter):
    """Whatever the curve (convex, concave, decaying curvature, a cliff, infinite far out) and
    however few forwards: no crash, at most ``max_iter`` forwards, and when ``self_consistent``
    the returned ``beta`` satisfies the descent inequality at its own step (checked here on the
    closed form); never self-consistent with a beta where it fails."""
    from numerics.estimators._site_scan import _descent_beta

    R0, fn = 2.0, _CURVES[curve]
    calls = []

    def at(tau, order=0):
        calls.append(tau)
        return _curve(R0, slope, fn)(tau, order)

    est = _descent_beta(at, R0, slope, max_iter, 1e-3, 1e-8)
    assert len(calls) == est.iterations <= max_iter and math.isfinite(est.beta) and est.beta > 0
    tau = slope / est.beta
    holds = R0 - (R0 - slope * tau + fn(tau)) >= slope**2 / (2 * est.beta) * (1 - 1e-12)
    if est.self_consistent:
        assert holds and tau in calls
    if curve == "quadratic" and max_iter == 10:
        assert est.self_consistent and est.beta == pytest.approx(3.0, rel=2e-3)
    if curve == "decaying curvature" and max_iter == 10:
        assert est.self_consistent      # no creeping towards the fixed point from below


def test_a_beta_that_breaks_the_inequality_is_never_called_self_consistent():
    """Power of the check above: a mutant that returns its last trial as self-consistent would
    fail it on the quartic with slope 1 (the lowering ends on a failing trial)."""
    from numerics.estimators._site_scan import _descent_beta

    R0, s, fn = 2.0, 1.0, _CURVES["quartic"]
    tried = []

    def at(tau, order=0):
        tried.append(s / tau)
        return _curve(R0, s, fn)(tau, order)

    est = _descent_beta(at, R0, s, 10, 1e-3, 1e-8)
    verdicts = [R0 - (R0 - s * (s / b) + fn(s / b)) >= s**2 / (2 * b) for b in tried]
    closest = min(range(len(tried)), key=lambda i: abs(tried[i] - est.beta))
    assert est.self_consistent and not verdicts[-1] and closest != len(tried) - 1   # the last trial failed ...
    assert verdicts[closest] and tried[closest] == pytest.approx(est.beta, rel=1e-12)   # ... the returned one held


def test_max_iter_is_validated():
    net, x, y, block, D = _quadratic_setup(0)
    with pytest.raises(ValueError, match="max_iter == 0, must be an int >= 1"):
        curvature_along(net, "2", block, x, y, D, D, "squared", method="descent", max_iter=0)


def test_known_slope_in_float32_gives_the_beta_of_the_own_backward():
    """float32: the slope from ``step_gradients`` (another pass, float64 sums) and R(0) measured by the
    evaluator's own path give the beta of a call that measures both itself, to float32 accuracy."""
    from depthcert.api._loss import as_loss
    from depthcert.api._scan import step_gradients

    net, x, y, block = _ce_setup(1)
    net, x = net.float(), x.float()
    block = ProtocolBlock((16,), ["linear", "affine", "readout"], 4, 1, torch.float32)
    G_x, _ = step_gradients(net, x, y, {"3": block}, as_loss("cross_entropy"))
    D = G_x["3"].float()
    own = curvature_along(net, "3", block, x, y, D, D, "cross_entropy", method="descent")
    known = curvature_along(net, "3", block, x, y, D, D, "cross_entropy", method="descent",
                            known=(None, float((G_x["3"] * G_x["3"]).sum() / G_x["3"].norm())))
    assert known[1] == pytest.approx(own[1], rel=1e-5) and own[0].self_consistent and known[0].self_consistent
    assert known[0].beta == pytest.approx(own[0].beta, rel=1e-3)


@pytest.mark.parametrize("floor", [0.0, -1.0, math.nan, math.inf])
@pytest.mark.parametrize("method", ["descent", "grid"])
def test_floor_is_validated(floor, method):
    """``floor`` divides the step (``slope / beta`` with ``beta = floor`` when ``R(0) <= 0`` or ``c(0) == 0``):
    anything but a finite number > 0 is refused in one line naming it, the allowed range and the value."""
    net, x, y, block, D = _quadratic_setup(0)
    with pytest.raises(ValueError, match=rf"^floor == {floor!r}, must be a finite number > 0\.$"):
        curvature_along(net, "2", block, x, y, D, D, "squared", method=method, floor=floor)


def test_a_positive_floor_is_accepted_and_bounds_beta_below():
    """The check can pass: a tiny positive floor is accepted; a floor above the curvature is the beta."""
    net, x, y, block, D = _quadratic_setup(0)
    assert curvature_along(net, "2", block, x, y, D, D, "squared", floor=1e-300)[0].beta > 0
    assert curvature_along(net, "2", block, x, y, D, D, "squared", floor=1e6)[0].beta == 1e6


def _quadratic_holds(beta: float, curvature: float) -> bool:
    """On ``R(tau) = R0 - s tau + (c/2) tau^2``, ``R0 - R(s/beta) >= s^2/(2 beta)`` iff ``beta >= c``
    (``s^2/beta - c s^2/(2 beta^2) >= s^2/(2 beta)``), whatever ``s > 0``: decided in closed form."""
    return beta >= curvature


@pytest.mark.parametrize("slope", [1e-160, 1e-170, 5e-324, math.inf, math.nan, 0.0, -1.0])
def test_no_descent_direction_when_slope_squared_underflows_or_is_not_finite(slope):
    """``slope^2`` under the smallest normal float (a subnormal or 0: the chord is rounding, not curvature),
    infinite or NaN, or ``slope <= 0``: nothing is evaluated and nothing is called self-consistent (before,
    slope 1e-160 gave ``beta = floor = 1e-8`` self-consistent on a quadratic of curvature 3, where the
    descent inequality fails, and 1e-170 divided by zero)."""
    from numerics.estimators._site_scan import _descent_beta

    calls = []

    def at(tau, order=0):
        calls.append(tau)
        return _curve(2.0, slope, _CURVES["quadratic"])(tau, order)

    est = _descent_beta(at, 2.0, slope, 10, 1e-3, 1e-8)
    assert not est.self_consistent and est.iterations == 0 and calls == [] and est.beta == 1e-8
    assert not _quadratic_holds(est.beta, 3.0)   # this beta would be wrong: reporting it consistent is the bug


@pytest.mark.parametrize("R0", [2.0, math.nan, math.inf])
def test_a_loss_at_zero_that_is_not_finite_is_no_descent_direction(R0):
    from numerics.estimators._site_scan import _descent_beta

    est = _descent_beta(lambda tau, order=0: [1.0 - tau + 1.5 * tau * tau, 0.0, 0.0], R0, 1.0, 10, 1e-3, 1e-8)
    assert est.self_consistent == math.isfinite(R0)   # the check can pass: R0 = 2 is searched


@pytest.mark.parametrize("R0, slope", [(0.0, 1.0), (-1.0, 1.0), (-1e6, 1.0), (0.0, 1e-3), (-1.0, 1e-3), (0.0, 1e-150)])
def test_descent_beta_with_a_nonpositive_loss_at_zero_starts_at_the_floor_and_finds_the_curvature(R0, slope):
    """``R0 <= 0`` (a loss that takes negative values; ``slope^2 / (2 R0)`` is no floor there): the search
    starts at ``floor`` and ends near the quadratic's curvature 3: the inequality holds there and fails at
    ``beta / 1.1`` (closed form; the search stops once its next trial is within a factor 1.1)."""
    from numerics.estimators._site_scan import _descent_beta

    est = _descent_beta(lambda tau, order=0: _curve(R0, slope, _CURVES["quadratic"])(tau, order), R0, slope, 20, 1e-3, 1e-8)
    assert est.self_consistent and _quadratic_holds(est.beta, 3.0) and not _quadratic_holds(est.beta / 1.1, 3.0)


@pytest.mark.parametrize("slope", [1e-160, math.inf])
def test_curvature_along_with_a_known_slope_whose_square_is_unusable_measures_from_the_curvature_at_zero(slope):
    """The public path: ``known=(None, 1e-160)`` (a slope whose square is subnormal) gave ``beta == floor``
    self-consistent, and ``known=(None, inf)`` ``beta == inf`` self-consistent; now, as for ``slope <= 0``,
    ``"descent"`` measures as the grid does, from the curvature at 0: on the quadratic loss, its closed-form
    curvature ``c = 2 E||A (D^ phi)||^2`` (constant along the line)."""
    net, x, y, block, D = _quadratic_setup(0)
    est, measured, bound, realised = curvature_along(net, "2", block, x, y, D, D, "squared", method="descent",
                                                     known=(None, slope))
    with torch.no_grad():
        phi = block.phi(torch.tanh(net[0](x))).squeeze(1)
        c = float(2 * ((phi @ (D / D.norm()).T) @ net[3].weight.T).pow(2).sum(1).mean())
    assert est.beta == pytest.approx(c, rel=1e-9) and est.curvature_at_zero == pytest.approx(c, rel=1e-9)
    assert math.isfinite(measured) and measured != slope


@pytest.mark.parametrize("R0", [-1.0, 2.0])
def test_a_promised_gain_that_underflows_is_no_check(R0):
    """slope 1e-150 (its square a normal float) on ``R0 - s tau + (c/2) tau^2`` with ``c = 1e30``: every step
    ``s / beta`` changes nothing in float (``R(tau) == R0``), so the search goes up until the promised gain
    ``s^2 / (2 beta)`` underflows to 0, where ``0 >= 0`` held vacuously: before, ``beta ~ 4e23`` was called
    self-consistent, though the inequality fails there (closed form: it holds iff ``beta >= c``). Now a
    promised gain under the smallest normal float counts as failing: never self-consistent below ``c``."""
    from numerics.estimators._site_scan import _descent_beta

    c, slope = 1e30, 1e-150
    est = _descent_beta(lambda tau, order=0: _curve(R0, slope, lambda t: c / 2 * t * t)(tau, order), R0, slope, 40,
                        1e-3, 1e-8)
    assert not est.self_consistent or _quadratic_holds(est.beta, c)
    assert est.iterations == 40 and not est.self_consistent   # nothing here is resolvable in float64
