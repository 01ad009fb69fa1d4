"""SQL front end (sqlglot) for hive, spark, trino and presto.

`parse_with_sqlglot` turns a WHERE clause into a HudiExpression: AND/OR/NOT,
comparisons, BETWEEN, IN, IS [NOT] NULL, null-safe equality, LIKE 'abc%'
(a prefix), typed literals (DATE '...', TIMESTAMP '...', casts of literals).
Unquoted identifiers are case-insensitive in all four dialects and are
lowercased; quoted ones keep their case. A column may sit inside
order-preserving functions (`sql_functions`). Anything else (other
functions, column against column) becomes an Unknown leaf that never prunes.
`sql_print.to_sql` prints a tree back; `parse_sql(to_sql(e, d), d) == e`.
`expressions.sql` reads plain predicates without it and sends the rest here.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from expressions.dialect import Dialect, NanSemantics
from expressions.errors import SqlSyntaxError, line_column
from expressions.functions import Function, SessionZone, normalise
from expressions.sql_functions import FunctionReader
from expressions.sql_text import MAX_NESTING, number, ref_position
from expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Op,
    Or,
    Ref,
    StartsWith,
    Unknown,
    chain,
)

NEUTRAL = Dialect.SPARK.value  # the dialect Unknown leaves keep their SQL in

_OPS: dict[type[exp.Expr], Op] = {exp.EQ: Op.EQ, exp.NEQ: Op.NE, exp.LT: Op.LT, exp.LTE: Op.LE, exp.GT: Op.GT, exp.GTE: Op.GE, exp.NullSafeEQ: Op.NULL_SAFE_EQ}
OP_CLASSES: dict[Op, Any] = {v: k for k, v in _OPS.items()}  # the printer's (sql_print)

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INT", "BIGINT", "INTEGER"}
_FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL", "DOUBLE PRECISION"}
_STRING_TYPES = {"VARCHAR", "CHAR", "STRING", "TEXT", "NCHAR", "NVARCHAR"}
_TIMESTAMP_TYPES = {"TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPLTZ", "TIMESTAMPNTZ", "DATETIME"}


def parse_with_sqlglot(text: str, dialect: Dialect | str = Dialect.SPARK, time_zone: str = "UTC") -> Expr:
    """The HudiExpression of a WHERE clause (without the WHERE keyword).
    `time_zone` is the session time zone date and time functions use."""
    dialect = Dialect.of(dialect)
    try:
        tokens = sqlglot.tokenize(text, read=dialect.value)
    except TokenError as exc:
        start = getattr(exc, "start", None) or 0
        raise SqlSyntaxError(f"cannot tokenize {dialect} SQL (unclosed quote or bad character)", line_column(text, start)) from None
    _check_tokens(text, tokens)
    try:
        tree = sqlglot.parse_one(text, read=dialect.value)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise SqlSyntaxError(f"cannot parse {dialect} SQL: {_parse_problem(str(first.get('description', exc)))}",
                             (first.get("line", 1), first.get("col", 1))) from None
    except RecursionError:  # a safety net: _check_tokens bounds the nesting first
        raise SqlSyntaxError(f"predicate nested too deeply (at most {MAX_NESTING} levels)", (1, 1)) from None
    _check_boolean(text, tree, tokens)
    return _Converter(text, dialect, SessionZone(time_zone)).convert(tree)


_OPERATORS = {"GT": "'>'", "GTE": "'>='", "LT": "'<'", "LTE": "'<='", "EQ": "'='", "NEQ": "'<>'", "NullSafeEQ": "'<=>'",
              "Add": "'+'", "Sub": "'-'", "Mul": "'*'", "Div": "'/'", "Mod": "'%'", "And": "AND", "Or": "OR", "Not": "NOT",
              "Like": "LIKE", "ILike": "ILIKE", "In": "IN", "Between": "BETWEEN", "Is": "IS"}
_PARTS = {"expression": "right-hand side", "this": "left-hand side", "low": "lower bound", "high": "upper bound"}
_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _parse_problem(description: str) -> str:
    """sqlglot's description without its class names: `amount >` lacks a right-hand side."""
    missing = _MISSING.search(description)
    if missing:
        part = _PARTS.get(missing.group(1), missing.group(1))
        operator = _OPERATORS.get(missing.group(2), missing.group(2).upper())
        return f"incomplete {operator}: its {part} is missing"
    return re.sub(r"<class '[\w.]*?(\w+)'>", r"\1", description)


