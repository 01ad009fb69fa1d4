"""Spark's pushed filters (`pyspark.sql.datasource`) as a HudiExpression.

Spark pushes a list of filters that all must hold. The classes are matched
by name and fields, so filters built by other engines' Python shims with the
same shape (including And/Or, which PySpark does not push today) work too.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from expressions.dialect import Dialect
from expressions.tree import (
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
    and_,
)

ORIGIN = Dialect.SPARK
_COMPARISONS = {
    "EqualTo": Op.EQ,
    "EqualNullSafe": Op.NULL_SAFE_EQ,
    "GreaterThan": Op.GT,
    "GreaterThanOrEqual": Op.GE,
    "LessThan": Op.LT,
    "LessThanOrEqual": Op.LE,
}


def literal_of(value: Any) -> Literal:
    if value is None:
        return Literal(None, "null")
    if isinstance(value, bool):
        return Literal(value, "boolean")
    if isinstance(value, int):
        return Literal(value, "integer")
    if isinstance(value, float):
        return Literal(value, "float")
    if isinstance(value, Decimal):
        return Literal(value, "decimal")
    if isinstance(value, str):
        return Literal(value, "string")
    if isinstance(value, datetime):
        return Literal(value, "timestamp")
    if isinstance(value, date):
        return Literal(value, "date")
    if isinstance(value, (bytes, bytearray)):
        return Literal(bytes(value), "binary")
    raise TypeError(f"no literal for a pushed value of type {type(value).__name__}")


def _ref(attribute: Any) -> Ref:
    path = (attribute,) if isinstance(attribute, str) else tuple(attribute)
    return Ref(tuple(p.lower() for p in path))


def from_spark_filter(f: Any) -> Expr:
    kind = type(f).__name__
    if kind in _COMPARISONS:
        return Comparison(_COMPARISONS[kind], _ref(f.attribute), literal_of(f.value), ORIGIN)
    if kind == "In":
        return In(_ref(f.attribute), tuple(literal_of(v) for v in f.value), False, ORIGIN)
    if kind == "IsNull":
        return IsNull(_ref(f.attribute))
    if kind == "IsNotNull":
        return IsNotNull(_ref(f.attribute))
    if kind == "Not":
        return Not(from_spark_filter(f.child))
    if kind == "And":
        return And(from_spark_filter(f.left), from_spark_filter(f.right))
    if kind == "Or":
        return Or(from_spark_filter(f.left), from_spark_filter(f.right))
    if kind == "StringStartsWith":
        return StartsWith(_ref(f.attribute), f.value)
    if kind in ("StringEndsWith", "StringContains"):
        return Unknown(f"{kind} does not prune with min/max statistics", refs=(_ref(f.attribute),))
    return Unknown(f"unsupported Spark filter {kind}")


def from_spark_filters(filters: Iterable[Any]) -> Expr:
    """The conjunction of Spark's pushed filters (TRUE for none)."""
    result: Expr = AlwaysTrue()
    for f in filters:
        result = and_(result, from_spark_filter(f))
    return result
