"""HudiExpression trees printed as SQL in a dialect (hive, spark, trino,
presto) through sqlglot: what the explanation's residual predicate says,
and what `expressions.sql_glot` reads back to the same tree."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect as GlotDialect

from expressions.dialect import Dialect
from expressions.functions import to_sql as function_sql
from expressions.sql_glot import NEUTRAL, OP_CLASSES
from expressions.sql_text import PLAIN_NAME
from expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Ref,
    StartsWith,
    Unknown,
)


def to_sql(expr: Expr, dialect: Dialect | str = Dialect.SPARK) -> str:
    """SQL text of a tree in a dialect."""
    glot = GlotDialect.get_or_raise(Dialect.of(dialect).value)
    return glot.generate(_to_glot(expr), copy=False)  # a tree of its own: the copy sqlglot makes is not needed


def _column(ref: Ref) -> exp.Expr:
    parts = [exp.to_identifier(p, quoted=not PLAIN_NAME.fullmatch(p)) for p in ref.path]
    column: exp.Expr = exp.Column(this=parts[-1])
    if len(parts) == 2:
        column = exp.Column(this=parts[1], table=parts[0])
    elif len(parts) > 2:
        column = exp.Dot.build([exp.Column(this=parts[0]), *parts[1:]])
    if ref.cast:
        column = exp.Cast(this=column, to=exp.DataType.build(ref.cast, dialect=NEUTRAL))
    if ref.functions:
        return sqlglot.parse_one(function_sql(ref.functions, column.sql(dialect=NEUTRAL)), read=NEUTRAL)
    return column


def _literal(value: Any) -> exp.Expr:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, Decimal):
        text = format(value, "f")
        return exp.Literal.number(text if "." in text else text + ".0")  # a point keeps it a decimal
    if isinstance(value, float):
        return exp.Cast(this=exp.Literal.string(repr(value)), to=exp.DataType.build("DOUBLE"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, datetime):
        return exp.Cast(this=exp.Literal.string(value.replace(tzinfo=None).isoformat(sep=" ")), to=exp.DataType.build("TIMESTAMP"))
    if isinstance(value, date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if isinstance(value, bytes):
        return exp.HexString(this=value.hex().upper())
    raise TypeError(f"no SQL literal for {type(value).__name__}")


def _to_glot(expr: Expr) -> exp.Expr:
    if isinstance(expr, And):
        return exp.And(this=_paren(expr.left, And), expression=_paren(expr.right))
    if isinstance(expr, Or):
        return exp.Or(this=_paren(expr.left, Or), expression=_paren(expr.right))
    if isinstance(expr, Not):
        return exp.Not(this=exp.Paren(this=_to_glot(expr.child)))
    if isinstance(expr, AlwaysTrue):
        return exp.true()
    if isinstance(expr, AlwaysFalse):
        return exp.false()
    if isinstance(expr, Comparison):
        return OP_CLASSES[expr.op](this=_column(expr.ref), expression=_literal(expr.literal.value))
    if isinstance(expr, In):
        node = exp.In(this=_column(expr.ref), expressions=[_literal(lit.value) for lit in expr.literals])
        return exp.Not(this=node) if expr.negated else node
    if isinstance(expr, IsNull):
        return exp.Is(this=_column(expr.ref), expression=exp.Null())
    if isinstance(expr, IsNotNull):
        return exp.Not(this=exp.Is(this=_column(expr.ref), expression=exp.Null()))
    if isinstance(expr, StartsWith):
        escaped = "".join("!" + ch if ch in "%_!" else ch for ch in expr.prefix)
        like = exp.Like(this=_column(expr.ref), expression=exp.Literal.string(escaped + "%"))
        pattern: exp.Expr = exp.Escape(this=like, expression=exp.Literal.string("!")) if escaped != expr.prefix else like
        return exp.Not(this=pattern) if expr.negated else pattern
    if isinstance(expr, Unknown):
        if not expr.sql:
            raise ValueError(f"cannot print an unknown predicate without its SQL ({expr.reason})")
        return sqlglot.parse_one(expr.sql, read=NEUTRAL)
    raise TypeError(f"cannot print {expr!r}")


def _paren(expr: Expr, chained: type[And] | type[Or] | None = None) -> exp.Expr:
    """Parenthesise AND/OR operands, except the left operand of the same
    connector: `a AND b AND c` reads back as the same left-deep chain, and a
    long chain prints without one nesting level per term."""
    node = _to_glot(expr)
    return exp.Paren(this=node) if isinstance(expr, (And, Or)) and type(expr) is not chained else node