_STATEMENTS = tuple(getattr(exp, name) for name in (
    "DDL", "DML", "Command", "Drop", "Create", "Insert", "Update", "Delete", "Merge", "Set", "Use", "Alter",
) if hasattr(exp, name))
_NOT_BOOLEAN = (exp.Binary, exp.Literal, exp.Neg, exp.Star)  # arithmetic, strings, numbers


_ARITHMETIC = frozenset({TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH, TokenType.MOD, TokenType.DPIPE})


def _check_tokens(text: str, tokens: list[Any]) -> None:
    """One expression (no `;`), nested at most MAX_NESTING deep (parentheses
    and runs of NOT), before the recursive parser sees it."""
    depth = not_run = chained = 0
    for token in tokens:
        kind = token.token_type
        if kind is TokenType.SEMICOLON:
            raise SqlSyntaxError("only one boolean expression is accepted; ';' ends a statement", line_column(text, token.start))
        # `a + 1 + 1 ...` nests one level per operator in sqlglot's tree and in its printer: bounded as parentheses are
        chained = chained + 1 if kind in _ARITHMETIC else 0 if kind in (TokenType.AND, TokenType.OR, TokenType.COMMA) else chained
        if chained > MAX_NESTING:
            raise SqlSyntaxError(f"expression nested too deeply (at most {MAX_NESTING} arithmetic operators in one operand)",
                                 line_column(text, token.start))
        not_run = not_run + 1 if kind is TokenType.NOT else 0
        depth += 1 if kind is TokenType.L_PAREN else -1 if kind is TokenType.R_PAREN else 0
        if depth + not_run > MAX_NESTING:
            raise SqlSyntaxError(f"predicate nested too deeply (at most {MAX_NESTING} levels of parentheses and NOT)",
                                 line_column(text, token.start))


def _check_boolean(text: str, tree: exp.Expr, tokens: list[Any]) -> None:
    """Refuse statements and expressions that are not conditions."""
    root = tree
    while isinstance(root, exp.Paren):
        root = root.this
    candidates: list[exp.Expr] = [root, *tree.find_all(*_STATEMENTS)]
    for node in candidates:
        if isinstance(node, (*_STATEMENTS, exp.Query)):
            keyword = "SELECT" if isinstance(node, exp.Query) else node.key.upper()
            where = next((t.start for t in tokens if t.text.upper() == keyword), 0)
            raise SqlSyntaxError(f"{keyword} is not accepted: give one boolean expression (a WHERE clause without WHERE)",
                                 line_column(text, where))
    if isinstance(root, _NOT_BOOLEAN) and not isinstance(root, (exp.Predicate, exp.Connector, exp.Escape)):
        raise SqlSyntaxError(f"{root.sql()!r} is not a condition: give a boolean expression", (1, 1))


