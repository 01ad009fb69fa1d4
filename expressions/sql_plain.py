"""Plain predicates read and printed without sqlglot: importing sqlglot
takes about 70 ms, most of a cold `scan()` or `plan --where` (issue 39).

Plain is what most filters are: unquoted column names (dotted parts
allowed), integer and decimal numbers (a leading minus too), strings in
single quotes without escapes, TRUE, FALSE and NULL; comparisons (`=`,
`<>`, `!=`, `<`, `<=`, `>`, `>=`) of a column with a literal either way
round, [NOT] BETWEEN, [NOT] IN lists of literals, IS [NOT] NULL, a bare
boolean column, AND, OR, NOT and parentheses. Anything else (a keyword
or quote where a name stands, a function, LIKE, a cast, a comment,
exponents and suffixed numbers, deep nesting) makes `parse_plain` answer
None, and `sql_glot` reads the text. On what it reads, the tree is the one
sqlglot's front end gives, positions and origins included
(`tests/test_sql_plain.py` checks it over a seeded random corpus in every
dialect).

`print_plain` prints such a tree (and trees built by hand of the same
leaves) as `sql_glot.to_sql` does in every dialect: unquoted lowercase
names that are no keyword, integers, decimals, floats (as CASTs), strings
without quotes, backslashes or control characters, TRUE, FALSE and NULL;
None for anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from expressions.dialect import Dialect
from expressions.sql_keywords import SQL_KEYWORDS
from expressions.sql_text import MAX_NESTING, PLAIN_NAME, number, ref_position
from expressions.tree import AlwaysFalse, AlwaysTrue, And, Comparison, Expr, In, IsNotNull, IsNull, Literal, Not, Op, Or, Ref, chain

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(?![\w.'"`])
  | (?P<number>\d+(?:\.\d+)?)(?![\w.])
  | (?P<string>'[^'\\]*')(?!')
  | (?P<op><=>|<>|!=|<=|>=|==|[=<>(),-])
""", re.VERBOSE | re.ASCII)
_OPS = {"=": Op.EQ, "<>": Op.NE, "!=": Op.NE, "<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE}
_WORDS = ("AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE")


class _NotPlain(Exception):
    """The text is not plain: sqlglot reads it."""


@dataclass(frozen=True)
class _Token:
    kind: str  # name, number, string, op, or a keyword of _WORDS
    text: str


def parse_plain(text: str, dialect: Dialect) -> Expr | None:
    """The tree of a plain predicate, None if the text is not plain."""
    try:
        tokens = list(_tokens(text))
        parser = _Parser(text, dialect, tokens)
        tree = parser.disjunction(0)
        if parser.at < len(tokens):
            return None
        return tree
    except _NotPlain:
        return None


def _tokens(text: str) -> Iterator[_Token]:
    at = 0
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise _NotPlain
        at = match.end()
        kind = match.lastgroup
        assert kind is not None
        if kind == "space":
            continue
        value = match.group()
        if kind == "name":
            upper = value.upper()
            if upper in _WORDS:
                yield _Token(upper, value)
                continue
            if any(part.upper() in SQL_KEYWORDS for part in value.split(".")):
                raise _NotPlain
        elif kind == "op" and value in ("<=>", "=="):
            raise _NotPlain  # Spark's and Hive's own operators
        yield _Token(kind, value)


class _Parser:
    def __init__(self, text: str, dialect: Dialect, tokens: list[_Token]) -> None:
        self.text = text
        self.dialect = dialect
        self.tokens = tokens
        self.at = 0

    def peek(self, offset: int = 0) -> _Token | None:
        return self.tokens[self.at + offset] if self.at + offset < len(self.tokens) else None

    def take(self, kind: str, text: str | None = None) -> bool:
        token = self.peek()
        if token is not None and token.kind == kind and (text is None or token.text == text):
            self.at += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None) -> None:
        if not self.take(kind, text):
            raise _NotPlain

    def disjunction(self, depth: int) -> Expr:
        terms = [self.conjunction(depth)]
        while self.take("OR"):
            terms.append(self.conjunction(depth))
        return terms[0] if len(terms) == 1 else chain(Or, terms)

    def conjunction(self, depth: int) -> Expr:
        terms = [self.negation(depth)]
        while self.take("AND"):
            terms.append(self.negation(depth))
        return terms[0] if len(terms) == 1 else chain(And, terms)

    def negation(self, depth: int) -> Expr:
        if self.take("NOT"):
            if depth + 1 > MAX_NESTING:
                raise _NotPlain  # sqlglot's front end says how deep is too deep
            return Not(self.negation(depth + 1))
        return self.predicate(depth)

    def predicate(self, depth: int) -> Expr:
        if self.take("op", "("):
            if depth + 1 > MAX_NESTING:
                raise _NotPlain
            inner = self.disjunction(depth + 1)
            self.expect("op", ")")
            return inner
        left = self.operand()
        token = self.peek()
        if token is not None and token.kind == "op" and token.text in _OPS:
            self.at += 1
            return self.comparison(_OPS[token.text], left, self.operand())
        negated = token is not None and token.kind == "NOT" and self.peek(1) is not None and self.peek(1).kind in ("BETWEEN", "IN")  # type: ignore[union-attr]
        if negated:
            self.at += 1
        if self.take("BETWEEN"):
            ref = self.column(left)
            low = self.literal(self.operand())
            self.expect("AND")
            high = self.literal(self.operand())
            between = And(Comparison(Op.GE, ref, low, self.dialect), Comparison(Op.LE, ref, high, self.dialect))
            return Not(between) if negated else between
        if self.take("IN"):
            ref = self.column(left)
            self.expect("op", "(")
            literals = [self.literal(self.operand())]
            while self.take("op", ","):
                literals.append(self.literal(self.operand()))
            self.expect("op", ")")
            listed = In(ref, tuple(literals), False, self.dialect)
            return Not(listed) if negated else listed
        if self.take("IS"):
            ref = self.column(left)
            is_not = self.take("NOT")
            self.expect("NULL")
            return Not(IsNull(ref)) if is_not else IsNull(ref)
        if isinstance(left, Ref):  # WHERE flag  ==  WHERE flag = TRUE
            return Comparison(Op.EQ, left, Literal(True, "boolean"), self.dialect)
        if left.kind == "boolean":
            return AlwaysTrue() if left.value else AlwaysFalse()
        raise _NotPlain  # a number or string alone is no condition: sqlglot's front end says so

    def comparison(self, op: Op, left: Ref | Literal, right: Ref | Literal) -> Expr:
        if isinstance(left, Ref) and isinstance(right, Literal):
            return Comparison(op, left, right, self.dialect)
        if isinstance(left, Literal) and isinstance(right, Ref):
            return Comparison(op.flipped(), right, left, self.dialect)
        raise _NotPlain  # column against column, or literal against literal: an Unknown leaf sqlglot's front end words

    def operand(self) -> Ref | Literal:
        token = self.peek()
        if token is None:
            raise _NotPlain
        self.at += 1
        if token.kind == "name":
            path = tuple(part.lower() for part in token.text.split("."))
            return Ref(path, ref_position(self.text, path))
        if token.kind == "number":
            return number(token.text)
        if token.kind == "op" and token.text == "-":
            following = self.peek()
            if following is None or following.kind != "number":
                raise _NotPlain
            self.at += 1
            value = number(following.text)
            return Literal(-value.value, value.kind)
        if token.kind == "string":
            return Literal(token.text[1:-1], "string")
        if token.kind in ("TRUE", "FALSE"):
            return Literal(token.kind == "TRUE", "boolean")
        if token.kind == "NULL":
            return Literal(None, "null")
        raise _NotPlain

    @staticmethod
    def column(operand: Ref | Literal) -> Ref:
        if not isinstance(operand, Ref):
            raise _NotPlain
        return operand

    @staticmethod
    def literal(operand: Ref | Literal) -> Literal:
        if not isinstance(operand, Literal):
            raise _NotPlain
        return operand


