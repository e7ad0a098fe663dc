"""Side algebra of the statements, checked with sympy (THEORY §3-§8).

Every check reads its expression from :mod:`bounds` (the default argument) and compares
it with an independent derivation: a stationarity condition instead of ``solve``, a
derivative instead of an integral, a substituted root instead of the solver that found
it, the claimed exponents of THEORY §7 as limits of log-ratios. Each check takes the
expression under test as an argument so that tests can feed it a wrong one and see it
rejected (with a countermodel: the point where it fails).
"""
from __future__ import annotations

from typing import Callable

import mpmath
import sympy as sp

from bounds.families import RESIDUAL_FAMILIES
from bounds import THEOREM_1, THEOREM_1_OPTIMAL, THEOREM_2, THEOREM_2_GENERAL
from bounds import _symbols as s
from proofs_check._algebra import SUBJECT  # noqa: F401  (re-exported: the subject of the checks)
from proofs_check._algebra import is_zero as _zero
from proofs_check._algebra import timed as _timed
from proofs_check._algebra import witness_point as _point
from proofs_check._results import Check
from proofs_check.side_algebra_localised import localised_checks
from proofs_check.side_algebra_variants import variant_checks

_u = sp.Symbol("u", positive=True)


# ---- THEORY §3: descent lemma optimum ------------------------------------------------
@_timed("descent_lemma_optimum", "sympy")
def check_descent_optimum(theorem1=THEOREM_1, optimal=THEOREM_1_OPTIMAL):
    """``eta = 1/beta`` maximises ``eta (1 - beta eta/2)`` and gives ``||G||^2/(2 beta)`` (THEORY §3).

    Reads the gain ``(R_old - bound)/||G||^2`` off Theorem 1, finds its stationary point,
    checks it is a maximum and that Theorem 1 at that step is the premise and the
    conclusion of :data:`THEOREM_1_OPTIMAL`.
    """
    gain = sp.simplify((s.R_old - theorem1.bound) / s.G_sq)
    roots = sp.solve(sp.diff(gain, s.eta), s.eta)
    if roots != [1 / s.beta]:
        return "FAIL", f"stationary points of {gain} are {roots}, not [1/beta]", _point(gain)
    if not sp.diff(gain, s.eta, 2).subs(s.eta, 1 / s.beta).is_negative:
        return "FAIL", f"eta = 1/beta is not a maximum of {gain}", _point(sp.diff(gain, s.eta, 2))
    at_opt = theorem1.premises[0].relation.rhs.subs(s.eta, 1 / s.beta)
    gap_premise = at_opt - optimal.premises[0].relation.rhs
    gap_bound = gain.subs(s.eta, 1 / s.beta) * s.G_sq - optimal.bound
    for what, gap in (("premise", gap_premise), ("conclusion", gap_bound)):
        if not _zero(gap):
            return "FAIL", f"Theorem 1 at eta = 1/beta does not give the optimal-step {what}: gap {gap}", _point(gap)
    return "PASS", f"argmax of {gain} is 1/beta; value G_sq/(2 beta) = optimal-step bound", None


# ---- THEORY §5: Hoeffding exponent at t = Delta_R/4 ---------------------------------
@_timed("hoeffding_exponent_at_t=delta_R/4", "sympy")
def check_hoeffding_exponent(general=THEOREM_2_GENERAL, paper=THEOREM_2):
    """``exp(-2 K t^2/B^2)`` at ``t = Delta_R/4`` is ``exp(-K Delta_R^2/(8 B^2))`` (THEORY §5).

    The paper's failure probability must be the general one at ``t = Delta_R/4``, and the
    conclusion's ``2t`` must become ``Delta_R/2``.
    """
    t_paper = paper.event_map["H_new"].hoeffding.t
    if not _zero(t_paper - s.delta_R / 4):
        return "FAIL", f"Theorem 2 uses t = {t_paper}, not Delta_R/4", None
    for what, g, p in (("failure probability", general.failure_probability, paper.failure_probability),
                       ("bound", general.bound, paper.bound)):
        gap = g.subs(s.t, t_paper) - p
        if not _zero(gap):
            return "FAIL", f"general {what} at t = Delta_R/4 differs from Theorem 2's: gap {gap}", _point(gap)
    tail = general.event_map["H_new"].hoeffding.tail().subs(s.t, t_paper)
    return "PASS", f"tail at t = Delta_R/4 is {tail}; Theorem 2 = Theorem 2 (any t) at that t", None


