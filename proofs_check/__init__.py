"""proofs_check: machine checks that every statement of :mod:`bounds` follows from its premises.

For each :class:`bounds.Theorem` (read from :mod:`bounds`, never re-typed):

* **entailment, two independent ways** -- an exact Farkas certificate (exact rational
  LP, then exact verification, multipliers printed) and a z3 proof that premises and
  not(conclusion) is unsatisfiable over the reals, with every sign condition and every
  domain condition (sqrt, log, division, powers) explicit, exp/log with sound lemmas;
* **consistency** -- contradictory premises are reported (a minimal inconsistent subset);
* **necessity** -- dropping any premise gives a z3 countermodel (a superfluous premise
  is reported as a FINDING), incrementally on one solver; every countermodel is
  confirmed in exact arithmetic (else the answer is UNKNOWN);
* **probability ledger** -- union bound of the premises' failure events against the
  stated failure probability, each Hoeffding tail re-derived from its deviation ``t``;
* **side algebra** (:mod:`proofs_check.side_algebra`) -- descent-lemma optimum, Hoeffding
  exponent, closed-form sample sizes, Appendix M, U-statistic unbiasedness;
* **mutants** (:mod:`proofs_check.mutants`) -- wrong variants, each must be rejected.

User chains (``depthcert prove --chain file.toml``) go through a restricted formula
grammar (:func:`parse_relation`, :func:`parse_formula` with the domain as written),
never through ``sympify``, within the size limits :data:`LIMITS`. THEORY.md §3-§8.
"""
from proofs_check._limits import LIMITS, Limits, describe_limits
from proofs_check._parser import ChainSyntaxError, Formula, parse_expression, parse_formula, parse_relation
from proofs_check._prove import verify_all, verify_mutants
from proofs_check._report import format_chain, format_report
from proofs_check._results import Check, MutantResult, ProveReport, TheoremResult
from proofs_check._verify import DEFAULT_TIMEOUT_S, verify
from proofs_check.chain import Chain, ChainResult, check_chain, load_chain, parse_chain
from proofs_check.mutants import MUTANTS, Mutant
from proofs_check.side_algebra import side_algebra_checks

__all__ = [
    "Chain",
    "ChainResult",
    "ChainSyntaxError",
    "Check",
    "DEFAULT_TIMEOUT_S",
    "Formula",
    "LIMITS",
    "Limits",
    "MUTANTS",
    "Mutant",
    "MutantResult",
    "ProveReport",
    "TheoremResult",
    "check_chain",
    "describe_limits",
    "format_chain",
    "format_report",
    "load_chain",
    "parse_chain",
    "parse_expression",
    "parse_formula",
    "parse_relation",
    "side_algebra_checks",
    "verify",
    "verify_all",
    "verify_mutants",
]
