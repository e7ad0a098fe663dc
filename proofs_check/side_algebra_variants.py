"""Side algebra of the tighter variants (THEORY §4, §6, **Choice**), checked with sympy.

Each check reads its expression from :mod:`bounds.variants` (the default argument) and
compares it with an independent derivation: a ``solve`` of the tail equation, the
``[0, 1]`` statement of Maurer--Pontil rescaled, THEORY §4's ``eps_n`` at twice the level,
two McDiarmid events added, the bounded differences of the sign Monte Carlo. Each takes
the expression under test as an argument so that a test can feed it a wrong one.
"""
from __future__ import annotations

import itertools

import sympy as sp

from bounds.families import RESIDUAL_FAMILIES
from bounds import _symbols as s
from bounds import variants as v
from bounds.generalisation import eps_expression, jensen_readout_expression, phi_sq_sum, rad_vec_closed_form
from proofs_check._algebra import is_zero as _zero
from proofs_check._algebra import timed as _timed
from proofs_check._algebra import witness_point as _point
from proofs_check._results import Check
from proofs_check._tails import maurer_pontil_unit

_lvl = sp.Symbol("level_i", positive=True)
_copies = sp.Symbol("copies", positive=True)


@_timed("variants/hoeffding_solves_level", "sympy")
def check_hoeffding_level(deviation: sp.Expr | None = None):
    """``t = B sqrt(ln(copies/delta_i)/(2n))`` is the positive root of ``copies exp(-2 n t^2/B^2) = delta_i``."""
    deviation = v.hoeffding_deviation(s.n, _lvl, _copies) if deviation is None else deviation
    x = sp.Symbol("x", positive=True)
    roots = sp.solve(sp.Eq(_copies * sp.exp(-2 * s.n * x**2 / s.B**2), _lvl), x)
    if len(roots) != 1 or not _zero(roots[0] - deviation):
        return "FAIL", f"roots of copies exp(-2 n t^2/B^2) = level are {roots}, recorded {deviation}", _point(
            (roots[0] if roots else 0) - deviation)
    return "PASS", f"t = {deviation} solves copies exp(-2 n t^2/B^2) = level (one-sided Hoeffding)", None


@_timed("variants/bernstein_as_stated", "sympy")
def check_bernstein(deviation: sp.Expr | None = None):
    """The ``[0, B]`` Bernstein deviation is ``B`` times Maurer--Pontil's Thm 4 for ``Z/B in [0, 1]``.

    The sample variance of ``Z/B`` is ``V/B^2``; the deviation of the mean of ``Z`` is ``B``
    times that of ``Z/B``.
    """
    V = sp.Symbol("V", nonnegative=True)
    deviation = v.bernstein_deviation(s.n, V, _lvl, _copies) if deviation is None else deviation
    ref = s.B * maurer_pontil_unit(V / s.B**2, s.n, _lvl / _copies)
    gap = deviation - ref
    if not _zero(gap):
        return "FAIL", f"{deviation} != B * MP09 Thm 4 at V/B^2: {ref}", _point(gap)
    return "PASS", "sqrt(2 V ln(2 c/delta)/n) + 7 B ln(2 c/delta)/(3(n-1)) = B * MP09 Thm 4 rescaled", None


@_timed("variants/uniform_vs_eps_n/{0}/{1}", "sympy")
def check_uniform_matches_eps_n(family: str, rademacher: str, one_sided: sp.Expr | None = None):
    """The one-sided uniform term at ``delta`` is ``2 Rad`` plus a McDiarmid deviation at ``delta``;
    two-sided, it is THEORY §4's ``eps_n(delta)`` (the paper's ``eps_M`` with ``n = M``).

    The McDiarmid part ``c`` (bounded differences ``B/n``) must satisfy
    ``exp(-2 n c^2 / B^2) = delta``, checked by substitution, independently of
    :func:`bounds.generalisation.confidence_term`. ``rademacher``: "closed" (the family's
    closed form) or "empirical" (``rad_hat``; the McDiarmid part is then three deviations
    at ``delta/2``, Bartlett--Mendelson).
    """
    empirical = rademacher == "empirical"
    rad = s.rad_hat if empirical else rad_vec_closed_form(family, s.n)
    one = v.uniform_deviation(s.n, s.delta, rad, sides=1, empirical=empirical) if one_sided is None else one_sided
    two = v.uniform_deviation(s.n, s.delta, rad, sides=2, empirical=empirical)
    c = (one - 2 * sp.sqrt(2) * s.L_loss * s.L_top * rad) / (3 if empirical else 1)
    tail = sp.exp(-2 * s.n * c**2 / s.B**2) - (s.delta / 2 if empirical else s.delta)
    if not _zero(tail) or not _zero(sp.diff(c, s.B) - c / s.B):   # c > 0, proportional to B
        return "FAIL", f"one-sided at delta: {one} is not 2 Rad + the McDiarmid deviation at delta", _point(tail)
    ref = eps_expression(family, s.n, s.delta, empirical=empirical)
    if not _zero(two - ref):
        return "FAIL", f"two-sided at delta: {two} != eps_n {ref}", _point(two - ref)
    return "PASS", ("one-sided term at delta = 2 Rad + McDiarmid deviation at delta; two-sided = eps_n(delta) "
                    "(THEORY §4)"), None


