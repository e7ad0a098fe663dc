"""``dc.constants`` (issue 26, THEORY §10 "Constants for common heads"): every derived constant is never
exceeded on 10^5 sampled and on adversarial inputs of the map it bounds, and its half is exceeded; the
algebraic steps are checked with sympy; what cannot be derived says why.

Inputs of each map: ``rho`` -- the normalisation's input (any tensor); ``L_top`` and ``kappa`` -- the state
``u`` at the site and a displacement ``h`` (anywhere); ``B`` -- head inputs in the ball of radius ``R`` and
every label; ``rho_phi`` -- states in the ball of radius ``rho``.
"""
import math

import pytest
import sympy as sp
import torch
from torch import nn

import depthcert as dc
from depthcert.api._constants import norm_radius
from numerics.families import ProtocolBlock
from numerics.sites import add_at_site

N_SAMPLED = 100_000
GEN = torch.Generator().manual_seed(26)


class _Block(nn.Module):
    def __init__(self, c, norm):
        super().__init__()
        self.conv1, self.conv2, self.norm = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1), norm

    def forward(self, x):
        return self.norm(x + self.conv2(torch.relu(self.conv1(x))))


class _Tiny(nn.Module):
    """The zoo's 2-D post-norm ResNet at a tiny size (4x4 images, 8 channels, 1 block, GAP, linear head)."""

    def __init__(self, norm="gn", c=8, classes=5):
        super().__init__()
        torch.manual_seed(3)
        self.stem = nn.Conv2d(1, c, 3, padding=1)
        self.blocks = nn.ModuleList([_Block(c, nn.GroupNorm(4, c) if norm == "gn" else nn.BatchNorm2d(c))])
        self.head = nn.Linear(c, classes)
        with torch.no_grad():          # a trained-looking head and norm: gains and shifts away from 1 and 0
            self.head.weight.mul_(8.0), self.head.bias.normal_(0, 1.0, generator=GEN)
            n = self.blocks[0].norm
            n.weight.uniform_(0.3, 2.0, generator=GEN), n.bias.normal_(0, 0.5, generator=GEN)
            if norm == "bn":
                n.running_mean.normal_(0, 1, generator=GEN), n.running_var.uniform_(0.5, 2, generator=GEN)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x.mean(dim=(2, 3)))


def _data(n=16):
    return torch.randn(n, 1, 4, 4, generator=GEN, dtype=torch.float64), torch.randint(0, 5, (n,), generator=GEN)


@pytest.fixture(scope="module")
def tiny():
    net = _Tiny().double().eval()
    return net, dc.constants(net, "blocks.0", _data())


def _tail(net, u):
    """``f_top(u)`` through the real model: the site's state replaced by ``u`` (a batch of dummy inputs)."""
    x = torch.zeros(u.shape[0], 1, 4, 4, dtype=torch.float64)
    with add_at_site(net, "blocks.0", lambda s: u - s):
        return net(x)


# --------------------------------------------------------------------------------------------- sympy


def test_pooling_has_lipschitz_constant_one_over_sqrt_P_symbolically():
    """GAP: ``mean_p u_p = Q u`` with ``Q = (1/P) 1_P^T (x) I_C``; ``Q Q^T = I_C / P`` so ``||Q||_2 = 1/sqrt(P)``."""
    for P, C in ((1, 2), (4, 3), (64, 2)):
        Q = sp.kronecker_product(sp.ones(1, P) / P, sp.eye(C))
        assert sp.simplify(Q * Q.T - sp.eye(C) / P) == sp.zeros(C, C)
    P = sp.Symbol("P", positive=True, integer=True)
    assert sp.simplify(sp.sqrt(P * (1 / P) ** 2) - 1 / sp.sqrt(P)) == 0   # ||(1/P) 1_P|| = 1/sqrt(P)


def test_a_normalised_slice_has_squared_norm_n_v_over_v_plus_eps_symbolically():
    n = 4
    x = sp.symbols(f"x0:{n}", real=True)
    eps = sp.Symbol("eps", nonnegative=True)
    mu = sum(x) / n
    v = sum((t - mu) ** 2 for t in x) / n
    assert sp.simplify(sum((t - mu) ** 2 / (v + eps) for t in x) - n * v / (v + eps)) == 0
    ms = sum(t ** 2 for t in x) / n          # RMSNorm: the mean square
    assert sp.simplify(sum(t ** 2 / (ms + eps) for t in x) - n * ms / (ms + eps)) == 0


