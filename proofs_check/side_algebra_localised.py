"""Side algebra of the localised certificates (THEORY §6b, **Choice**), checked with sympy.

Each check reads its expression from :mod:`bounds.localised` (the default argument) and
compares it with an independent derivation: a tail equation solved or shown to hold at
the stated deviation, Maurer--Pontil's ``[0, 1]`` statement rescaled to an interval of
length ``2 r_d``, Pinelis' and Tropp's Bernstein tails, Maurer's contraction, and the
exact expansions of the squared loss at the top. Each takes the expression under test as
an argument so that a test can feed it a wrong one (a halved constant must FAIL).
"""
from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from bounds import _symbols as s
from bounds import localised as loc
from proofs_check._algebra import is_zero as _zero
from proofs_check._algebra import timed as _timed
from proofs_check._algebra import witness_point as _point
from proofs_check._tails import maurer_pontil_unit

_lvl, _c = sp.Symbol("level_i", positive=True), sp.Symbol("copies", positive=True)
_r = sp.Symbol("r_d", positive=True)           # r_d, for the interval [-r_d, r_d] of length 2 r_d
_V = sp.Symbol("V", nonnegative=True)


@_timed("localised/hoeffding_difference", "sympy")
def check_hoeffding_difference(deviation: sp.Expr | None = None):
    """``t = 2 r_d sqrt(ln(c/l)/(2n))`` is the positive root of ``c exp(-2 n t^2 / (2 r_d)^2) = l``."""
    dev = loc.hoeffding_difference(s.n, _lvl, _c, 2 * _r) if deviation is None else deviation
    x = sp.Symbol("x", positive=True)
    roots = sp.solve(sp.Eq(_c * sp.exp(-2 * s.n * x**2 / (2 * _r) ** 2), _lvl), x)
    if len(roots) != 1 or not _zero(roots[0] - dev):
        return "FAIL", f"roots {roots} of c exp(-2n t^2/(2 r_d)^2) = level, recorded {dev}", _point(roots[0] - dev)
    return "PASS", f"t = {dev} solves c exp(-2 n t^2/(2 r_d)^2) = level", None


@_timed("localised/bernstein_difference_14_over_3", "sympy")
def check_bernstein_difference(deviation: sp.Expr | None = None):
    """Maurer--Pontil on ``(d + r_d)/(2 r_d) in [0, 1]``: ``2 r_d`` times the unit statement (range term 14 r_d/3)."""
    dev = loc.bernstein_difference(s.n, _V, _lvl, _c, 2 * _r) if deviation is None else deviation
    ref = 2 * _r * maurer_pontil_unit(_V / (2 * _r) ** 2, s.n, _lvl / _c)
    coeff = sp.simplify(sp.diff(dev.subs(_V, 0), _r) * 3 * (s.n - 1) / sp.log(2 * _c / _lvl))
    if not _zero(dev - ref) or coeff != 14:
        return "FAIL", f"{dev} != 2 r_d MP09 Thm 4 at V/(2 r_d)^2 (range coefficient {coeff}, must be 14/3)", _point(
            dev - ref)
    return "PASS", "sqrt(2 V L/n) + 14 r_d L/(3(n-1)), L = ln(2c/level): MP09 Thm 4 on an interval of 2 r_d", None


