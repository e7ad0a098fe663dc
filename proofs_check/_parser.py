"""A restricted formula grammar for user proof chains (no Python evaluation).

User text never reaches ``sympify``/``parse_expr`` (both evaluate Python). A small
tokenizer and a recursive-descent parser build sympy objects directly::

    relation := expr CMP expr            CMP in  <=  >=  <  >  =  ==
    expr     := term (('+' | '-') term)*
    term     := unary (('*' | '/') unary)*
    unary    := ('+' | '-') unary | power
    power    := atom (('^' | '**') unary)?          right-associative, numeric exponent
    atom     := NUMBER | NAME | FUNC '(' expr ')' | '(' expr ')'
    FUNC     := sqrt | exp | log

Names become plain real symbols (``sp.Symbol(name, real=True)``); no name has a special
meaning (``E``, ``pi`` and ``__import__`` are just symbols, and calling any name other
than ``sqrt``/``exp``/``log`` is an error naming the function and its column).
"""
from __future__ import annotations

import dataclasses
import re

import sympy as sp

FUNCTIONS = {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log}
RELATIONS = {"<=": sp.Le, ">=": sp.Ge, "<": sp.Lt, ">": sp.Gt, "=": sp.Eq, "==": sp.Eq}
MAX_LENGTH = 2000          # characters in one formula
MAX_DEPTH = 64             # nesting of parentheses / unary operators
MAX_EXPONENT = 64          # |numeric exponent|, so `2^999999999` cannot exhaust memory
MAX_BITS = 4096            # size of an exact numeric power, so `((3^64)^64)^64` cannot either
MAX_NUMBER_CHARS = 40      # digits of one numeric literal

_TOKEN = re.compile(
    r"(?P<ws>\s+)|(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><=|>=|==|\*\*|[-+*/^()<>=])"
)


class ChainSyntaxError(ValueError):
    """A malformed formula: names the formula (``key``), the 1-based ``column`` and why."""

    def __init__(self, key: str, column: int, message: str):
        self.key, self.column, self.reason = key, column, message
        super().__init__(f"{key}: {message} at column {column}")


@dataclasses.dataclass(frozen=True)
class _Tok:
    kind: str    # "num" | "name" | "op" | "end"
    text: str
    col: int     # 1-based column of the first character