def test_cross_entropy_curvature_and_range_symbolically():
    """``H = diag(p) - p p^T``; along a logit direction ``v`` at ``p = (1/2, 1/2, 0)`` the curvature is
    ``(v_0 - v_1)^2 / 4`` (with ``v = W h``: ``((W_0 - W_1) . h)^2 / 4``, the exact kappa's maximiser);
    ``logsumexp(z) - z_y <= log C + max_k (z_k - z_y)``."""
    z = sp.symbols("z0:3", real=True)
    loss = -z[0] + sp.log(sum(sp.exp(t) for t in z))
    H = sp.hessian(loss, z)
    p = [sp.exp(t) / sum(sp.exp(s) for s in z) for t in z]
    assert sp.simplify(H - (sp.diag(*p) - sp.Matrix(p) * sp.Matrix(p).T)) == sp.zeros(3, 3)
    v = sp.Matrix([1, -1, 0])
    at = {z[0]: 0, z[1]: 0}
    curv = sp.limit((v.T * H * v)[0].subs(at), z[2], -sp.oo)
    assert sp.simplify(curv - (v[0] - v[1]) ** 2 / 4) == 0
    d = sp.symbols("d0:3", real=True)        # d_k = z_k - z_y <= M: sum exp(d_k) <= C exp(M)
    M = sp.Symbol("M", real=True)
    gap = sp.log(3) + M - sp.log(sum(sp.exp(t) for t in d))
    assert sp.simplify(gap.subs({t: M for t in d})) == 0                  # equality when every d_k = M


# ------------------------------------------------------------------------------------- Monte Carlo


@pytest.mark.parametrize("norm,shape", [(nn.GroupNorm(4, 8), (8, 4, 4)), (nn.LayerNorm(6), (5, 6)),
                                        (nn.RMSNorm(6), (5, 6))])