@_timed("localised/sure_uniform_mcdiarmid", "sympy")
def check_sure_uniform(uniform: sp.Expr | None = None):
    """(a): ``2 sqrt(2) L_loss L_top rad_M`` + McDiarmid with bounded differences ``2 r_d / M``; the contraction
    term is ``2 sqrt(2d) L_loss L_top nu rho_phi / sqrt(M)``, at least THEORY's ``2 sqrt(2d) r_d / sqrt(M)``."""
    expr = loc.sure_uniform(_lvl, _c, 2 * _r) if uniform is None else uniform
    rad = s.nu_V * sp.sqrt(s.d) * s.rho_phi / sp.sqrt(s.M)
    contraction = 2 * sp.sqrt(2) * s.L_loss * s.L_top * loc.rad_M
    conf = expr - contraction
    tail = sp.exp(-2 * conf**2 / (s.M * (2 * _r / s.M) ** 2)) - _lvl / _c
    theirs = 2 * sp.sqrt(2 * s.d) * s.L_loss * s.L_top * s.nu_V * s.rho_phi / sp.sqrt(s.M)
    closed = contraction.subs(loc.rad_M, rad) - theirs
    if not _zero(tail) or not _zero(closed) or not _zero(sp.diff(conf, _r) - conf / _r):
        return "FAIL", f"{expr} is not 2 Rad + the McDiarmid deviation (bounded differences 2 r_d/M)", _point(tail)
    return "PASS", ("U_S(a) = 2 sqrt(2d) L_loss L_top nu rho_phi/sqrt(M) + 2 r_d sqrt(ln(c/level)/(2M)); THEORY's "
                    "r_d (2 sqrt(2d) + ...) only when r_d = L_loss L_top nu rho_phi < B"), None


@_timed("localised/e_G_pinelis_bernstein", "sympy")
def check_e_G(e: sp.Expr | None = None):
    """At ``e = e_G``, ``M e^2 - 2 L (sigma^2 + a e/3)`` with ``a = 2 b_xi`` is ``M x y >= 0``: the tail
    ``2 exp(-M e^2/(2(sigma^2 + a e/3)))`` is at most ``delta``; and Bennett's ``h(u) >= u^2/(2(1 + u/3))``."""
    e = loc.e_G(_lvl, _c) if e is None else e
    L = sp.log(2 * _c / _lvl)
    x, y = 4 * loc.b_xi * L / (3 * s.M), sp.sqrt(2 * loc.sigma2_ub * L / s.M)
    gap = sp.expand(s.M * e**2 - 2 * L * (loc.sigma2_ub + 2 * loc.b_xi * e / 3) - s.M * x * y)
    u = sp.Symbol("u", nonnegative=True)
    g = (1 + u) * sp.log(1 + u) - u - u**2 / (2 * (1 + u / 3))
    num = sp.Poly(sp.numer(sp.together(sp.diff(g, u, 2))), u)
    bennett = g.subs(u, 0) == 0 and sp.diff(g, u).subs(u, 0) == 0 and all(c >= 0 for c in num.all_coeffs())
    if not _zero(gap) or not bennett:
        return "FAIL", f"at e = {e}: M e^2 - 2L(sigma^2 + 2 b e/3) - M x y = {sp.simplify(gap)}, not 0", _point(gap)
    return "PASS", ("e_G = 4 b_xi L/(3M) + sqrt(2 sigma^2 L/M) satisfies Pinelis' Bernstein tail (a = 2 b_xi) with "
                    "slack M x y >= 0; Bennett -> Bernstein: g(0) = g'(0) = 0, g'' numerator u^3 + 9u^2"), None


@_timed("localised/sigma2_upper_bound", "sympy")
def check_sigma2_upper(bound: sp.Expr | None = None):
    """``sigma^2``'s bound: MP09 Thm 4 for ``||xi||^2 in [0, b_xi^2]``: ``b_xi^2`` times the unit statement."""
    mean = sp.Symbol("mean", nonnegative=True)
    bound = loc.sigma2_upper_expression(s.n, mean, _V, _lvl) if bound is None else bound
    w = sp.Symbol("w", positive=True)
    ref = mean + (w * maurer_pontil_unit(_V / w**2, s.n, _lvl)).subs(w, loc.b_xi**2)
    if not _zero(sp.expand(bound - ref)):
        return "FAIL", f"{bound} != mean + b_xi^2 MP09 Thm 4 at V/b_xi^4", _point(bound - ref)
    return "PASS", "mean + sqrt(2 V ln(2/d)/n) + 7 b_xi^2 ln(2/d)/(3(n-1)) (values in [0, b_xi^2])", None


