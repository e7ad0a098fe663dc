"""THEORY §6b: the 12 localised theorems verify, their mutants are rejected, the side algebra can fail."""
import pytest
import sympy as sp

from bounds import _symbols as s
from bounds import localised as loc
from proofs_check import side_algebra_localised as sal
from proofs_check._localised_mutants import LOCALISED_MUTANT_SPECS
from proofs_check._prove import DEFAULT_THEOREMS
from proofs_check._results import MutantResult
from proofs_check._verify import verify
from proofs_check.mutants import MUTANTS

NAMES = [f"localised_{c}_{u}_{t}" for c in ("train", "paper") for u in ("sure", "linearised", "exact")
         for t in ("hoeffding", "bernstein")]


def test_prove_lists_the_twelve_contract_names():
    listed = {T.name for T in DEFAULT_THEOREMS}
    assert set(NAMES) <= listed and set(loc.LOCALISED) == set(NAMES)
    assert {m[0] for m in LOCALISED_MUTANT_SPECS} <= {m.name for m in MUTANTS}


@pytest.mark.parametrize("name", NAMES)
def test_localised_theorem_verifies_with_both_engines_and_ledger(name):
    result = verify(loc.LOCALISED[name])
    assert result.ok, [(c.name, c.status, c.detail) for c in result.checks if c.status != "PASS"]
    names = {c.name for c in result.checks}
    assert {"entailment/farkas", "entailment/z3", "ledger/union_bound", "ledger/tail/E_U",
            "ledger/dependence/E_U", "ledger/dependence/H_T_diff"} <= names
    assert all(c.status == "PASS" for c in result.checks if c.name.startswith("necessity/"))
    premises = {p.name for p in loc.LOCALISED[name].premises}
    assert {f"necessity/{p}" for p in premises} <= names


@pytest.mark.parametrize("spec", LOCALISED_MUTANT_SPECS, ids=lambda m: m[0])
def test_localised_mutant_is_rejected_at_its_target(spec):
    name, description, target, build = spec
    m = MutantResult(name, description, target, verify(build(), necessity=False))
    assert m.rejected, m.result.check(target)


def test_dropped_premise_breaks_entailment():
    T = loc.LOCALISED["localised_paper_exact_bernstein"]
    assert not verify(T.without("tail_S_pop"), necessity=False).ok


_l, _c, _r, _V = sal._lvl, sal._c, sal._r, sal._V
_mean = sp.Symbol("mean", nonnegative=True)


def _halved_mcdiarmid():
    full = loc.sure_uniform(_l, _c, 2 * _r)
    conf = full - 2 * sp.sqrt(2) * s.L_loss * s.L_top * loc.rad_M
    return full - conf / 2


def _centred(linear=4, sqrt_factor=1):
    """The centred variance's bound with its Pinelis linear coefficient or its square-root term changed."""
    g = sp.Symbol("G_n", nonnegative=True)
    u = sp.Min(loc.sigma2_upper_expression(s.n, _mean, _V, _l / 2), loc.b_xi**2)
    L = sp.log(4 / _l)
    e = linear * loc.b_xi * L / (3 * s.n) + sqrt_factor * sp.sqrt(2 * u * L / s.n)
    return sp.Max(0, u - sp.Max(0, g - e) ** 2)


WRONG = {   # each the check's expression with one constant halved (or its range wrong)
    "hoeffding": (sal.check_hoeffding_difference, lambda: loc.hoeffding_difference(s.n, _l, _c, 2 * _r) / 2),
    "bernstein_range": (sal.check_bernstein_difference, lambda: loc.bernstein_difference(s.n, _V, _l, _c, _r)),
    "sure_mcdiarmid": (sal.check_sure_uniform, _halved_mcdiarmid),
    "e_G_linear": (sal.check_e_G, lambda: loc.e_G(_l, _c) - 2 * loc.b_xi * sp.log(2 * _c / _l) / (3 * s.M)),
    "e_G_sqrt": (sal.check_e_G, lambda: loc.e_G(_l, _c) - sp.sqrt(2 * loc.sigma2_ub * sp.log(2 * _c / _l) / s.M) / 2),
    "sigma2_range": (sal.check_sigma2_upper, lambda: loc.sigma2_upper_expression(s.n, _mean, _V, _l)
                     - 7 * loc.b_xi**2 * sp.log(2 / _l) / (6 * (s.n - 1))),
    "trace_range": (sal.check_trace_upper, lambda: loc.trace_upper_expression(s.n, _mean, _V, _l)
                    - 7 * s.rho_phi**2 * sp.log(2 / _l) / (6 * (s.n - 1))),
    "centred_range_b_xi": (sal.check_centred_variance, lambda: _centred(linear=2)),
    "centred_sqrt_halved": (sal.check_centred_variance, lambda: _centred(sqrt_factor=sp.Rational(1, 2))),
    "lambda_linear": (sal.check_lambda_bound, lambda: loc.lambda_bound(_l, _c)
                      - loc.Sigma_ub * sp.log(s.r * _c / _l) / (3 * s.M)),
    "lambda_sqrt": (sal.check_lambda_bound, lambda: loc.lambda_bound(_l, _c) / 2),
    "remainder_contraction": (sal.check_remainder, lambda: loc.remainder(_l, _c)
                              - sp.sqrt(2) * loc.kappa * s.nu_V**2 * s.rho_phi * sp.sqrt(s.d * loc.tr_ub / s.M)),
    "remainder_trace_not_sqrt": (sal.check_remainder, lambda: loc.remainder(_l, _c, loc.tr_ub**2)),
}


def test_every_side_algebra_check_passes():
    checks = sal.localised_checks()
    assert len(checks) == 10 and all(c.status == "PASS" for c in checks), [(c.name, c.detail) for c in checks]


@pytest.mark.parametrize("case", sorted(WRONG))
def test_side_algebra_rejects_a_halved_constant(case):
    check, wrong = WRONG[case]
    assert check(wrong()).status == "FAIL"