def tokenize(text: str, key: str = "formula") -> list[_Tok]:
    """Split ``text`` into tokens; any other character is an error with its column."""
    if not isinstance(text, str):
        raise ChainSyntaxError(key, 1, f"expected a string, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ChainSyntaxError(key, MAX_LENGTH + 1, f"formula longer than {MAX_LENGTH} characters")
    toks, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ChainSyntaxError(key, pos + 1, f"unexpected character {text[pos]!r}")
        if m.lastgroup != "ws":
            toks.append(_Tok(m.lastgroup, m.group(), pos + 1))
        pos = m.end()
    toks.append(_Tok("end", "", len(text) + 1))
    return toks


class _Parser:
    """Recursive descent over the token list; every method returns a sympy object."""

    def __init__(self, toks: list[_Tok], key: str):
        self.toks, self.i, self.key, self.depth = toks, 0, key, 0

    # -- helpers ----------------------------------------------------------------------
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def error(self, message: str, tok: _Tok | None = None) -> ChainSyntaxError:
        return ChainSyntaxError(self.key, (tok or self.tok).col, message)

    def unexpected(self, expected: str) -> ChainSyntaxError:
        tok = self.tok
        what = "end of formula" if tok.kind == "end" else repr(tok.text)
        return self.error(f"unexpected {what}, expected {expected}")

    def take(self, *texts: str) -> _Tok | None:
        if self.tok.kind == "op" and self.tok.text in texts:
            self.i += 1
            return self.toks[self.i - 1]
        return None

    def nested(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(f"formula nested deeper than {MAX_DEPTH} levels")

    # -- grammar ----------------------------------------------------------------------
    def relation(self) -> sp.core.relational.Relational:
        lhs = self.expr()
        op = self.take(*RELATIONS)
        if op is None:
            raise self.unexpected("a comparison (<=, >=, <, >, =)")
        rhs = self.expr()
        if self.tok.kind == "op" and self.tok.text in RELATIONS:
            raise self.error("chained comparisons are not allowed; write one relation per line")
        if self.tok.kind != "end":
            raise self.unexpected("an operator or end of formula")
        return RELATIONS[op.text](lhs, rhs, evaluate=False)

    def expr(self) -> sp.Expr:
        out = self.term()
        while (op := self.take("+", "-")) is not None:
            rhs = self.term()
            out = out + rhs if op.text == "+" else out - rhs
        return out

    def term(self) -> sp.Expr:
        out = self.unary()
        while (op := self.take("*", "/")) is not None:
            rhs = self.unary()
            if op.text == "/" and rhs == 0:
                raise self.error("division by zero", op)
            out = out * rhs if op.text == "*" else out / rhs
        return out

    def unary(self) -> sp.Expr:
        if (op := self.take("+", "-")) is not None:
            self.nested()
            inner = self.unary()
            self.depth -= 1
            return -inner if op.text == "-" else inner
        return self.power()

    def power(self) -> sp.Expr:
        base = self.atom()
        op = self.take("^", "**")
        if op is None:
            return base
        start = self.tok
        self.nested()
        exponent = self.unary()
        self.depth -= 1
        if not exponent.is_Rational:
            raise self.error("exponent must be a numeric constant (use exp(...) otherwise)", start)
        if abs(exponent) > MAX_EXPONENT or exponent.q > MAX_EXPONENT:
            raise self.error(f"exponent {exponent} outside [-{MAX_EXPONENT}, {MAX_EXPONENT}]", start)
        if base == 0 and exponent < 0:
            raise self.error("0 raised to a negative power", op)
        if base.is_Rational and abs(exponent) * max(base.p.bit_length(), base.q.bit_length()) > MAX_BITS:
            raise self.error(f"number too large: {base}^{exponent} has more than {MAX_BITS} bits", op)
        value = base**exponent
        # nesting, e.g. ((x^64)^64)^64, must not escape the exponent limit
        for pw in value.atoms(sp.Pow):
            if pw.exp.is_Rational and (abs(pw.exp.p) > MAX_EXPONENT or pw.exp.q > MAX_EXPONENT):
                raise self.error(f"combined exponent {pw.exp} outside [-{MAX_EXPONENT}, {MAX_EXPONENT}]", start)
        return self._defined(value, op)

    def _defined(self, value: sp.Expr, tok: _Tok) -> sp.Expr:
        """Reject values that are not finite reals (``log(0)``, ``sqrt(-1)``)."""
        if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
            raise self.error(f"{value} is not a finite real number", tok)
        return value

    def atom(self) -> sp.Expr:
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            return self._number(tok)
        if tok.kind == "name":
            self.i += 1
            return self._name(tok)
        if self.take("(") is not None:
            return self._group(tok)
        raise self.unexpected("a number, a name or '('")

    def _number(self, tok: _Tok) -> sp.Rational:
        if len(tok.text) > MAX_NUMBER_CHARS:
            raise self.error(f"number longer than {MAX_NUMBER_CHARS} characters", tok)
        mantissa, _, exp10 = tok.text.lower().partition("e")
        if exp10 and abs(int(exp10)) > 300:
            raise self.error("number exponent outside [-300, 300]", tok)
        return sp.Rational(mantissa) * sp.Integer(10) ** int(exp10 or 0)

    def _name(self, tok: _Tok) -> sp.Expr:
        is_call = self.tok.kind == "op" and self.tok.text == "("
        if tok.text in FUNCTIONS:
            if not is_call:
                raise self.error(f"function {tok.text!r} needs an argument in parentheses", tok)
            self.i += 1
            arg = self._group(tok)
            return self._defined(FUNCTIONS[tok.text](arg), tok)
        if is_call:
            raise self.error(f"unknown function {tok.text!r}; allowed: {', '.join(FUNCTIONS)}", tok)
        return sp.Symbol(tok.text, real=True)

    def _group(self, opener: _Tok) -> sp.Expr:
        self.nested()
        inner = self.expr()
        self.depth -= 1
        if self.take(")") is None:
            raise self.unexpected(f"')' closing the '(' of column {opener.col}")
        return inner


def parse_relation(text: str, key: str = "formula") -> sp.core.relational.Relational:
    """Parse one relation ``expr CMP expr`` of the restricted grammar into sympy.

    Args:
        text: the formula, e.g. ``"Lnew <= Lold - dR/2 + 2*epsM"``; ``^`` is a power.
        key: how error messages name the formula (e.g. ``"premises[2]"``).

    Returns:
        A sympy relation (``Le``, ``Ge``, ``Lt``, ``Gt`` or ``Eq``) over real symbols.

    Raises:
        ChainSyntaxError: malformed text; the message names ``key`` and the column.

    Example:
        >>> parse_relation("y <= 2*x^2 + sqrt(z)")
        y <= 2*x**2 + sqrt(z)
        >>> parse_relation("__import__('os') <= 1", key="premises[0]")
        Traceback (most recent call last):
        ...
        proofs_check._parser.ChainSyntaxError: premises[0]: unexpected character "'" at column 12
    """
    return _Parser(tokenize(text, key), key).relation()


def parse_expression(text: str, key: str = "formula") -> sp.Expr:
    """Parse one expression (no comparison) of the restricted grammar; see :func:`parse_relation`."""
    p = _Parser(tokenize(text, key), key)
    out = p.expr()
    if p.tok.kind != "end":
        raise p.unexpected("an operator or end of formula")
    return out