# ---- THEORY §4-§6: closed-form sample sizes ----------------------------------------
@_timed("eps_scaling/{0}", "sympy")
def check_eps_scaling(family: str, eps: sp.Expr | None = None):
    """``eps_M sqrt(M)`` does not depend on ``M`` (the ``c_M/sqrt(M)`` form the solves assume, THEORY §4)."""
    from bounds.generalisation import eps_expression
    eps = eps_expression(family, s.M, s.delta) if eps is None else eps
    scale = sp.simplify(eps * sp.sqrt(s.M))
    if s.M in scale.free_symbols:
        return "FAIL", f"eps_M sqrt(M) = {scale} still depends on M", _point(sp.diff(scale, s.M))
    return "PASS", f"eps_M = c_M/sqrt(M) with c_M = {scale}", None


def _route_api():
    from bounds import routes   # required: a missing solver must fail the run, never be skipped

    return routes


@_timed("min_M/{0}", "sympy")
def check_min_M(route: str, expr: sp.Expr | None = None):
    """The closed-form ``min_M`` zeroes the route's margin ``L_test_old - bound`` at ``eps_M = c_M/sqrt(M)``.

    The margin is built here from the theorem object (THEORY §5 / §6), independently of
    the solver in :mod:`bounds.routes`; it must also increase in ``M`` (so ``M >= min_M``
    certifies).
    """
    expr = _route_api().min_M_expression(route) if expr is None else expr
    c_M = sp.Symbol("c_M", positive=True)
    theorem = {"population": THEOREM_2, "direct": _theorem3()}[route]
    margin = (s.L_test_old - theorem.bound).subs(s.eps_M, c_M / sp.sqrt(s.M))
    residual = _with_positive_margin(margin, margin.subs(s.M, expr))
    if not _zero(residual):
        return "FAIL", f"margin at M = {expr} is {sp.simplify(residual)}, not 0", _point(residual)
    slope = sp.diff(margin, s.M)
    if not slope.is_positive:
        return "FAIL", f"margin slope in M is {slope}, not positive", _point(slope)
    return "PASS", f"M = {expr} zeroes the margin, which increases in M", None


def _with_positive_margin(margin: sp.Expr, expr: sp.Expr) -> sp.Expr:
    """``expr`` where the margin without ``eps_M`` is positive (the only case with a root).

    E.g. the direct route's ``Delta_test^R + Delta_ERM - 2 eps_K`` may have any sign; it is
    replaced by a positive symbol ``q`` (solving for its unsigned symbol).
    """
    avail = margin.subs(sp.Symbol("c_M", positive=True), 0)
    if avail.is_nonnegative:
        return expr
    free = [x for x in sorted(avail.free_symbols, key=lambda x: x.name) if x.is_nonnegative is None]
    if not free:
        return expr
    q = sp.Symbol("q", positive=True)
    value = sp.solve(sp.Eq(avail, q), free[0])[0]
    return expr.subs(free[0], value)


def _theorem3():
    from bounds import THEOREM_3
    return THEOREM_3