@_timed("localised/trace_upper_bound", "sympy")
def check_trace_upper(bound: sp.Expr | None = None):
    """``E||phi||^2``'s bound: MP09 Thm 4 for ``||phi||^2 in [0, rho_phi^2]``: ``rho_phi^2`` times the unit statement."""
    mean = sp.Symbol("mean", nonnegative=True)
    bound = loc.trace_upper_expression(s.n, mean, _V, _lvl) if bound is None else bound
    w = sp.Symbol("w", positive=True)
    ref = mean + (w * maurer_pontil_unit(_V / w**2, s.n, _lvl)).subs(w, s.rho_phi**2)
    if not _zero(sp.expand(bound - ref)):
        return "FAIL", f"{bound} != mean + rho_phi^2 MP09 Thm 4 at V/rho_phi^4", _point(bound - ref)
    return "PASS", "mean + sqrt(2 V ln(2/d)/n) + 7 rho_phi^2 ln(2/d)/(3(n-1)) (values in [0, rho_phi^2])", None


def _centring_identity() -> bool:
    """``E||xi - E xi||^2 = E||xi||^2 - ||E xi||^2`` for a symbolic two-point law on R^2 (weights ``p, 1 - p``)."""
    p = sp.Symbol("p", positive=True)
    a, b = (sp.Matrix(sp.symbols(f"{n}0:2", real=True)) for n in "ab")
    sq = lambda z: (z.T * z)[0]  # noqa: E731
    G = p * a + (1 - p) * b
    return sp.expand(p * sq(a - G) + (1 - p) * sq(b - G) - (p * sq(a) + (1 - p) * sq(b) - sq(G))) == 0


@_timed("localised/centred_variance_upper_bound", "sympy")
def check_centred_variance(bound: sp.Expr | None = None):
    """The centred ``s^2``'s bound: ``min(u, b^2) - max(0, ||G_n|| - e_n)^2`` (``u``: MP09 at ``level/2``; ``e_n``:
    Pinelis' root with ``a = 2 b_xi`` at ``level/2``, variance proxy ``min(u, b^2)``), floored at 0; the centring
    identity symbolic, the composition compared exactly at rational points."""
    mean, g = sp.Symbol("mean", nonnegative=True), sp.Symbol("G_n", nonnegative=True)
    bound = loc.centred_variance_upper_expression(s.n, mean, _V, g, _lvl) if bound is None else bound
    w = sp.Symbol("w", positive=True)
    u = sp.Min(mean + (w * maurer_pontil_unit(_V / w**2, s.n, _lvl / 2)).subs(w, loc.b_xi**2), loc.b_xi**2)
    L = sp.log(4 / _lvl)
    e_n = 2 * (2 * loc.b_xi) * L / (3 * s.n) + sp.sqrt(2 * u * L / s.n)
    ref = sp.Max(0, u - sp.Max(0, g - e_n) ** 2)
    args = (s.n, mean, _V, g, _lvl, loc.b_xi)
    f, f_ref = (sp.lambdify(args, e, modules="mpmath") for e in (bound, ref))
    pts = ((400, "0.1", "0.01", "0.9", "0.05", 1), (10**5, "1.5", 2, "0.5", "0.001", 3), (50, "0.5", "0.1", 3, "0.1", 2))
    with mpmath.workdps(40):
        diffs = [f(*map(mpmath.mpf, pt)) - f_ref(*map(mpmath.mpf, pt)) for pt in pts]
    if not _centring_identity() or any(abs(x) > 1e-25 for x in diffs):
        return "FAIL", f"{bound} differs from min(u, b^2) - max(0, G_n - e_n)^2 by {diffs}", None
    return "PASS", ("s^2 = E||xi||^2 - ||G||^2 <= min(u, b^2) - max(0, ||G_n|| - e_n)^2, u and e_n at level/2 each "
                    "(e_n: Pinelis, a = 2 b_xi)"), None


def _outer_square_identity() -> bool:
    """``(phi phi^T)^2 = ||phi||^2 phi phi^T`` (so ``E X^2 <= rho^2 Sigma / M^2``), for a symbolic 3-vector."""
    p = sp.Matrix(sp.symbols("p0:3", real=True))
    P = p * p.T
    return sp.expand(P * P - (p.T * p)[0] * P) == sp.zeros(3, 3)


