"""Exact numbers between Python and z3 without Python's 4300-digit string limit.

z3's Python API converts numerals through decimal strings; Python refuses to convert
integers of more than ``sys.get_int_max_str_digits()`` digits (4300 by default), a guard
against quadratic-time conversions of untrusted input. Our numbers are bounded by the
chain limits (``LIMITS.max_number_bits``) and by :data:`MAX_DIGITS`, so the guard is
lifted to that bound for these conversions only.
"""
from __future__ import annotations

import contextlib
import sys
from fractions import Fraction

import z3

MAX_DIGITS = 60_000   # ~200 000 bits: beyond any constant a chain can contain


class TooLarge(ValueError):
    """A numeral with more than :data:`MAX_DIGITS` digits."""


@contextlib.contextmanager
def _digits():
    old = sys.get_int_max_str_digits()
    if old and old < MAX_DIGITS + 10:
        sys.set_int_max_str_digits(MAX_DIGITS + 10)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def z3_rational(v: Fraction) -> z3.ArithRef:
    """The exact z3 real numeral of a Fraction."""
    if max(v.numerator.bit_length(), v.denominator.bit_length()) > MAX_DIGITS * 3:
        raise TooLarge("numeral too large")
    with _digits():
        return z3.RealVal(f"{v.numerator}/{v.denominator}")


def fraction(v) -> Fraction:
    """A z3 rational numeral as an exact Fraction."""
    num, den = v.numerator().as_string(), v.denominator().as_string()
    if len(num) > MAX_DIGITS or len(den) > MAX_DIGITS:
        raise TooLarge("numeral too large")
    with _digits():
        return Fraction(int(num), int(den))


def fraction_of_string(text: str) -> Fraction:
    """``"p/q"`` or ``"p"`` (z3's numeral string) as an exact Fraction."""
    if len(text) > 2 * MAX_DIGITS + 2:
        raise TooLarge("numeral too large")
    num, _, den = text.partition("/")
    with _digits() if len(text) >= 4000 else contextlib.nullcontext():
        return Fraction(int(num)) if not den else Fraction(int(num), int(den))