@_timed("min_K/population", "sympy")
def check_min_K_population(expr: sp.Expr | None = None):
    """``min_K``: ``delta + 2 exp(-K Delta_R^2/(8B^2)) = level`` (THEORY §6, degenerate regime).

    Checks the root (substituted into Theorem 2's failure probability), the decrease in
    ``K``, and THEORY §6's form ``K = 8 B^2 ln(2/delta_A)/Delta_R^2`` with
    ``delta_A = level - delta``.
    """
    expr = _route_api().min_K_expression("population") if expr is None else expr
    level = sp.Symbol("level", positive=True)
    residual = THEOREM_2.failure_probability.subs(s.K, expr) - level
    if not _zero(residual):
        return "FAIL", f"failure probability at K = {expr} minus level is {residual}", _point(residual)
    theory = 8 * s.B**2 * sp.log(2 / (level - s.delta)) / s.delta_R**2
    unlog = s.delta_R**2 / (8 * s.B**2)  # compare exp(K Delta_R^2/(8 B^2)): no log branches
    if not _zero(sp.exp(expr * unlog) - sp.exp(theory * unlog)):
        return "FAIL", f"{expr} differs from THEORY §6's 8 B^2 ln(2/delta_A)/Delta_R^2", _point(expr - theory)
    if not sp.diff(THEOREM_2.failure_probability, s.K).is_nonpositive:
        return "FAIL", "failure probability increases in K somewhere", None
    return "PASS", f"K = {expr} solves delta + 2 exp(-K Delta_R^2/(8 B^2)) = level", None


# ---- THEORY §7: Appendix M --------------------------------------------------------
def power_exponent(expr: sp.Expr, var: sp.Symbol) -> sp.Expr:
    """``lim_{var -> oo} log(expr) / log(var)`` (computed with ``var = e^u``, ``u -> oo``).

    Example:
        >>> M, a = sp.symbols("M a", positive=True)
        >>> power_exponent(3 * M ** (1 / (2 * a + 1)), M)
        1/(2*a + 1)
    """
    logged = sp.expand_log(sp.log(expr.subs(var, sp.exp(_u))), force=True)
    return sp.simplify(sp.limit(logged / _u, _u, sp.oo))


@_timed("appendix_m/exponent/{0}", "sympy")
def check_exponent(label: str, expr: sp.Expr, var: sp.Symbol, expected: sp.Expr):
    """The power-law exponent of ``expr`` in ``var`` is ``expected`` (THEORY §7)."""
    got = power_exponent(expr, var)
    if not _zero(got - expected):
        return "FAIL", f"{label} ~ {var}^({got}), THEORY §7 claims {var}^({expected})", _point(got - expected)
    return "PASS", f"{label} ~ {var}^({expected})", None


@_timed("appendix_m/integral_test", "sympy+mpmath")
def check_integral_test(lower: sp.Expr | None = None, upper: sp.Expr | None = None):
    """``D^{1-2a}/(2a-1) <= sum_{k>=D} k^{-2a} <= D^{-2a} + D^{1-2a}/(2a-1)`` for ``a > 1/2`` (THEORY §7).

    Symbolically: ``lower`` is the tail integral of the decreasing ``x^{-2a}``
    (``d lower/dD = -D^{-2a}``, ``lower -> 0`` as ``D -> oo``) and ``upper - lower = D^{-2a}``
    -- the two comparisons of the integral test. Numerically: both inequalities on a
    grid against the exact tail sum, the Hurwitz zeta ``zeta(2a, D)`` (mpmath, 30 digits).
    """
    from bounds import appendix_m as am
    if lower is None or upper is None:
        lower, upper = am.tail_sum_bounds(2 * am.alpha)
    D, alpha = am.D, am.alpha
    q = sp.Symbol("q", positive=True)  # 2 alpha = 1 + q, q > 0
    lo_q = lower.subs(alpha, (1 + q) / 2)
    checks = ((sp.diff(lower, D) + D ** (-2 * alpha), "d lower/dD != -D^{-2 alpha}"),
              (sp.limit(lo_q, D, sp.oo), "lower does not vanish as D -> oo"),
              (upper - lower - D ** (-2 * alpha), "upper - lower != D^{-2 alpha}"))
    for gap, why in checks:
        if not _zero(gap):
            return "FAIL", why, _point(gap)
    if not sp.diff(D ** (-2 * alpha), D).is_negative:
        return "FAIL", "x^{-2 alpha} is not decreasing", None
    return _integral_grid(lower, upper, D, alpha)