@_timed("localised/matrix_bernstein_tropp", "sympy")
def check_lambda_bound(bound: sp.Expr | None = None):
    """At ``t = lambda_bound``, ``t^2/2 - L (var + R t/3)`` (``R = S/M``, ``var = rho^2 S/M``) is ``x y / 2 >= 0``."""
    t = loc.lambda_bound(_lvl, _c) if bound is None else bound
    L = sp.log(s.r * _c / _lvl)
    R, var = loc.Sigma_ub / s.M, s.rho_phi**2 * loc.Sigma_ub / s.M
    x, y = 2 * R * L / 3, sp.sqrt(2 * var * L)
    gap = sp.expand(t**2 / 2 - L * (var + R * t / 3) - x * y / 2)
    if not _zero(gap) or not _outer_square_identity():
        return "FAIL", f"at t = {t}: t^2/2 - L(var + R t/3) - x y/2 = {sp.simplify(gap)} (must be 0)", _point(gap)
    return "PASS", ("r exp(-(t^2/2)/(var + R t/3)) <= level/c at t = sqrt(2 rho^2 S L/M) + 2 S L/(3M); "
                    "(phi phi^T)^2 = ||phi||^2 phi phi^T gives var <= rho^2 ||Sigma|| / M"), None


def _jensen_signs_identity() -> bool:
    """``E_s ||sum_i s_i phi_i^T||_F^2 = d sum_i ||phi_i||^2`` (``s_i`` uniform signs in ``R^d``), ``d = 2``, two samples,
    exactly over the 16 sign patterns: with Jensen, ``E||.|| <= sqrt(d M E||phi||^2)``."""
    import itertools

    ph = [sp.Matrix(sp.symbols(f"p{i}_0:2", real=True)) for i in range(2)]
    total = 0
    for signs in itertools.product((-1, 1), repeat=4):
        s_ = [sp.Matrix(signs[2 * i:2 * i + 2]) for i in range(2)]
        Z = sum((s_[i] * ph[i].T for i in range(2)), sp.zeros(2, 2))
        total += sum(x**2 for x in Z) / 16
    return sp.expand(total - 2 * sum((p.T * p)[0] for p in ph)) == 0


@_timed("localised/remainder_contraction", "sympy")
def check_remainder(rem: sp.Expr | None = None):
    """(b)'s remainder: 2 (symmetrisation) sqrt(2) (Maurer) ``kappa nu rho_phi`` (Lipschitz on the ball) times
    ``nu sqrt(d tr/M)`` (Jensen: ``E||sum s_i phi_i^T||_F <= sqrt(d M E||phi||^2)``, ``tr >= E||phi||^2``), plus McDiarmid
    for values in an interval of ``kappa nu^2 rho^2``; at ``tr = rho_phi^2`` THEORY's ``2 sqrt(2) kappa nu^2 rho^2 sqrt(d/M)``."""
    rem = loc.remainder(_lvl, _c) if rem is None else rem
    contraction = 2 * sp.sqrt(2) * (loc.kappa * s.nu_V * s.rho_phi) * s.nu_V * sp.sqrt(s.d * loc.tr_ub / s.M)
    conf = rem - contraction
    width = loc.kappa * s.nu_V**2 * s.rho_phi**2
    tail = sp.exp(-2 * s.M * conf**2 / width**2) - _lvl / _c
    theory = 2 * sp.sqrt(2) * loc.kappa * s.nu_V**2 * s.rho_phi**2 * sp.sqrt(s.d / s.M)
    at_sure = contraction.subs(loc.tr_ub, s.rho_phi**2) - theory
    if not _zero(tail) or not _zero(sp.diff(conf, s.d)) or not _zero(at_sure) or not _jensen_signs_identity():
        why = f"{rem} is not 2 sqrt(2) kappa nu rho nu sqrt(d tr/M) + McDiarmid (width kappa nu^2 rho^2)"
        return "FAIL", why, _point(tail)
    return "PASS", ("2 sqrt(2) (kappa nu rho_phi) nu sqrt(d tr_ub/M) + kappa nu^2 rho^2 sqrt(ln(c/l)/(2M)); "
                    "E_s||sum s_i phi_i^T||^2 = d sum ||phi_i||^2 exactly"), None