class _Converter:
    def __init__(self, text: str, dialect: Dialect, zone: SessionZone) -> None:
        self.text = text
        self.dialect = dialect
        self.functions = FunctionReader(zone, self.literal, whitespace_trim=dialect in (Dialect.TRINO, Dialect.PRESTO))

    def chain(self, node: exp.And | exp.Or) -> Expr:
        """A chain of one connector, walked without recursion (sqlglot nests
        `a AND b AND c` to the left; a parenthesised part is one term)."""
        terms: list[exp.Expr] = []
        pending: list[exp.Expr] = [node]
        while pending:
            current = pending.pop()
            if type(current) is type(node):
                pending += [current.expression, current.this]
            else:
                terms.append(current)
        return chain(And if isinstance(node, exp.And) else Or, [self.convert(term) for term in terms])

    def unknown(self, node: exp.Expr, reason: str) -> Unknown:
        bound_here = {p.name.lower() for lam in node.find_all(exp.Lambda) for p in lam.expressions}  # lambda parameters, not columns
        columns = (c for c in node.find_all(exp.Column) if not (len(c.parts) == 1 and c.name.lower() in bound_here))
        refs = tuple(r for r in (self.ref(c) for c in columns) if r is not None)
        return Unknown(reason, node.sql(dialect=NEUTRAL), refs)

    def convert(self, node: exp.Expr) -> Expr:
        converted = self._convert(node)
        inner = node.this if isinstance(node, exp.Escape) else node
        # sqlglot marks NOT LIKE / NOT IN / NOT BETWEEN with a `negate` argument.
        return Not(converted) if inner.args.get("negate") else converted

    def _convert(self, node: exp.Expr) -> Expr:
        if isinstance(node, exp.Paren):
            return self.convert(node.this)
        if isinstance(node, (exp.And, exp.Or)):
            return self.chain(node)
        if isinstance(node, exp.Not):
            return Not(self.convert(node.this))
        if isinstance(node, exp.Boolean):
            return AlwaysTrue() if node.this else AlwaysFalse()
        bare = self.ref(node) if isinstance(node, (exp.Column, exp.Dot)) else None
        if bare is not None:  # WHERE flag  ==  WHERE flag = TRUE
            return Comparison(Op.EQ, bare, Literal(True, "boolean"), self.dialect)
        if isinstance(node, exp.NullSafeNEQ):
            return Not(self.comparison(Op.NULL_SAFE_EQ, node))
        if type(node) in _OPS:
            return self.comparison(_OPS[type(node)], node)
        if isinstance(node, exp.Between):
            ref = self.ref(node.this)
            low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
            if ref is None or low is None or high is None:
                return self.unknown(node, "BETWEEN needs a column and two literals")
            return And(Comparison(Op.GE, ref, low, self.dialect), Comparison(Op.LE, ref, high, self.dialect))
        if isinstance(node, exp.In):
            ref = self.ref(node.this)
            if ref is None or node.args.get("query") is not None:
                return self.unknown(node, "IN needs a column and a list of literals")
            literals = [self.literal(e) for e in node.expressions]
            if any(lit is None for lit in literals):
                return self.unknown(node, "IN list holds something other than literals")
            return In(ref, tuple(literals), False, self.dialect)  # type: ignore[arg-type]
        if isinstance(node, exp.Is):
            ref = self.ref(node.this)
            if ref is not None and isinstance(node.expression, exp.Null):
                return IsNull(ref)
            return self.unknown(node, "IS with something other than NULL")
        if isinstance(node, exp.Escape) and isinstance(node.this, exp.Like):
            return self.like(node.this, node.expression)
        if isinstance(node, exp.Like):
            return self.like(node, None)
        if isinstance(node, exp.StartsWith):  # startswith(s, 'p'), starts_with in Trino: LIKE 'p%'
            ref, prefix = self.ref(node.this), self.literal(node.expression)
            if ref is not None and prefix is not None and prefix.kind == "string":
                return StartsWith(ref, prefix.value)
            return self.unknown(node, "startswith needs a column and a string")
        if isinstance(node, exp.IsNan) and self.dialect.nan_semantics is NanSemantics.ORDERED:
            # Spark's and Hive's NaN equals itself: isnan(x) is x = NaN there, and FALSE (not NULL) on NULL, so that
            # NOT isnan(x) holds for NULL (Trino's is_nan stays unknown: its = never holds for NaN)
            ref = self.ref(node.this)
            if ref is not None:
                return And(Comparison(Op.EQ, ref, Literal(float("nan"), "float"), self.dialect), IsNotNull(ref))
        return self.unknown(node, f"{type(node).__name__} is not supported for pruning")

    def comparison(self, op: Op, node: exp.Expr) -> Expr:
        left, right = node.this, node.expression
        ref, literal = self.ref(left), self.literal(right)
        if ref is None or literal is None:
            ref, literal = self.ref(right), self.literal(left)
            op = op.flipped()
        if ref is None or literal is None:
            return self.unknown(node, "a comparison of a column with a literal is needed")
        return Comparison(op, ref, literal, self.dialect)

    def like(self, node: exp.Like, escape: exp.Expr | None) -> Expr:
        ref = self.ref(node.this)
        pattern = node.expression
        if ref is None or not (isinstance(pattern, exp.Literal) and pattern.is_string):
            return self.unknown(node, "LIKE needs a column and a string pattern")
        escape_char = escape.this if isinstance(escape, exp.Literal) else ("\\" if self.dialect in (Dialect.HIVE, Dialect.SPARK) else None)
        text, wildcards = _split_like(pattern.this, escape_char)
        if not wildcards:
            return Comparison(Op.EQ, ref, Literal(text, "string"), self.dialect)
        if wildcards == [len(text)] and pattern.this.endswith("%"):
            return StartsWith(ref, text)
        return self.unknown(node, "only LIKE 'prefix%' prunes")

    def ref(self, node: exp.Expr) -> Ref | None:
        """A column, possibly inside order-preserving functions (`functions.py`)."""
        cast = None
        outer_first: list[Function] = []
        while True:
            while isinstance(node, exp.Paren):  # Hive prints `(col) IN (...)`
                node = node.this
            peeled = self.functions.peel(node, inside=bool(outer_first))
            if peeled is None:
                break
            applied, node = peeled
            outer_first.extend(reversed(applied))
        if isinstance(node, (exp.Cast, exp.TryCast)) and isinstance(node.this, (exp.Column, exp.Dot)):
            cast = node.to.sql(dialect=NEUTRAL).upper()
            node = node.this
        identifiers = _identifiers(node)
        if identifiers is None:
            return None
        names = [p.this if p.quoted else p.this.lower() for p in identifiers]
        path = tuple(names)
        return Ref(path, ref_position(self.text, path), cast, normalise(tuple(reversed(outer_first))))

    def literal(self, node: exp.Expr) -> Literal | None:
        if isinstance(node, exp.Neg):
            inner = self.literal(node.this)
            if inner is None or inner.kind not in ("integer", "decimal", "float"):
                return None
            return Literal(-inner.value, inner.kind)
        if isinstance(node, exp.Null):
            return Literal(None, "null")
        if isinstance(node, exp.Boolean):
            return Literal(bool(node.this), "boolean")
        if isinstance(node, exp.Literal):
            if node.is_string:
                return Literal(node.this, "string")
            return number(node.this)
        if isinstance(node, exp.HexString):  # X'0103': a binary literal
            try:
                return Literal(bytes.fromhex(node.this), "binary")
            except ValueError:
                return None
        if isinstance(node, (exp.Cast, exp.TryCast)):
            inner = self.literal(node.this)
            if inner is None:
                return None
            try:
                return _cast_literal(inner, node.to)
            except (ValueError, ArithmeticError) as exc:
                if isinstance(node, exp.TryCast):
                    return Literal(None, "null")  # TRY_CAST (and the dialects' lenient CAST) of a bad value is NULL
                # a typed literal that is no value of its type is an error in Spark and Trino, not a filter that keeps everything
                kind = node.to.sql(dialect=NEUTRAL)
                found = self.text.find(str(inner.value))
                why = f": {exc}" if str(exc) and str(inner.value) not in str(exc) else ""
                raise SqlSyntaxError(f"{kind} '{inner.value}' is not a valid {kind.lower()}{why}",
                                     line_column(self.text, max(found - 1, 0))) from None
        return None


