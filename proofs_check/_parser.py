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
than ``sqrt``/``exp``/``log`` is an error naming the function and its column). Digits,
letters and spaces are ASCII only (Python's ``\\d`` and ``str.isdigit`` accept ``৪``).

**The domain as written.** sympy simplifies while the tree is built (``sqrt(v)^2 -> v``,
``exp(log(K)) -> K``, ``x/x -> 1``), which would drop the conditions under which the text
is defined. The parser therefore records, while parsing and before any simplification,
the domain of every operation of the text: ``a >= 0`` for ``sqrt(a)`` and ``a^(p/q)``
(``q > 1``; ``a > 0`` if ``p/q < 0``), ``a > 0`` for ``log(a)``, ``b != 0`` for ``a/b`` and
``b^-k``. **Choice** (ours): a non-integer power ``a^(p/q)`` is defined for ``a >= 0`` only
(the principal real power; ``(-8)^(1/3)`` is not a real number here).
:func:`parse_formula` returns the relation with its domain; the checker assumes the
premises' domains and proves the conclusion's (issue 7).

**Constants** must stay small and real: exact rationals of at most
:data:`MAX_BITS` bits, ``exp`` of a constant within ``+-MAX_EXP_ARGUMENT``, and the sign of
every constant argument of sqrt/log/power/division decided rigorously (interval
arithmetic), so ``(-8)^(1/3)``, ``log(exp(-2) - 1)`` and ``1e300^15`` are input errors.
"""
from __future__ import annotations

import dataclasses
import itertools
import re

import sympy as sp

from proofs_check import _rigorous
from proofs_check._limits import LIMITS

FUNCTIONS = {"sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log}
RELATIONS = {"<=": sp.Le, ">=": sp.Ge, "<": sp.Lt, ">": sp.Gt, "=": sp.Eq, "==": sp.Eq}
MAX_LENGTH = LIMITS.max_formula_chars      # characters in one formula
MAX_DEPTH = LIMITS.max_depth               # nesting of parentheses / unary operators
MAX_EXPONENT = LIMITS.max_exponent         # |numeric exponent|, so `2^999999999` cannot exhaust memory
MAX_BITS = LIMITS.max_number_bits          # bits of any exact constant, so `1e300^15` cannot either
MAX_NUMBER_CHARS = LIMITS.max_number_chars  # digits of one numeric literal
MAX_EXP_ARGUMENT = LIMITS.max_exp_argument  # |argument| of exp of a constant

# ASCII only: [0-9], not \d (which matches Bengali or fullwidth digits); spaces are [ \t\r\n]
_TOKEN = re.compile(
    r"(?P<ws>[ \t\r\n]+)|(?P<num>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op><=|>=|==|\*\*|[-+*/^()<>=])"
)
_UNDEFINED = itertools.count()   # names of sub-terms that are nowhere real ("!" cannot be typed)


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
    """Recursive descent over the token list; every method returns a sympy object.

    While parsing it records ``domain``: the conditions under which the text *as written*
    is defined (sympy may simplify the operation away right after).
    """

    def __init__(self, toks: list[_Tok], key: str):
        self.toks, self.i, self.key, self.depth = toks, 0, key, 0
        self.domain: list = []
        self._seen: set = set()

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
            out = self._checked(out + rhs if op.text == "+" else out - rhs, op)
        return out

    def term(self) -> sp.Expr:
        out = self.unary()
        while (op := self.take("*", "/")) is not None:
            rhs = self.unary()
            if op.text == "/":
                if rhs == 0:
                    raise self.error("division by zero", op)
                self._nonzero(rhs, op)
            out = self._checked(out * rhs if op.text == "*" else out / rhs, op)
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
        value = self._checked(base**exponent, op)
        # nesting, e.g. ((x^64)^64)^64, must not escape the exponent limit
        for pw in value.atoms(sp.Pow):
            if pw.exp.is_Rational and (abs(pw.exp.p) > MAX_EXPONENT or pw.exp.q > MAX_EXPONENT):
                raise self.error(f"combined exponent {pw.exp} outside [-{MAX_EXPONENT}, {MAX_EXPONENT}]", start)
        if exponent.q != 1:
            self._nonnegative(base, op, strict=exponent < 0, what=f"({base})^({exponent})")
        elif exponent < 0:
            self._nonzero(base, op)
        return value

    def atom(self) -> sp.Expr:
        tok = self.tok
        if tok.kind == "num":
            self.i += 1
            return self._checked(self._number(tok), tok)
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
            value = self._checked(FUNCTIONS[tok.text](arg), tok)
            if tok.text != "exp":
                self._nonnegative(arg, tok, strict=tok.text == "log", what=f"{tok.text}({arg})")
            return value
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

    # -- domain as written, constants -------------------------------------------------
    def _record(self, condition) -> None:
        if condition is not sp.true and condition not in self.domain:
            self.domain.append(condition)

    def _sign(self, c: sp.Expr, tok: _Tok, what: str) -> int:
        try:
            return _rigorous.sign(c)
        except _rigorous.Undefined:
            raise self.error(f"{what} is not a real number", tok) from None
        except _rigorous.Undecided:
            raise self.error(f"the sign of the constant {c} in {what} cannot be decided", tok) from None

    def _nonzero(self, b: sp.Expr, tok: _Tok) -> None:
        """``b != 0`` for a divisor or the base of a negative power."""
        if b.free_symbols:
            self._record(sp.Ne(b, 0))
        elif self._sign(b, tok, f"1/({b})") == 0:
            raise self.error("division by zero", tok)

    def _nonnegative(self, a: sp.Expr, tok: _Tok, strict: bool, what: str) -> None:
        """``a >= 0`` (``a > 0`` if ``strict``) for sqrt, log and non-integer powers."""
        if a.free_symbols:
            self._record(sp.Gt(a, 0) if strict else sp.Ge(a, 0))
            return
        s = self._sign(a, tok, what)
        if s < 0 or (strict and s == 0):
            raise self.error(f"{what} is not a real number", tok)

    def _checked(self, value: sp.Expr, tok: _Tok) -> sp.Expr:
        """``value`` if it is a finite real with small constants; a placeholder if nowhere real."""
        if value.has(sp.zoo, sp.nan, sp.oo, -sp.oo, sp.I):
            if not value.free_symbols:
                raise self.error(f"{value} is not a finite real number", tok)
            # sympy proved an argument negative: the text is nowhere defined (its domain is false)
            self._record(sp.false)
            return sp.Symbol(f"!undefined{next(_UNDEFINED)}", real=True)
        self._check_constants(value, tok)
        return value

    def _check_constants(self, value: sp.Expr, tok: _Tok) -> None:
        """Every new constant in ``value``: rationals of at most MAX_BITS bits, exp arguments bounded."""
        stack = [value]
        while stack:
            node = stack.pop()
            if node in self._seen or node.is_Symbol:
                continue
            self._seen.add(node)
            if node.is_Rational and max(node.p.bit_length(), node.q.bit_length()) > MAX_BITS:
                raise self.error(f"number too large: a constant has more than {MAX_BITS} bits", tok)
            if isinstance(node, sp.exp) and not node.args[0].free_symbols:
                stack.extend(node.args)
                self._check_exp_argument(node.args[0], tok)
                continue
            if isinstance(node, sp.Pow) and not node.base.free_symbols and node.exp.is_Rational and node.exp.q != 1:
                self._nonnegative(node.base, tok, strict=node.exp < 0, what=f"({node.base})^({node.exp})")
            if isinstance(node, sp.log) and not node.args[0].free_symbols:
                self._nonnegative(node.args[0], tok, strict=True, what=f"log({node.args[0]})")
            stack.extend(node.args)

    def _check_exp_argument(self, arg: sp.Expr, tok: _Tok) -> None:
        self._check_constants(arg, tok)
        try:
            lo, hi = _rigorous.enclose(arg)
        except (_rigorous.Undefined, _rigorous.Undecided):
            raise self.error(f"exp argument {arg} is not a decidable real number", tok) from None
        if max(abs(lo), abs(hi)) > MAX_EXP_ARGUMENT:
            raise self.error(f"exp argument {str(arg)[:40]} outside [-{MAX_EXP_ARGUMENT}, {MAX_EXP_ARGUMENT}]", tok)


@dataclasses.dataclass(frozen=True)
class Formula:
    """A parsed relation and its domain *as written*: the conditions (``a >= 0`` for
    ``sqrt(a)``, ``a > 0`` for ``log(a)``, ``b != 0`` for ``a/b``, ...) under which the text is
    defined, recorded before sympy's simplification could drop them."""

    relation: sp.core.relational.Relational
    domain: tuple = ()


def parse_formula(text: str, key: str = "formula") -> Formula:
    """Parse one relation of the restricted grammar, with the domain of the text as written.

    Example:
        >>> f = parse_formula("sqrt(v)^2 <= v")
        >>> f.relation, f.domain        # sympy simplified sqrt(v)^2, the domain remembers it
        (v <= v, (v >= 0,))
        >>> parse_formula("exp(log(K)) = K/x").domain
        (K > 0, Ne(x, 0))
    """
    p = _Parser(tokenize(text, key), key)
    rel = p.relation()
    return Formula(rel, tuple(p.domain))


def parse_relation(text: str, key: str = "formula") -> sp.core.relational.Relational:
    """Parse one relation ``expr CMP expr`` of the restricted grammar into sympy.

    The domain of the text as written is dropped here; :func:`parse_formula` keeps it.

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
    return parse_formula(text, key).relation


def parse_expression(text: str, key: str = "formula") -> sp.Expr:
    """Parse one expression (no comparison) of the restricted grammar; see :func:`parse_relation`."""
    p = _Parser(tokenize(text, key), key)
    out = p.expr()
    if p.tok.kind != "end":
        raise p.unexpected("an operator or end of formula")
    return out