_PRINTED_OPS = {Op.EQ: "=", Op.NE: "<>", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_PRINTED_STRING = re.compile(r"[^'\\\x00-\x1f\x7f]*")


def print_plain(expr: Expr) -> str | None:
    """The SQL `sql_glot.to_sql` prints for a plain tree (the same in every dialect), None for any other."""
    try:
        return _printed(expr)
    except _NotPlain:
        return None


def _printed(expr: Expr) -> str:
    if isinstance(expr, (And, Or)):
        # as sql_glot's `_paren`: a left operand of the same connector stands bare, other AND/OR operands in parentheses
        return f"{_operand(expr.left, type(expr))} {'AND' if isinstance(expr, And) else 'OR'} {_operand(expr.right, None)}"
    if isinstance(expr, Not):
        return f"NOT ({_printed(expr.child)})"
    if isinstance(expr, AlwaysTrue):
        return "TRUE"
    if isinstance(expr, AlwaysFalse):
        return "FALSE"
    if isinstance(expr, Comparison) and expr.op in _PRINTED_OPS:
        return f"{_printed_column(expr.ref)} {_PRINTED_OPS[expr.op]} {_printed_literal(expr.literal)}"
    if isinstance(expr, In):
        listed = f"{_printed_column(expr.ref)} IN ({', '.join(_printed_literal(literal) for literal in expr.literals)})"
        return f"NOT {listed}" if expr.negated else listed
    if isinstance(expr, IsNull):
        return f"{_printed_column(expr.ref)} IS NULL"
    if isinstance(expr, IsNotNull):
        return f"NOT {_printed_column(expr.ref)} IS NULL"
    raise _NotPlain  # null-safe equality, LIKE prefixes, unknown leaves: sqlglot prints them in each dialect's words


def _operand(expr: Expr, chained: type[And] | type[Or] | None) -> str:
    text = _printed(expr)
    return f"({text})" if isinstance(expr, (And, Or)) and type(expr) is not chained else text


def _printed_column(ref: Ref) -> str:
    if ref.cast or ref.functions or not all(PLAIN_NAME.fullmatch(part) and part.upper() not in SQL_KEYWORDS for part in ref.path):
        raise _NotPlain  # quoted in each dialect's way, or a function of the column
    return ".".join(ref.path)


def _printed_literal(literal: Literal) -> str:
    value = literal.value
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal) and value.is_finite():
        text = format(value, "f")
        return text if "." in text else text + ".0"  # a point keeps it a decimal
    if isinstance(value, float):
        return f"CAST('{value!r}' AS DOUBLE)"
    if isinstance(value, str) and _PRINTED_STRING.fullmatch(value):
        return f"'{value}'"
    raise _NotPlain  # dates, times, bytes, strings each dialect escapes its own way


__all__ = ["parse_plain", "print_plain"]