def _identifiers(node: exp.Expr) -> list[exp.Identifier] | None:
    """Identifiers of a column reference in source order (a.b.c parses as Dot(Column, ...))."""
    if isinstance(node, exp.Column):
        return [p for p in node.parts if isinstance(p, exp.Identifier)]
    if isinstance(node, exp.Dot):
        head = _identifiers(node.this)
        tail = node.expression
        if head is None or not isinstance(tail, exp.Identifier):
            return None
        return head + [tail]
    return None


def _cast_literal(inner: Literal, to: exp.DataType) -> Literal | None:
    """The literal as the type; ValueError or ArithmeticError for a value the
    type cannot hold (the caller names it); None for types not read here."""
    target = to.this.name if hasattr(to.this, "name") else str(to.this)
    value = inner.value
    if value is None:
        return Literal(None, "null")
    if target == "DATE":
        return Literal(date.fromisoformat(str(value).strip()), "date")
    if target in _TIMESTAMP_TYPES:
        return Literal(datetime.fromisoformat(str(value).strip().replace(" ", "T", 1)), "timestamp")
    if target in _INTEGER_TYPES:
        return Literal(int(Decimal(str(value))), "integer")
    if target in _FLOAT_TYPES:
        return Literal(float(value), "float")
    if target == "DECIMAL":
        return Literal(Decimal(str(value)), "decimal")
    if target in _STRING_TYPES:
        return Literal(str(value), "string")
    if target == "BOOLEAN":
        text = str(value).strip().lower()
        if text not in _BOOLEAN_TEXTS:
            raise ValueError(f"{value!r} is not a boolean")
        return Literal(_BOOLEAN_TEXTS[text], "boolean")
    return None


# What Spark's CAST(string AS BOOLEAN) accepts.
_BOOLEAN_TEXTS = {**dict.fromkeys(("true", "t", "yes", "y", "1"), True), **dict.fromkeys(("false", "f", "no", "n", "0"), False)}


def _split_like(pattern: str, escape: str | None) -> tuple[str, list[int]]:
    """Literal text of a LIKE pattern and the positions of its wildcards."""
    out: list[str] = []
    wildcards: list[int] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escape and ch == escape and i + 1 < len(pattern):
            out.append(pattern[i + 1])
            i += 2
            continue
        if ch in "%_":
            wildcards.append(len(out))
            if ch == "_":
                out.append("\0")  # a single-character wildcard breaks the prefix
        else:
            out.append(ch)
        i += 1
    return "".join(out), wildcards


# Names this module offered before it was split, for one release.
_MOVED = {"to_sql": "expressions.sql_print"}


def __getattr__(name: str) -> Any:
    from metadata._moved import moved_attribute  # only when an old name is asked for: expressions loads without metadata

    return moved_attribute(__name__, name, _MOVED)