@_timed("localised/squared_loss_at_the_top", "sympy")
def check_squared_loss_expansions():
    """Squared loss at the top: ``d_V = <m phi^T, V> + tr(V^T A^T A V phi phi^T)`` exactly (so ``q_V = ||A V phi||^2``,
    ``grad q = 2 A^T A h``: ``kappa = 2 ||A||_2^2``); the sup of ``tr(V^T P V Q)`` over ``||V||_F <= nu`` is
    ``nu^2 lambda_max(P) lambda_max(Q)_+`` (Kronecker eigenvalues, numeric); cross-entropy's Hessian on 2 classes
    has eigenvalues ``0, 2p(1-p) <= 1/2`` (``kappa = ||A||_2^2/2``)."""
    A = sp.Matrix(2, 2, sp.symbols("a0:4", real=True))
    u, c, y = (sp.Matrix(sp.symbols(f"{n}0:2", real=True)) for n in "ucy")
    V, ph = sp.Matrix(2, 2, sp.symbols("v0:4", real=True)), sp.Matrix(sp.symbols("f0:2", real=True))
    res = A * u + c - y
    sq = lambda z: (z.T * z)[0]  # noqa: E731
    m = 2 * A.T * res
    d_V = sq(A * (u + V * ph) + c - y) - sq(res)
    ident = sp.expand(d_V - (m.T * V * ph)[0] - (V.T * A.T * A * V * ph * ph.T).trace()) == 0
    h = sp.Matrix(sp.symbols("h0:2", real=True))
    grad = sp.Matrix([sp.diff(sq(A * h), x) for x in h])
    kappa_ok = sp.expand(grad - 2 * A.T * A * h) == sp.zeros(2, 1)
    p = sp.Symbol("p", positive=True)
    Hce = sp.Matrix([[p, 0], [0, 1 - p]]) - sp.Matrix([p, 1 - p]) * sp.Matrix([[p, 1 - p]])
    eig = sorted(Hce.eigenvals(), key=lambda e: e != 0)
    top = sp.maximum(2 * p * (1 - p), p, sp.Interval(0, 1))
    ce_ok = eig[0] == 0 and _zero(eig[1] - 2 * p * (1 - p)) and top == sp.S.Half
    rng = np.random.default_rng(0)
    P = (lambda a: a.T @ a)(rng.normal(size=(3, 3)))
    sup_ok = True   # the sup over the ball is nu^2 max(0, lambda_max(Q (x) P)); V = 0 is in the ball
    for shift in (0.0, 6.0):   # a negative definite Q and an indefinite one
        Q = (lambda b: b + b.T)(rng.normal(size=(2, 2))) + shift * np.diag([1.0, -1.0])
        kron = max(np.linalg.eigvalsh(np.kron(Q, P)).max(), 0.0)
        sup_ok &= bool(np.isclose(kron, np.linalg.eigvalsh(P).max() * max(np.linalg.eigvalsh(Q).max(), 0.0)))
    if not (ident and kappa_ok and ce_ok and sup_ok):
        return "FAIL", f"identity {ident}, grad q = 2A^T A h {kappa_ok}, CE Hessian {ce_ok}, sup {sup_ok}", None
    return "PASS", "d_V = <m phi^T, V> + tr(V^T A^T A V phi phi^T); kappa = 2||A||^2 (squared), ||A||^2/2 (CE)", None


def localised_checks() -> list:
    """Every side-algebra check of THEORY §6b."""
    return [check_hoeffding_difference(), check_bernstein_difference(), check_sure_uniform(), check_e_G(),
            check_sigma2_upper(), check_centred_variance(), check_trace_upper(), check_lambda_bound(), check_remainder(),
            check_squared_loss_expansions()]