@_timed("variants/empirical_confidence_is_two_mcdiarmid/sides={0}", "sympy")
def check_empirical_confidence(sides: int, conf: sp.Expr | None = None):
    """``3 B sqrt(ln(2 sides/delta)/(2n))`` = the sup's McDiarmid term + twice the Rademacher one.

    Both have bounded differences ``B/n``; each event is at ``delta/(2 sides)`` (THEORY §4).
    """
    rad = sp.Symbol("r", nonnegative=True)
    conf = v.uniform_deviation(s.n, s.delta, rad, sides=sides, empirical=True) - v.uniform_deviation(
        s.n, s.delta, rad, sides=sides, empirical=True).subs(s.B, 0) if conf is None else conf
    each = s.delta / (2 * sides)
    mcdiarmid = s.B * sp.sqrt(sp.log(1 / each) / (2 * s.n))   # bounded differences B/n, one-sided
    gap = conf - 3 * mcdiarmid
    if not _zero(gap):
        return "FAIL", f"{conf} != B c + 2 B c with c at level delta/(2 sides)", _point(gap)
    return "PASS", f"3B term = McDiarmid(sup) + 2 McDiarmid(Rad), each at delta/{2 * sides}", None


@_timed("variants/mc_error_mcdiarmid", "sympy")
def check_mc_error(error: sp.Expr | None = None):
    """The sign Monte Carlo's error solves ``exp(-2 t^2 / sum c^2) = delta_mc`` (THEORY §4).

    ``n_draws M d`` independent signs; flipping ``s_ik`` in one draw moves the mean of the
    draws of ``(nu_V/M) ||s^T phi||_F`` by at most ``c_ik = 2 nu_V ||phi_i|| / (M n_draws)``.
    """
    error = v.mc_error_expression() if error is None else error
    sum_c2 = v.n_draws * s.d * 4 * s.nu_V**2 * v.phi_sq_sum / (s.M**2 * v.n_draws**2)
    gap = sp.exp(-2 * error**2 / sum_c2) - v.delta_mc
    if not _zero(gap):
        return "FAIL", f"exp(-2 t^2/sum c^2) at t = {error} is not delta_mc", _point(gap)
    return "PASS", f"t = {error} solves exp(-2 t^2 / sum c^2) = delta_mc", None


@_timed("variants/jensen_readout", "sympy")
def check_jensen_readout(bound: sp.Expr | None = None, n: int = 3, d: int = 2):
    """``(nu_V/M) E_s ||s^T phi||_F <= (nu_V/M) sqrt(d sum_i ||phi_i||^2)`` (THEORY §4, Jensen).

    ``E_s ||s^T phi||_F^2 = d sum_i ||phi_i||^2`` is computed exactly by enumerating every
    sign matrix ``s in {±1}^{n x d}`` on a symbolic ``phi`` (``n = 3`` rows, ``r = 2``
    features); Jensen (``E X <= sqrt(E X^2)``) then gives the bound, which must equal
    :func:`bounds.generalisation.jensen_readout_expression`.
    """
    bound = jensen_readout_expression() if bound is None else bound
    phi = sp.Matrix(n, 2, lambda i, k: sp.Symbol(f"p{i}{k}", real=True))
    second = sp.Integer(0)
    for signs in itertools.product((-1, 1), repeat=n * d):
        st = sp.Matrix(d, n, signs)
        second += sum(x**2 for x in st * phi)
    second = sp.expand(second / 2 ** (n * d))
    sq_sum = sum(x**2 for x in phi)
    if sp.expand(second - d * sq_sum) != 0:
        return "FAIL", f"E||s^T phi||^2 = {second}, not d sum ||phi_i||^2", None
    gap = bound - (s.nu_V / s.M) * sp.sqrt(s.d * phi_sq_sum)
    if not _zero(gap):
        return "FAIL", f"{bound} != (nu_V/M) sqrt(d sum ||phi_i||^2)", _point(gap)
    return "PASS", "E||s^T phi||_F^2 = d sum ||phi_i||^2 by enumeration; Jensen gives (nu_V/M) sqrt(d sum)", None


@_timed("variants/one_function_below_uniform", "sympy")
def check_one_function_below_uniform(tail: sp.Expr | None = None):
    """At equal level, the uniform one-sided term minus the one-function Hoeffding tail is ``2 Rad(l o F) >= 0``."""
    tail = v.hoeffding_deviation(s.n, s.delta) if tail is None else tail
    rad = sp.Symbol("r", nonnegative=True)
    uniform = v.uniform_deviation(s.n, s.delta, rad, sides=1)
    gap = sp.simplify(uniform - tail - 2 * sp.sqrt(2) * s.L_loss * s.L_top * rad)
    if gap != 0:
        return "FAIL", f"uniform - one-function tail - 2 Rad = {gap}, not 0", _point(gap)
    return "PASS", "eps_one_sided(delta) - t_hoeffding(delta) = 2 sqrt(2) L_loss L_top Rad >= 0", None


def variant_checks() -> list[Check]:
    """Every side-algebra check of the THEORY §6 variants (per family: the facts its entry lists,
    :attr:`bounds.families.ResidualFamily.side_algebra`)."""
    per_family = [check_uniform_matches_eps_n(name, kind) for kind in ("closed", "empirical")
                  for name, fam in RESIDUAL_FAMILIES.items() if f"uniform_{kind}" in fam.side_algebra]
    return [check_hoeffding_level(), check_bernstein(), *per_family,
            check_empirical_confidence(1), check_empirical_confidence(2), check_mc_error(),
            check_jensen_readout(), check_one_function_below_uniform()]