def _integral_grid(lower, upper, D, alpha):
    f_lo, f_hi = (sp.lambdify((alpha, D), e, modules="mpmath") for e in (lower, upper))
    with mpmath.workdps(30):
        for a_val in (0.55, 0.75, 1.0, 1.5, 3.0):
            for d_val in (1, 2, 3, 10, 100):
                tail = mpmath.zeta(2 * a_val, d_val)
                lo, hi = f_lo(a_val, d_val), f_hi(a_val, d_val)
                if not lo <= tail <= hi:
                    return "FAIL", "integral-test bound violated", {
                        "alpha": a_val, "D": d_val, "lower": float(lo), "tail_sum": float(tail), "upper": float(hi)}
    return "PASS", "integral test: symbolic comparison + 25-point Hurwitz-zeta grid", None


@_timed("appendix_m/optimal_depth_minimum", "sympy")
def check_optimal_depth(d_star: sp.Expr | None = None):
    """``D*`` is the unique minimiser of ``f(D) = A D^-a + c_g sqrt(D/M)`` (THEORY §7).

    ``h(D) = D^{a+1} f'(D) = -a A + c_g D^{a+1/2} / (2 sqrt(M))`` is strictly increasing, so
    ``f`` has at most one stationary point; ``h(D*) = 0`` and ``f -> oo`` at both ends of
    ``(0, oo)`` make it the global minimum.
    """
    from bounds import appendix_m as am
    d_star = am.optimal_depth() if d_star is None else d_star
    f, D = am.test_excess(am.D), am.D
    h = sp.powsimp(sp.expand(sp.diff(f, D) * D ** (am.a + 1)), force=True)
    if not sp.diff(h, D).is_positive:
        return "FAIL", f"D^(a+1) f'(D) = {h} is not increasing: stationary point may not be unique", None
    at = sp.powsimp(sp.expand_power_base(h.subs(D, d_star), force=True), force=True)
    if not _zero(at):
        return "FAIL", f"f'(D*) != 0 at D* = {d_star}", _point(at)
    ends = (sp.limit(f, D, 0, "+"), sp.limit(f, D, sp.oo))
    if ends != (sp.oo, sp.oo):
        return "FAIL", f"f does not blow up at both ends: limits {ends}", None
    return "PASS", f"D* = {d_star} is the unique stationary point, f -> oo at 0 and oo", None


@_timed("appendix_m/deepest_depth_solves", "sympy")
def check_deepest_depth(depth: sp.Expr | None = None):
    """The deepest certified depth solves ``d_lo(D)/2 = 2 c_e/sqrt(M)`` (THEORY §7)."""
    from bounds import appendix_m as am
    depth = am.deepest_certified_depth() if depth is None else depth
    g_lo, _ = am.gain_bounds()
    residual = g_lo.subs(am.D, depth) / 2 - 2 * am.c_e / sp.sqrt(am.M)
    if not _zero(sp.powsimp(sp.expand_power_base(residual, force=True), force=True)):
        return "FAIL", f"d_lo(D)/2 - 2 eps_M at D = {depth} is not 0", _point(residual)
    return "PASS", f"D = {depth} solves d_lo(D)/2 = 2 c_e/sqrt(M)", None


def appendix_m_checks() -> list[Check]:
    """Integral test, stationarity, and the four exponents THEORY §7 claims."""
    from bounds import appendix_m as am   # required: never skipped
    lo, hi = am.excess_risk_bounds()
    d_star, a = am.optimal_depth(), am.a  # computed once: the solve is the slow part
    return [check_integral_test(), check_optimal_depth(d_star), check_deepest_depth(),
            check_exponent("excess_lower", lo, am.D, 1 - 2 * am.alpha),
            check_exponent("excess_upper", hi, am.D, 1 - 2 * am.alpha),
            check_exponent("optimal_depth", d_star, am.M, 1 / (2 * a + 1)),
            check_exponent("test_excess_at_optimum", am.test_excess_at_optimum(), am.M, -a / (2 * a + 1)),
            check_exponent("deepest_certified_depth", am.deepest_certified_depth(), am.M, 1 / (4 * am.alpha))]


