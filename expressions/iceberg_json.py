"""Iceberg's JSON expression form (the REST catalog's `Expression` schema, as
pyiceberg and Iceberg's planners send it) as a HudiExpression.

`{"type": "and", "left": ..., "right": ...}`, `{"type": "not", "child": ...}`,
`{"type": "eq", "term": "city", "value": "sf"}`, `{"type": "in", "term": "id",
"values": [1, 2]}`, `{"type": "is-null", "term": "x"}`, `true`/`false`. A term is
a column name (dotted for a nested field) or `{"type": "reference", "term": ...}`;
a transform term (`bucket[16](id)`) and `is-nan`/`not-nan` keep every file
(an `Unknown` leaf), as an unknown predicate does in SQL. Values are JSON's:
dates and timestamps come as Iceberg's ISO strings, which binding casts to the
column's type as Spark casts a string literal. Where an element is wrong, the
error names its path in the document (`$.left.right.type`)."""

from __future__ import annotations

from typing import Any

from expressions.dialect import Dialect
from expressions.errors import ExpressionError
from expressions.spark_filters import literal_of
from expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Op,
    Ref,
    StartsWith,
    Unknown,
    and_,
    not_,
    or_,
)

ORIGIN = Dialect.SPARK
MAX_DEPTH = 200  # levels of and/or/not a document may nest; far from Python's recursion limit
_COMPARISONS = {"eq": Op.EQ, "not-eq": Op.NE, "lt": Op.LT, "lt-eq": Op.LE, "gt": Op.GT, "gt-eq": Op.GE}
_LEAVES = (*_COMPARISONS, "in", "not-in", "is-null", "not-null", "starts-with", "not-starts-with", "is-nan", "not-nan")


class IcebergExpressionError(ExpressionError):
    """An Iceberg JSON expression that is not well formed; the message names where."""


def parse_iceberg_json(document: Any) -> Expr:
    """The HudiExpression of an Iceberg JSON expression (already decoded from JSON)."""
    return _expr(document, "$", 0)


def _expr(node: Any, where: str, depth: int) -> Expr:
    if depth > MAX_DEPTH:
        raise IcebergExpressionError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, bool):
        return AlwaysTrue() if node else AlwaysFalse()
    if not isinstance(node, dict):
        raise IcebergExpressionError(f"{where}: an expression is an object or true/false, not {type(node).__name__}")
    kind = node.get("type")
    if kind in ("true", "false"):
        return AlwaysTrue() if kind == "true" else AlwaysFalse()
    if kind in ("and", "or"):
        left = _expr(_field(node, "left", where), f"{where}.left", depth + 1)
        right = _expr(_field(node, "right", where), f"{where}.right", depth + 1)
        return and_(left, right) if kind == "and" else or_(left, right)
    if kind == "not":
        return not_(_expr(_field(node, "child", where), f"{where}.child", depth + 1))
    if kind not in _LEAVES:
        raise IcebergExpressionError(f"{where}.type: unknown expression type {kind!r}")
    ref = _term(node, where)
    if ref is None:
        term = node["term"]
        return Unknown(f"transform term {term.get('transform')}({term.get('term')}) is not evaluated on statistics")
    return _leaf(kind, ref, node, where)


def _leaf(kind: str, ref: Ref, node: dict[str, Any], where: str) -> Expr:
    if kind in _COMPARISONS:
        return Comparison(_COMPARISONS[kind], ref, _literal(_field(node, "value", where), f"{where}.value"), ORIGIN)
    if kind in ("in", "not-in"):
        values = _field(node, "values", where)
        if not isinstance(values, list):
            raise IcebergExpressionError(f"{where}.values: a list of values, not {type(values).__name__}")
        return In(ref, tuple(_literal(v, f"{where}.values[{i}]") for i, v in enumerate(values)), kind == "not-in", ORIGIN)
    if kind in ("is-null", "not-null"):
        return IsNull(ref) if kind == "is-null" else IsNotNull(ref)
    if kind in ("starts-with", "not-starts-with"):
        prefix = _field(node, "value", where)
        if not isinstance(prefix, str):
            raise IcebergExpressionError(f"{where}.value: starts-with takes a string")
        return StartsWith(ref, prefix, kind == "not-starts-with")
    return Unknown(f"{kind} is not evaluated on statistics", refs=(ref,))  # is-nan, not-nan


def _field(node: dict[str, Any], name: str, where: str) -> Any:
    if name not in node:
        raise IcebergExpressionError(f"{where}: {node.get('type')!r} needs {name!r}")
    return node[name]


def _term(node: dict[str, Any], where: str) -> Ref | None:
    """The column a leaf reads; None for a transform term (the leaf then keeps every file)."""
    term = _field(node, "term", where)
    if isinstance(term, dict) and term.get("type") == "reference":
        term = term.get("term")
    if isinstance(term, dict) and term.get("type") == "transform":
        return None
    if not isinstance(term, str) or not term:
        raise IcebergExpressionError(f"{where}.term: a column name, not {term!r}")
    return Ref(tuple(part.lower() for part in term.split(".")))


def _literal(value: Any, where: str) -> Literal:
    if isinstance(value, (list, dict)):
        raise IcebergExpressionError(f"{where}: a single value, not {type(value).__name__}")
    return literal_of(value)