def test_norm_radius_is_never_exceeded_and_its_half_is(norm, shape):
    norm = norm.double()
    with torch.no_grad():
        norm.weight.uniform_(0.2, 2.0, generator=GEN)
        if getattr(norm, "bias", None) is not None:
            norm.bias.normal_(0, 0.5, generator=GEN)
    rho = norm_radius(norm, math.prod(shape))
    worst = 0.0
    for _ in range(N_SAMPLED // 10_000):
        x = torch.randn(10_000, *shape, generator=GEN, dtype=torch.float64)
        x = x * torch.rand(10_000, *[1] * len(shape), generator=GEN, dtype=torch.float64) ** 4 * 100  # many scales
        with torch.no_grad():
            worst = max(worst, float(norm(x).flatten(1).norm(dim=1).max()))
    x = torch.randn(64, *shape, generator=GEN, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.05)
    for _ in range(300):                       # adversarial: gradient ascent on ||norm(x)||
        opt.zero_grad()
        (-norm(x).flatten(1).norm(dim=1).sum()).backward()
        opt.step()
    with torch.no_grad():
        adv = float(norm(x).flatten(1).norm(dim=1).max())
    assert max(worst, adv) <= rho * (1 + 1e-12), (worst, adv, rho)
    assert adv > rho / 2, (adv, rho)


def test_L_top_of_a_pooled_linear_head_is_A_over_sqrt_P_never_exceeded_and_attained(tiny):
    net, c = tiny
    A = net.head.weight.detach()
    assert c.L_top == pytest.approx(float(torch.linalg.matrix_norm(A, ord=2)) / math.sqrt(16), rel=1e-10)
    assert c.A_norm == c.L_top
    ratios = []
    for _ in range(N_SAMPLED // 10_000):
        u, v = (torch.randn(10_000, 8, 4, 4, generator=GEN, dtype=torch.float64) for _ in range(2))
        with torch.no_grad():
            ratios.append(((_tail(net, u) - _tail(net, v)).norm(dim=1) / (u - v).flatten(1).norm(dim=1)).max())
    h = torch.randn(1, 8, 4, 4, generator=GEN, dtype=torch.float64)
    for _ in range(50):                        # adversarial: power iteration on J^T J through the model
        h = h / h.norm()
        hh = h.clone().requires_grad_(True)
        out = _tail(net, hh) - _tail(net, torch.zeros_like(hh))
        (g,) = torch.autograd.grad((out ** 2).sum() / 2, hh)
        h = g.detach()
    h = h / h.norm()
    with torch.no_grad():
        adv = float((_tail(net, h) - _tail(net, torch.zeros_like(h))).norm())
    assert max(float(max(ratios)), adv) <= c.L_top * (1 + 1e-9)
    assert adv > c.L_top / 2 and adv == pytest.approx(c.L_top, rel=1e-6)


def _curvature(net, u, h, y):
    """``h^T Hess_u l(f_top(u), y) h / ||h||^2`` per sample (a Hessian-vector product through the model)."""
    u = u.clone().requires_grad_(True)
    loss = nn.functional.cross_entropy(_tail(net, u), y, reduction="sum")
    (g,) = torch.autograd.grad(loss, u, create_graph=True)
    (hv,) = torch.autograd.grad((g * h).sum(), u)
    return (hv * h).flatten(1).sum(1) / (h.flatten(1) ** 2).sum(1)


def test_kappa_is_never_exceeded_and_its_half_is(tiny):
    net, c = tiny
    worst = 0.0
    for _ in range(N_SAMPLED // 5_000):
        u = torch.randn(5_000, 8, 4, 4, generator=GEN, dtype=torch.float64) * 3
        h = torch.randn(5_000, 8, 4, 4, generator=GEN, dtype=torch.float64)
        worst = max(worst, float(_curvature(net, u, h, torch.randint(0, 5, (5_000,), generator=GEN)).max()))
    # adversarial: a tie between the two classes with the farthest rows (z_k = z_j = 0, the others -30), h along
    # the difference of their rows (the exact maximiser of THEORY §10's derivation)
    A, bias = net.head.weight.detach(), net.head.bias.detach()
    dist = torch.cdist(A[None], A[None])[0]
    k, j = divmod(int(dist.argmax()), dist.shape[0])
    target = torch.full((A.shape[0],), -30.0, dtype=torch.float64)
    target[k] = target[j] = 0.0
    m = torch.linalg.pinv(A) @ (target - bias)             # constant over positions: mean_p u_p = m
    u = m[None, :, None, None].expand(1, 8, 4, 4).clone()
    h = (A[k] - A[j])[None, :, None, None].expand(1, 8, 4, 4).clone()
    adv = float(_curvature(net, u, h, torch.tensor([k])).max())
    assert max(worst, adv) <= c.kappa * (1 + 1e-9), (worst, adv, c.kappa)
    assert adv > c.kappa / 2, (adv, c.kappa)
    assert c.kappa <= c.A_norm ** 2 / 2 * (1 + 1e-12)     # THEORY §6b (b)'s constant is never below it


def test_B_at_the_top_is_never_exceeded_on_the_ball_and_its_half_is(tiny):
    net, c = tiny
    R = c.rho + 0.7
    B = c.B_with(0.7)
    worst = 0.0
    for _ in range(N_SAMPLED // 10_000):
        u = torch.randn(10_000, 8, 4, 4, generator=GEN, dtype=torch.float64)
        u = u / u.flatten(1).norm(dim=1)[:, None, None, None] * R * torch.rand(10_000, 1, 1, 1, generator=GEN,
                                                                                dtype=torch.float64) ** 0.1
        with torch.no_grad():
            z = _tail(net, u)
        worst = max(worst, float((torch.logsumexp(z, 1)[:, None] - z).max()))   # every label y
    u = torch.randn(32, 8, 4, 4, generator=GEN, dtype=torch.float64, requires_grad=True)
    y = torch.arange(32) % 5
    opt = torch.optim.Adam([u], lr=0.5)
    for _ in range(200):                                    # adversarial: projected ascent on the loss
        opt.zero_grad()
        (-nn.functional.cross_entropy(_tail(net, u), y, reduction="sum")).backward()
        opt.step()
        with torch.no_grad():
            u.mul_((R / u.flatten(1).norm(dim=1)).clamp(max=1)[:, None, None, None])
    with torch.no_grad():
        adv = float(nn.functional.cross_entropy(_tail(net, u), y, reduction="none").max())
    assert max(worst, adv) <= B, (worst, adv, B)
    assert adv > B / 2, (adv, B)


def test_rho_phi_of_the_readout_features_is_never_exceeded_and_its_half_is(tiny):
    _, c = tiny
    blk = ProtocolBlock((8, 4, 4), ["readout"], width=6, seed=1, dtype=torch.float64).requires_grad_(False)
    bound = c.rho_phi_for(blk)
    U, b = blk.features[0].U.detach(), blk.features[0].b.detach()
    assert bound == pytest.approx(float(torch.linalg.matrix_norm(U, ord=2)) * c.rho + 4 * float(b.norm()))
    worst = 0.0
    for _ in range(N_SAMPLED // 10_000):
        u = torch.randn(10_000, 8, 4, 4, generator=GEN, dtype=torch.float64)
        u = u / u.flatten(1).norm(dim=1)[:, None, None, None] * c.rho
        worst = max(worst, float(blk.phi(u).flatten(1).norm(dim=1).max()))
    _, _, Vh = torch.linalg.svd(U)
    v = Vh[0]                                              # the top right-singular vector at every position
    best = 0.0
    for sign in (1.0, -1.0):
        u = (sign * v)[None, :, None, None].expand(1, 8, 4, 4) * c.rho / 4
        best = max(best, float(blk.phi(u).norm()))
    assert max(worst, best) <= bound * (1 + 1e-12)
    assert best > bound / 2, (best, bound)


# ------------------------------------------------------------------------------------ what is derived


def test_what_cannot_be_derived_says_why():
    net = _Tiny("bn").double().eval()
    c = dc.constants(net, "blocks.0", _data())
    assert c.rho is None and "BatchNorm" in c.why["rho"] and "affine map of its running statistics" in c.why["rho"]
    assert c.L_top is not None                            # the affine tail above is still read off
    assert c.B is None and c.B_with(1.0) is None
    deep = _Tiny("gn").double().eval()
    deep.blocks.append(_Block(8, nn.GroupNorm(4, 8)).double())
    c2 = dc.constants(deep, "blocks.0", _data())
    assert c2.L_top is None and "f_top" in c2.why["L_top"] and c2.kappa is None and "kappa" in c2.why
    assert c2.B is not None and "blocks.1.norm" in c2.table().set_index("constant").loc["B", "derivation"]
    relu_head = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.ReLU(), nn.Linear(4, 2)).double()
    c3 = dc.constants(relu_head, "1", (torch.randn(8, 3, dtype=torch.float64), torch.zeros(8, dtype=torch.long)))
    assert c3.kappa is None and c3.why["kappa"].startswith("ReLU inside f_top")
    assert set(c3.table()["constant"]) == {"B", "L_loss", "L_top", "A_norm", "kappa", "rho", "rho_phi"}
    with pytest.raises(ValueError, match="loss == 'hinge'"):
        dc.constants(net, "blocks.0", _data(), loss="hinge")
    net.train()
    with pytest.raises(ValueError, match="batch-norm"):
        dc.constants(net, "blocks.0", _data())


def test_certify_insertion_takes_the_constants_and_explicit_ones_win(tiny):
    net, c = tiny
    def roles(seed, n=200):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(n, 1, 4, 4, generator=g, dtype=torch.float64), torch.randint(0, 5, (n,), generator=g)
    cert = dc.certify_insertion(net, "blocks.0", roles(1), roles(2), roles(3), constants=c, erm_steps=1)
    if cert.quantities.get("nu_V") is None:
        pytest.skip("no descent direction at this seed")
    assert cert.constants["L_top"] == c.L_top and cert.constants["kappa"] == c.kappa
    blk_bound = cert.quantities["rho_phi"]
    assert cert.constants["B"] == pytest.approx(c.B_with(cert.quantities["nu_V"] * blk_bound))
    given = dc.certify_insertion(net, "blocks.0", roles(1), roles(2), roles(3), constants=c, L_top=7.0, erm_steps=1)
    assert given.constants["L_top"] == 7.0
    with pytest.raises(ValueError, match="derived at site"):
        dc.certify_insertion(net, "stem", roles(1), roles(2), roles(3), constants=c)
