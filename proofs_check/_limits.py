"""Size limits of a user chain (``depthcert prove --chain``): bounded input, bounded work.

Every limit is data, stated in ``depthcert prove --help`` (:func:`describe_limits`) and
checked at the boundary (:mod:`proofs_check.chain`, :mod:`proofs_check._parser`), so
that no input, however large or deeply nested, costs unbounded memory or time.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    """The limits on one chain; each exceeded limit is an input error (exit code 2)."""

    max_file_bytes: int = 262_144          # bytes read from a chain file (at most this many + 1 are read)
    max_formula_chars: int = 2000          # characters in one formula
    max_formulas: int = 1000               # premises + assumptions
    max_symbols: int = 2000                # distinct names in a chain
    max_transcendental_terms: int = 48     # distinct exp/log terms and constants (lemmas are pairwise)
    max_depth: int = 64                    # nesting of parentheses / unary operators in a formula
    max_exponent: int = 64                 # |numeric exponent| and its denominator
    max_number_bits: int = 4096            # bits of the numerator / denominator of any exact constant
    max_number_chars: int = 40             # characters of one numeric literal
    max_exp_argument: int = 2000           # |argument| of exp of a constant
    max_expanded_terms: int = 5000         # monomials of any expansion the checkers build (bounded before expanding)
    max_seconds: float = 300.0             # wall-clock budget for all queries of one chain (then UNKNOWN)
    max_memory_bytes: int = 512 * 2**20    # growth of the solver process's address space (prove --chain, RLIMIT_AS)


LIMITS = Limits()


def describe_limits(limits: Limits = LIMITS) -> str:
    """One paragraph for ``--help``: every limit with its value."""
    return (f"Limits of a chain (larger input is refused with exit code 2): file at most {limits.max_file_bytes} "
            f"bytes; at most {limits.max_formulas} premises + assumptions; formulas at most "
            f"{limits.max_formula_chars} characters, nested at most {limits.max_depth} deep; at most "
            f"{limits.max_symbols} distinct names; at most {limits.max_transcendental_terms} distinct "
            f"exp/log/constant terms; numeric exponents within +-{limits.max_exponent}; exact constants of at "
            f"most {limits.max_number_bits} bits; exp of a constant only for arguments within "
            f"+-{limits.max_exp_argument}; digits and spaces ASCII only. No expansion into more than "
            f"{limits.max_expanded_terms} monomials is ever built (its size is bounded before expanding; a larger one "
            f"leaves that check to z3, which works on the unexpanded terms), so memory stays within a few hundred MB. "
            f"All queries of one chain share a "
            f"budget of {limits.max_seconds:g} s (checks left over are reported UNKNOWN); with --chain a non-linear chain's budget "
            f"is min({limits.max_seconds:g} s, 4 x --timeout + 5 s), the solver runs in a child process whose address space "
            f"may grow by at most {limits.max_memory_bytes // 2**20} MB, a query running 2 s past --timeout is "
            f"stopped, and the chain is then UNKNOWN with the limit named. A chain file must be a regular file.")