# ---- THEORY §8: unbiasedness of Paper B's U-statistic ------------------------------
def u_statistic(xs: list[list[sp.Expr]]) -> sp.Expr:
    """``S_hat = (||sum_i X_i||^2 - sum_i ||X_i||^2) / (n (n-1))`` for vectors ``xs`` (n, dim), THEORY §8."""
    n = len(xs)
    total = [sum(col) for col in zip(*xs)]
    sq = lambda v: sum(c**2 for c in v)  # noqa: E731
    return (sq(total) - sum(sq(x) for x in xs)) / (n * (n - 1))


def _expectation(poly_expr: sp.Expr, xs, mu, sigma) -> sp.Expr:
    """``E[poly]`` for independent ``X_i`` with mean ``mu`` and covariance ``sigma`` (degree <= 2 per sample)."""
    gens = [c for x in xs for c in x]
    poly = sp.Poly(sp.expand(poly_expr), *gens)
    dim, out = len(mu), sp.Integer(0)
    for powers, coeff in poly.terms():
        term = coeff
        for i in range(len(xs)):
            p = powers[i * dim:(i + 1) * dim]
            idx = [k for k in range(dim) for _ in range(p[k])]
            if len(idx) > 2:
                raise ValueError(f"degree {len(idx)} in sample {i}: only moments up to 2 are known")
            if len(idx) == 1:
                term *= mu[idx[0]]
            elif len(idx) == 2:
                term *= sigma[idx[0]][idx[1]] + mu[idx[0]] * mu[idx[1]]
        out += term
    return out


@_timed("u_statistic_unbiased", "sympy")
def check_u_statistic(estimator: Callable | None = None, n: int = 3, dim: int = 2):
    """``E[S_hat] = ||E X||^2`` exactly, for ``n`` i.i.d. vectors with symbolic mean and covariance (THEORY §8).

    Args:
        estimator: maps ``xs`` (n lists of dim sympy symbols) to the estimate; default
            :func:`u_statistic`. A biased one (e.g. ``||mean||^2``) must be rejected.
        n: sample size (>= 2); dim: dimension of ``X_i`` (``vec(m_i phi_i^T)``).
    """
    estimator = u_statistic if estimator is None else estimator
    xs = [[sp.Symbol(f"x{i}_{k}", real=True) for k in range(dim)] for i in range(n)]
    mu = [sp.Symbol(f"mu{k}", real=True) for k in range(dim)]
    sig = [[sp.Symbol(f"S{min(k, l)}{max(k, l)}", real=True) for l in range(dim)] for k in range(dim)]
    bias = sp.expand(_expectation(estimator(xs), xs, mu, sig) - sum(m**2 for m in mu))
    if bias != 0:
        point = {m: sp.Rational(1, 2) for m in mu} | {sig[k][l]: int(k == l) for k in range(dim) for l in range(dim)}
        return "FAIL", f"E[estimate] - ||E X||^2 = {bias}", {str(k): float(v) for k, v in point.items()} | {
            "bias": float(bias.subs(point))}
    return "PASS", f"E[S_hat] = ||E X||^2 exactly (n = {n}, dim = {dim}, symbolic mean and covariance)", None


def side_algebra_checks() -> tuple[Check, ...]:
    """Every side-algebra check of THEORY §3-§8, on the expressions of :mod:`bounds`."""
    checks = [check_descent_optimum(), check_hoeffding_exponent()]
    checks += [check_eps_scaling(name) for name, fam in RESIDUAL_FAMILIES.items() if "eps_scaling" in fam.side_algebra]
    checks += [check_min_M("population"), check_min_M("direct"), check_min_K_population()]
    checks += appendix_m_checks()
    checks.append(check_u_statistic())
    checks += variant_checks()   # THEORY §6 variants (Choice)
    checks += localised_checks()   # THEORY §6b localised certificates (Choice)
    return tuple(checks)
